"""The adapters' cost: a lora point's requests measured again against the base model alone
(the same prompts, lengths and schedule, sent right after the adapters' pass), and the ratios
adapters / base with a 95% interval.

Ratios (above 1: the adapters are slower, except throughput, where below 1 is slower):
- ttft_p50: median TTFT over median TTFT;
- tpot_mean: mean TPOT over mean TPOT;
- output_tok_s: output tokens per second of a request in flight, sum(tokens) / sum(e2e) of
  each side. By Little's law it is the point's output throughput divided by its mean number of
  requests in flight, so at the same concurrency (a closed loop) it is the throughputs' ratio,
  and unlike the point's one throughput figure it has a sampling interval. The two passes'
  plain throughputs (tokens over the point's span) are kept beside it.
Intervals: percentile bootstrap, each side's requests resampled on their own (the passes are
independent samples), N_RESAMPLES draws from a fixed seed.
"""

from __future__ import annotations

import numpy as np

from llmbench.loadgen.client import Outcome

N_RESAMPLES = 4000
LEVEL = 0.95


def _side(outcomes: list[Outcome]) -> dict[str, np.ndarray]:
    ok = [o.timeline for o in outcomes if o.ok and o.timeline.output_tokens]
    return {"ttft": np.array([t.ttft_s() for t in ok]),
            "tpot": np.array([t.tpot_s() for t in ok if t.tpot_s() is not None]),
            "tokens": np.array([t.output_tokens for t in ok], dtype=float),
            "e2e": np.array([t.e2e_s() for t in ok])}


def _rate(tokens: np.ndarray, e2e: np.ndarray, axis=-1):
    return tokens.sum(axis=axis) / e2e.sum(axis=axis)


STATISTICS = {   # name -> (the sample(s) it reads, the statistic along the last axis)
    "ttft_p50": (("ttft",), lambda x, axis=-1: np.median(x, axis=axis)),
    "tpot_mean": (("tpot",), lambda x, axis=-1: np.mean(x, axis=axis)),
    "output_tok_s": (("tokens", "e2e"), _rate),
}


def ratio_interval(num: tuple[np.ndarray, ...], den: tuple[np.ndarray, ...], stat, seed: int,
                   n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> dict:
    """stat(num) / stat(den) and its percentile-bootstrap interval: each side's rows
    (requests; the arrays of one side resampled together) drawn with replacement."""
    rng = np.random.default_rng(seed)
    value = float(stat(*num) / stat(*den))
    i = rng.integers(0, len(num[0]), (n_resamples, len(num[0])))
    j = rng.integers(0, len(den[0]), (n_resamples, len(den[0])))
    draws = stat(*(a[i] for a in num)) / stat(*(b[j] for b in den))
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return {"value": value, "ci95": [float(lo), float(hi)]}


def lora_cost(adapters: list[Outcome], base: list[Outcome], adapters_tok_s: float | None,
              base_tok_s: float | None, seed: int = 0) -> dict:
    """The serving["lora_cost"] of a point: each side's figures and the ratios with intervals
    (a ratio needs at least 2 answered requests on each side; else it is None with the reason)."""
    a, b = _side(adapters), _side(base)
    out: dict = {"reference": "the same requests to the base model, after the adapters' pass",
                 "interval": f"percentile bootstrap, {N_RESAMPLES} resamples of each side's "
                             f"requests, {LEVEL:.0%}",
                 "adapters": _figures(a, adapters_tok_s), "base": _figures(b, base_tok_s),
                 "ratios": {}}
    if adapters_tok_s and base_tok_s:
        out["output_throughput_ratio"] = adapters_tok_s / base_tok_s
    for k, (name, (keys, stat)) in enumerate(STATISTICS.items()):
        if min(len(a[keys[0]]), len(b[keys[0]])) < 2:
            out["ratios"][name] = None
            out.setdefault("why_none", {})[name] = "fewer than 2 answered requests on a side"
            continue
        out["ratios"][name] = ratio_interval(tuple(a[x] for x in keys), tuple(b[x] for x in keys),
                                             stat, seed + k)
    return out


def _figures(side: dict[str, np.ndarray], tok_s: float | None) -> dict:
    n = len(side["ttft"])
    return {"answered": n,
            "ttft_p50_s": float(np.median(side["ttft"])) if n else None,
            "tpot_mean_s": float(np.mean(side["tpot"])) if len(side["tpot"]) else None,
            "output_tok_s_per_request_in_flight": float(_rate(side["tokens"], side["e2e"])) if n else None,
            "output_throughput_tok_s": tok_s}


def describe(cost: dict) -> str:
    """One line for the serve summary: each ratio with its interval."""
    names = {"ttft_p50": "TTFT p50", "tpot_mean": "TPOT mean", "output_tok_s": "out tok/s"}
    parts = []
    for k, label in names.items():
        r = cost["ratios"].get(k)
        parts.append(f"{label} x{r['value']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]" if r
                     else f"{label} -")
    return "adapters / base: " + ", ".join(parts)
