"""A real model's GGUF re-written in another weight type (f16, q8_0, q4_0) by llama.cpp's own
quantiser (gguf_synth.quantize, requantising allowed: the shipped SmolLM2 is Q4_1, so every type
made from it holds the Q4_1 weights de-quantised, then re-rounded), cached beside the other
prepared models. llama.cpp's rules decide each tensor's type: norms stay f32, and token_embd
falls back to q8_0 where its rows of 576 are not a multiple of a k-quant's block of 256."""

from __future__ import annotations

from pathlib import Path

from llmbench.cache import cache_dir
from llmbench.errors import ModelError
from llmbench.models.gguf_synth import GGUF_TYPES, _atomic_file, quantize


def quantised_gguf(src: Path, gguf_type: str) -> Path:
    """`src` in `gguf_type`, made once (written aside, then renamed) and reused."""
    if gguf_type not in GGUF_TYPES:
        raise ModelError([("gguf_type", f"{gguf_type!r} is not one of {', '.join(GGUF_TYPES)}")])
    stat = src.stat()
    # size and mtime in the name: a changed source file never reuses a stale copy
    target = cache_dir() / "models" / f"{src.stem}-{stat.st_size}-{int(stat.st_mtime)}.{gguf_type}.gguf"
    if not target.is_file():
        _atomic_file(target, stat.st_size * 3, lambda tmp: quantize(src, tmp, gguf_type))
    return target
