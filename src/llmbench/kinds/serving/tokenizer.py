"""The tokenizer a benchmark counts tokens with: by catalog model name, HF directory,
tokenizer.json or a model file that carries one (models/packed_tokenizer.py);
transformers/tokenizers imported only when one is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmbench.errors import SpecError
from llmbench.models.packed_tokenizer import TOKENIZER_SOURCES, bundled_tokenizer, packed_tokenizer


class Tokenizer:
    """Encode/decode without special tokens (prompts are measured as the server sees the text)."""

    def __init__(self, tok: Any, source: str):
        self._tok, self.source = tok, source
        self._fast = hasattr(tok, "encode_batch")   # a `tokenizers.Tokenizer`

    def encode(self, text: str) -> list[int]:
        if self._fast:
            return self._tok.encode(text, add_special_tokens=False).ids
        return self._tok.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=False) if not self._fast \
            else self._tok.decode(ids, skip_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode(text))

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size() if self._fast else len(self._tok)


def load_tokenizer(name: str) -> Tokenizer:
    """A tokenizer by catalog model name, HF directory, tokenizer.json or model file. The
    bundled model's is extracted from its model file once and cached as tokenizer.json."""
    from llmbench.cache import cache_dir

    p = Path(name).expanduser()
    if p.is_file() and p.name.endswith(".json"):
        return _fast(p)
    if p.is_dir():
        if (p / "tokenizer.json").exists():
            return _fast(p / "tokenizer.json")
        from transformers import AutoTokenizer

        return Tokenizer(AutoTokenizer.from_pretrained(p), str(p))
    if (packed := packed_tokenizer(p)) is not None:
        return Tokenizer(packed, str(p))
    from llmbench.models.sources import resolve

    ref = resolve(name)   # raises the catalog's "unknown model" error
    cached = cache_dir() / "tokenizers" / ref.name
    if (cached / "tokenizer.json").exists():
        return _fast(cached / "tokenizer.json")
    hf = cache_dir() / "models" / f"{ref.name}-hf"
    if (hf / "tokenizer.json").exists():
        return _fast(hf / "tokenizer.json")
    if ref.source != "bundled":
        raise SpecError([("--tokenizer", f"no tokenizer for {name!r} ({ref.source}); give "
                          f"--tokenizer PATH ({TOKENIZER_SOURCES})")])
    tok = bundled_tokenizer(name)
    cached.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(cached)
    return _fast(cached / "tokenizer.json")


def _fast(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer as TK

    return Tokenizer(TK.from_file(str(path)), str(path))
