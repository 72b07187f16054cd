from llmbench.models.catalog import CATALOG, ModelArch, get_arch
from llmbench.models.sources import ModelRef, model_path, resolve

__all__ = ["CATALOG", "ModelArch", "ModelRef", "get_arch", "model_path", "resolve"]
