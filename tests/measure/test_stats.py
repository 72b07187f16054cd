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


def test_ci_of_the_mean_at_two_and_three_repeats_is_students():
    import math

    # t quantiles in closed form: df 1 is Cauchy, tan(pi (p - 1/2)); df 2 is (2p-1)/sqrt(2p(1-p))
    t1 = math.tan(math.pi * 0.475)                       # 12.706
    s = summarize([1.0, 3.0], "s")                       # mean 2, sd sqrt(2), se 1
    assert (s.ci95_low, s.ci95_high) == (pytest.approx(2 - t1), pytest.approx(2 + t1))
    t2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)             # 4.303
    s = summarize([9.0, 10.0, 11.0], "s")                # mean 10, sd 1, se 1/sqrt(3)
    assert (s.ci95_low, s.ci95_high) == (pytest.approx(10 - t2 / math.sqrt(3)),
                                         pytest.approx(10 + t2 / math.sqrt(3)))
    s = summarize([4.0, 4.0], "s")
    assert s.ci95_low == s.ci95_high == 4.0


def test_ci_covers_the_true_mean_about_95_percent_at_two_repeats():
    # a percentile bootstrap gives [min, max] at n = 2: it covers about half the time
    rng = np.random.default_rng(7)
    hits = sum(s.ci95_low <= 0.0 <= s.ci95_high
               for s in (summarize(rng.normal(0.0, 1.0, size=2), "s", keep_samples=False)
                         for _ in range(400)))
    assert 0.92 * 400 <= hits <= 0.98 * 400, hits


def test_t_critical_is_scipys_and_asked_of_scipy_once_per_dof(monkeypatch):
    import math

    from scipy import stats as scipy_stats

    from llmbench.measure import stats

    stats.t_critical.cache_clear()
    calls = []
    real = scipy_stats.t.ppf
    monkeypatch.setattr(scipy_stats.t, "ppf", lambda q, dof: calls.append(dof) or real(q, dof))
    for _ in range(3):
        summarize([1.0, 3.0], "s")
        summarize([1.0, 2.0, 4.0], "s")
    assert calls == [1, 2]                                    # cached: once per dof
    assert stats.t_critical(1) == pytest.approx(math.tan(math.pi * 0.475))  # df 1: Cauchy
    p = 0.975
    assert stats.t_critical(2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)))
    stats.t_critical.cache_clear()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 63, 64, 101, 1000])
def test_percentiles_are_numpys_linear_ones(n):
    from llmbench.measure.stats import percentiles

    rng = np.random.default_rng(n)
    for x in (rng.random(n), rng.lognormal(0, 2, n), np.round(rng.random(n) * 5)):
        qs = (0, 1, 50, 90, 95, 99, 99.9, 100)
        assert percentiles(x, qs) == list(np.percentile(x, qs))  # exactly numpy's
