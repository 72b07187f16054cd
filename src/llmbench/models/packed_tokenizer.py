"""The tokenizer a model file carries inside it (a GGUF's vocabulary): what a benchmark counts
tokens with when no tokenizer.json is at hand (transformers imported only when one is read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Where `--tokenizer` may point, in words.
TOKENIZER_SOURCES = "an HF directory, tokenizer.json or .gguf file"


def packed_tokenizer(path: Path) -> Any | None:
    """transformers' tokenizer read from the model file `path`; None when it is no such file."""
    if path.suffix != ".gguf" or not path.is_file():
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


def bundled_tokenizer(name: str) -> Any:
    """A bundled model's tokenizer, read from its model file."""
    from llmbench.models.sources import model_path

    return packed_tokenizer(model_path(name, "gguf"))
