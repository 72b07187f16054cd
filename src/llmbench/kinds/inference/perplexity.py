"""Perplexity of a text, scored by the backend with the sliding windows of
backends/windows.py (every token after the first scored exactly once):
perplexity = exp(sum NLL / scored tokens), natural log.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from llmbench.backends.base import Backend
from llmbench.errors import SpecError
from llmbench.measure.power import EnergyMeter
from llmbench.measure.stats import summarize
from llmbench.kinds.inference.spec import Point
from llmbench.data import bundled_text


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
    return metrics, [f"text of {len(tokens)} tokens; windows of {cfg.context_len}, stride "
                     f"{cfg.stride}; computed once (no repeats, no warm-up)"]
