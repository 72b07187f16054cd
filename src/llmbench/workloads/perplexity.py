"""Perplexity of a text, with a sliding window (the scheme transformers documents).

The text is tokenized without BOS. Windows of `context_len` tokens start every `stride`
tokens; each window scores only the targets not scored by an earlier window, so every token
after the first is scored exactly once, conditioned on up to context_len - 1 preceding tokens
(at least context_len - stride of them after the first window). The first token is never
scored (nothing predicts it). perplexity = exp(sum NLL / scored tokens), natural log.
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
from llmbench.spec import Point
from llmbench.workloads.prompts import bundled_text


def windows(n_tokens: int, context_len: int, stride: int) -> Iterator[tuple[int, int, int]]:
    """(begin, end, score_from): run tokens[begin:end], score targets at positions >= score_from."""
    if stride > context_len:
        raise SpecError([("perplexity.stride", f"{stride} exceeds context_len {context_len}: "
                          "tokens between windows would never be scored")])
    prev_end = 1
    for begin in range(0, n_tokens, stride):
        end = min(begin + context_len, n_tokens)
        if end - begin < 2 or end <= prev_end:
            break
        yield begin, end, max(prev_end, begin + 1)
        prev_end = end
        if end == n_tokens:
            break


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
