"""Perplexity of a text, with a sliding window (the scheme transformers documents).

The text is tokenized without BOS. The first window is the first `context_len` tokens and
scores every target in it; each later window ends `stride` tokens further and scores only
those `stride` new targets, each conditioned on at least context_len - stride preceding
tokens. So every token after the first is scored exactly once (the first has no predictor).
perplexity = exp(sum NLL / scored tokens), natural log.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

from llmbench.backends.base import Backend
from llmbench.errors import SpecError
from llmbench.measure.power import EnergyMeter
from llmbench.measure.stats import summarize
from llmbench.kinds.inference.spec import Point
from llmbench.data import bundled_text


def windows(n_tokens: int, context_len: int, stride: int) -> Iterator[tuple[int, int, int]]:
    """(begin, end, score_from): run tokens[begin:end], score targets at positions >= score_from."""
    if stride >= context_len:
        raise SpecError([("perplexity.stride", f"{stride} must be below context_len {context_len}: "
                          "each window needs at least one token of context before its targets")])
    end = min(context_len, n_tokens)
    yield 0, end, 1
    while end < n_tokens:
        prev_end, end = end, min(end + stride, n_tokens)
        yield max(0, end - context_len), end, prev_end


def run_perplexity(backend: Backend, point: Point, meter: EnergyMeter):
    cfg = point.perplexity
    if cfg.text is not None:
        try:
            text = Path(cfg.text).read_text(encoding="utf-8")
        except OSError as e:
            raise SpecError([("perplexity.text", f"cannot read {cfg.text}: {e.strerror}")]) from None
    else:
        text = bundled_text()
    tokens = backend.tokenize(text)
    with meter.window() as win:
        t0 = time.perf_counter()
        nll, count = backend.loglikelihood(tokens, cfg.context_len, cfg.stride)
        elapsed = time.perf_counter() - t0
    metrics = {
        "perplexity": summarize([math.exp(nll / count)], "", keep_samples=False),
        "nll_per_token": summarize([nll / count], "nats", keep_samples=False),
        "scored_tokens": summarize([count], "tokens", keep_samples=False),
        "eval_time_s": summarize([elapsed], "s", keep_samples=False),
        "eval_throughput_tok_s": summarize([len(tokens) / elapsed], "tok/s", keep_samples=False),
    }
    if win.energy_j is not None:
        metrics["energy_j"] = summarize([win.energy_j], "J", keep_samples=False)
    return metrics, [f"text of {len(tokens)} tokens; windows of {cfg.context_len}, stride {cfg.stride}"]
