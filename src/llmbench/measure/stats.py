"""Distribution statistics for every metric: percentiles, spread and a 95% interval of the mean."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from llmbench.measure.metric_stats import MetricStats

MAX_SAMPLES_KEPT = 10_000


def mean_ci(mean: float, sd: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean (scipy.stats.t, n - 1 degrees of freedom) from the sample
    mean and standard deviation (ddof=1). Needs n >= 2. Benchmarks often have 2-5 repeats,
    where a percentile bootstrap of the mean covers far less than it claims (at n = 2 it is
    [min, max]: about 50%, not 95%); the t-interval is exact for normal samples at any n and,
    by the central limit theorem, right at large n."""
    half = t_critical(n - 1, level) * sd / math.sqrt(n)
    return mean - half, mean + half


@functools.cache
def t_critical(dof: int, level: float = 0.95) -> float:
    """Student's t two-sided critical value. Cached: scipy's ppf costs ~0.1 ms a call and a
    point summarizes ~16 metrics of the same n, all inside its bookkeeping (issue 24)."""
    from scipy.stats import t

    return float(t.ppf(1 - (1 - level) / 2, dof))


def summarize(values: Sequence[float], unit: str, keep_samples: bool = True) -> MetricStats:
    """Every statistic of `values` (None left out). The mean and standard deviation are
    numpy's, each taken once; min and max are the sorted values' ends (a point summarizes ~16
    metrics inside its bookkeeping, issue 24)."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    n = int(arr.size)
    if n == 0:
        return MetricStats(unit=unit, n=0)
    ordered = np.sort(arr).tolist()
    p50, p90, p95, p99 = _percentiles(ordered, (50, 90, 95, 99))
    mean = float(arr.mean())
    std, lo, hi = 0.0, None, None
    if n >= 2:
        std = float(arr.std(ddof=1))
        lo, hi = mean_ci(mean, std, n)
    return MetricStats(
        unit=unit, n=n, mean=mean, median=p50, p50=p50, p90=p90, p95=p95, p99=p99,
        min=float(ordered[0]), max=float(ordered[-1]), std=std, ci95_low=lo, ci95_high=hi,
        samples=arr[:MAX_SAMPLES_KEPT].tolist() if keep_samples else None,
    )


def percentiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    """numpy's default ("linear") percentiles: the value at rank (n - 1) q / 100 of the sorted
    values, interpolated between its neighbours as numpy's _lerp does. np.percentile costs
    ~36 us a call on a handful of values, and a point summarizes ~16 metrics (issue 24)."""
    return _percentiles(np.sort(values).tolist(), qs)


def _percentiles(a: list[float], qs: Sequence[float]) -> list[float]:
    """percentiles() of values already sorted."""
    n = len(a)
    out = []
    for q in qs:
        h = (n - 1) * (q / 100)
        lo = int(h)
        t = h - lo
        if lo + 1 >= n or t == 0:
            out.append(float(a[min(lo, n - 1)]))
            continue
        below, above = a[lo], a[lo + 1]
        diff = above - below  # numpy's _lerp: from the nearer end, for a monotone result
        out.append(float(above - diff * (1 - t) if t >= 0.5 else below + diff * t))
    return out
