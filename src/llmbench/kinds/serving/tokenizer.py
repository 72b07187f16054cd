"""The tokenizer a benchmark counts tokens with: by catalog model name, HF directory,
tokenizer.json or a model file that carries one (models/packed_tokenizer.py);
transformers/tokenizers imported only when one is loaded."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from llmbench.errors import SpecError
from llmbench.models.packed_tokenizer import TOKENIZER_SOURCES, bundled_tokenizer, packed_tokenizer


class Tokenizer:
    """Encode/decode without special tokens; `count_prompt` counts a prompt as a server does
    (with the special tokens, e.g. BOS, its tokenizer adds to a completion prompt)."""

    def __init__(self, tok: Any, source: str):
        self._tok, self.source = tok, source
        self._fast = hasattr(tok, "encode_batch")   # a `tokenizers.Tokenizer`

    def encode(self, text: str) -> list[int]:
        if self._fast:
            return self._tok.encode(text, add_special_tokens=False).ids
        return self._tok.encode(text, add_special_tokens=False)

    @functools.cached_property
    def added_per_prompt(self) -> int:
        """Tokens the tokenizer adds to every prompt it encodes with special tokens (a BOS: 1)."""
        if self._fast:
            return len(self._tok.encode("", add_special_tokens=True).ids)
        return len(self._tok.encode("", add_special_tokens=True))

    def count_prompt(self, text: str) -> int:
        """The prompt's length as the server counts it (its usage, its /metrics)."""
        return self.count(text) + self.added_per_prompt

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=False) if not self._fast \
            else self._tok.decode(ids, skip_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode(text))

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size() if self._fast else len(self._tok)


def load_tokenizer(name: str) -> Tokenizer:
    """A tokenizer by catalog model name, HF directory, tokenizer.json or model file. A
    directory is loaded as servers load it (transformers' AutoTokenizer: tokenizer_config.json's
    special tokens and BOS apply; tokenizer.json alone would count a synthetic model's "w2345"
    as one token where the server, matching its special token "w2" inside the word, counts
    two: +8.7% on 2026-12-02's H200 prompts). The bundled model's is extracted from its model file
    once and cached as a directory."""
    from llmbench.cache import cache_dir

    p = Path(name).expanduser()
    if p.is_file() and p.name.endswith(".json"):
        return _fast(p)
    if p.is_dir():
        return _served(p)
    if (packed := packed_tokenizer(p)) is not None:
        return Tokenizer(packed, str(p))
    from llmbench.models.sources import resolve

    ref = resolve(name)   # raises the catalog's "unknown model" error
    cached = cache_dir() / "tokenizers" / ref.name
    if (cached / "tokenizer.json").exists():
        return _served(cached)
    hf = cache_dir() / "models" / f"{ref.name}-hf"
    if (hf / "tokenizer.json").exists():
        return _served(hf)
    if ref.source != "bundled":
        raise SpecError([("--tokenizer", f"no tokenizer for {name!r} ({ref.source}); give "
                          f"--tokenizer PATH ({TOKENIZER_SOURCES})")])
    tok = bundled_tokenizer(name)
    cached.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(cached)
    return _served(cached)


def _served(d: Path) -> Tokenizer:
    from transformers import AutoTokenizer

    return Tokenizer(AutoTokenizer.from_pretrained(d), str(d))


def _fast(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer as TK

    return Tokenizer(TK.from_file(str(path)), str(path))
