"""Prompts of exactly `input_len` tokens, different for every request and repeat, so that no
prefix cache helps. Real models read windows of the bundled English text in their own
tokenizer; random-weight (synthetic) models get random ids (content cannot matter there)."""

from __future__ import annotations

import random

from llmbench.backends.base import Backend
from llmbench.data import bundled_text


def make_prompts(backend: Backend, batch: int, input_len: int, seed: int, rep: int) -> list[list[int]]:
    rng = random.Random(f"{seed}/{rep}/{batch}/{input_len}")
    if backend.model.synthetic_weights:
        lo, hi = 100, max(101, backend.vocab_size - 100)
        prompts = [[rng.randrange(lo, hi) for _ in range(input_len)] for _ in range(batch)]
    else:
        corpus = _corpus(backend)
        n = len(corpus)
        starts = rng.sample(range(n), k=min(batch, n)) + [rng.randrange(n) for _ in range(batch - n)]
        prompts = [[corpus[(s + i) % n] for i in range(input_len)] for s in starts]
    seen: set[tuple[int, ...]] = set()
    for p in prompts:  # a tiny corpus could repeat a window: make each prompt unique
        while tuple(p) in seen:
            p[0] = rng.randrange(100, max(101, backend.vocab_size - 100))
        seen.add(tuple(p))
    assert all(len(p) == input_len for p in prompts)
    return prompts


def _corpus(backend: Backend) -> list[int]:
    cached = getattr(backend, "_llmbench_corpus", None)
    if cached is None:
        cached = backend.tokenize(bundled_text())
        backend._llmbench_corpus = cached
    return cached
