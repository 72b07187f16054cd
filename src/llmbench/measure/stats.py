"""Distribution statistics for every metric: percentiles, spread and a bootstrap CI of the mean."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llmbench.store.record import MetricStats

MAX_SAMPLES_KEPT = 10_000
_BOOTSTRAP_RESAMPLES = 2000


def bootstrap_ci(values: np.ndarray, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean. Needs n >= 2."""
    rng = np.random.default_rng(seed)
    n = len(values)
    # Resample in chunks so 100k-sample metrics (pooled ITL) stay cheap in memory.
    means = np.empty(_BOOTSTRAP_RESAMPLES)
    chunk = max(1, min(_BOOTSTRAP_RESAMPLES, 2_000_000 // n))
    for i in range(0, _BOOTSTRAP_RESAMPLES, chunk):
        m = min(chunk, _BOOTSTRAP_RESAMPLES - i)
        idx = rng.integers(0, n, size=(m, n))
        means[i:i + m] = values[idx].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi)


def summarize(values: Sequence[float], unit: str, keep_samples: bool = True) -> MetricStats:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    n = int(arr.size)
    if n == 0:
        return MetricStats(unit=unit, n=0)
    p50, p90, p95, p99 = (float(x) for x in np.percentile(arr, [50, 90, 95, 99]))
    lo = hi = None
    if n >= 2:
        lo, hi = bootstrap_ci(arr)
    return MetricStats(
        unit=unit, n=n, mean=float(arr.mean()), median=p50, p50=p50, p90=p90, p95=p95, p99=p99,
        min=float(arr.min()), max=float(arr.max()),
        std=float(arr.std(ddof=1)) if n >= 2 else 0.0,
        ci95_low=lo, ci95_high=hi,
        samples=[float(x) for x in arr[:MAX_SAMPLES_KEPT]] if keep_samples else None,
    )
