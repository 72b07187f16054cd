"""What the cross-checks (llamacpp_crosscheck.py, vllm_crosscheck.py, vllm_serve_crosscheck.py)
share: one statistic on both sides (the median of per-repeat samples), one direction (a
throughput ratio llmbench / tool: above 1 = llmbench faster; a time is inverted to say the
same), and the A/B order alternating over rounds so that drift on a shared machine hits both.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

DIRECTION = "ratio = llmbench / tool as a throughput: > 1 = llmbench faster"


def speed_ratio(ours: Sequence[float], theirs: Sequence[float], *, time: bool = False) -> float:
    """median(ours) / median(theirs) for throughput samples; median(theirs) / median(ours) for
    time samples (so that > 1 always means llmbench is faster)."""
    o, t = statistics.median(ours), statistics.median(theirs)
    return t / o if time else o / t


def order(round_index: int) -> tuple[str, str]:
    """Who goes first in a round: llmbench in even rounds, the tool in odd ones."""
    return ("llmbench", "tool") if round_index % 2 == 0 else ("tool", "llmbench")


def welch_change(base: Sequence[float], new: Sequence[float], unit: str = "s") -> dict[str, Any]:
    """new against base as `llmbench compare` puts it: the change of the mean in % of base's
    mean, its 95% Welch interval, and whether the interval excludes 0 (analysis/compare.py)."""
    from llmbench.analysis.compare import metric_change
    from llmbench.measure.stats import summarize

    c = metric_change("batch_latency_s", summarize(list(base), unit), summarize(list(new), unit))
    lo, hi = c.pct_ci
    return {"base_mean": c.base_mean, "new_mean": c.new_mean, "pct": c.pct, "ci_pct": [lo, hi],
            "n": [c.n_base, c.n_new], "significant": c.significant}


def describe_change(label: str, ch: dict[str, Any]) -> str:
    lo, hi = ch["ci_pct"]
    verdict = "significant" if ch["significant"] else "no significant change"
    return (f"{label}: {ch['base_mean'] * 1e3:.1f} -> {ch['new_mean'] * 1e3:.1f} ms, {ch['pct']:+.1f}% "
            f"[{lo:+.1f}%, {hi:+.1f}%] (95% Welch, n={ch['n'][0]}/{ch['n'][1]}; {verdict})")


def paired_ratio(ours: Sequence[float], theirs: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """Per-round throughput ratios ours/theirs (rounds paired by adjacency, so drift on the
    machine hits both sides of a round alike), their mean and Student-t interval, and the ratio
    of the pooled medians (speed_ratio)."""
    from scipy import stats

    ratios = [o / t for o, t in zip(ours, theirs)]
    mean = statistics.fmean(ratios)
    if len(ratios) > 1:
        half = stats.t.ppf(0.5 + confidence / 2, len(ratios) - 1) * statistics.stdev(ratios) / math.sqrt(len(ratios))
        ci = [mean - half, mean + half]
    else:
        ci = [None, None]
    return {"ratios": ratios, "mean": mean, "ci95": ci, "median_ratio": speed_ratio(ours, theirs)}
