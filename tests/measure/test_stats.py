import numpy as np
import pytest

from llmbench.measure.stats import summarize


def test_summary_fields():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0], "s")
    assert s.n == 5 and s.unit == "s"
    assert s.mean == pytest.approx(22.0)
    assert s.median == s.p50 == pytest.approx(3.0)
    assert s.min == 1.0 and s.max == 100.0
    assert s.p99 == pytest.approx(np.percentile([1, 2, 3, 4, 100], 99))
    assert s.std == pytest.approx(np.std([1, 2, 3, 4, 100], ddof=1))
    assert s.ci95_low <= s.mean <= s.ci95_high


def test_ci_contains_true_mean_usually():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(100):
        x = rng.normal(5.0, 1.0, size=30)
        s = summarize(x, "s", keep_samples=False)
        hits += s.ci95_low <= 5.0 <= s.ci95_high
    assert 85 <= hits <= 100


def test_single_value_and_empty():
    s = summarize([2.5], "s")
    assert s.n == 1 and s.mean == 2.5 and s.ci95_low is None and s.std == 0.0
    assert summarize([], "s").n == 0
