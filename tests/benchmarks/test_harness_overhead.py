"""benchmarks/harness_overhead.py's order and statistics against values computed here (scipy
where it has the same statistic)."""

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import harness_overhead  # noqa: E402


def test_abba_puts_a_direct_run_beside_each_variant_run_and_mirrors_on_flip():
    seen = []

    def variant():
        seen.append("V")
        return (len(seen),)

    def direct():
        seen.append("D")
        return float(len(seen))

    assert harness_overhead.abba(variant, direct, flip=False) == ([(2,), (3,)], [1.0, 4.0])
    assert seen == list("DVVD")
    seen.clear()
    assert harness_overhead.abba(variant, direct, flip=True) == ([(1,), (4,)], [2.0, 3.0])
    assert seen == list("VDDV")


def test_block_ratio_cancels_a_steady_drift():
    # the machine slows by 1% a run (log-linear drift); the variant costs 2% more than direct
    slow = [1.01 ** t for t in range(4)]
    runs, directs = [(0.5 * 1.02 * slow[1], 9.0), (0.5 * 1.02 * slow[2], 9.0)], [0.5 * slow[0], 0.5 * slow[3]]
    assert math.isclose(harness_overhead.block_ratio(runs, directs, 0), math.log(1.02))
    # column 1 (batch_latency_s beside the whole point): 9 s against 0.5 s
    assert math.isclose(harness_overhead.block_ratio(runs, directs, 1),
                        math.log(81 / (0.25 * slow[0] * slow[3])) / 2)


def test_mean_ci_is_scipys_t_interval_on_the_logs():
    logs = [0.01, 0.03, 0.02, 0.00, -0.005, 0.012]
    lo, hi = stats.t.interval(0.95, len(logs) - 1, loc=np.mean(logs), scale=stats.sem(logs))
    gm, glo, ghi = harness_overhead.mean_ci(logs)
    assert math.isclose(gm, math.exp(np.mean(logs)))
    assert math.isclose(glo, math.exp(lo)) and math.isclose(ghi, math.exp(hi))


def test_constant_ratio_has_no_spread():
    logs = [math.log(1.02)] * 5
    for v in (*harness_overhead.mean_ci(logs), *harness_overhead.hodges_lehmann_ci(logs)):
        assert math.isclose(v, 1.02, rel_tol=1e-12)


def test_hodges_lehmann_is_the_median_of_the_pairwise_means():
    logs = [0.0, 0.01, 0.04]  # pairwise means (i <= j): 0, .005, .02, .01, .025, .04
    assert math.isclose(harness_overhead.hodges_lehmann_ci(logs)[0], math.exp(0.015))


def test_hodges_lehmann_interval_ends_where_scipys_signed_rank_test_rejects():
    rng = np.random.default_rng(1)
    logs = rng.normal(math.log(1.01), 0.05, 120)  # known ratio 1.01
    est, lo, hi = harness_overhead.hodges_lehmann_ci(list(logs))
    assert lo < 1.01 < hi and lo < est < hi

    def p(shift):  # the two-sided signed-rank test of "the centre of the logs is `shift`"
        return stats.wilcoxon(logs - shift, method="approx").pvalue

    eps = 1e-9
    assert p(math.log(lo) + eps) > 0.05 > p(math.log(lo) - eps)
    assert p(math.log(hi) - eps) > 0.05 > p(math.log(hi) + eps)


def test_a_burst_moves_the_estimate_by_one_rank_not_by_its_size():
    logs = [0.0, 0.001, -0.001, 0.002, -0.002] * 4 + [0.5]  # one block hit by other work
    est, lo, hi = harness_overhead.hodges_lehmann_ci(logs)
    assert abs(math.log(est)) < 0.001 and hi < math.exp(0.003)
    assert harness_overhead.mean_ci(logs)[0] > math.exp(0.02)  # the mean is pulled by 2.4%


def test_sampler_variant_prices_the_thread_with_a_free_reading_on_the_cpu():
    from llmbench.measure.power import SAMPLED

    m = harness_overhead.sampler_meter("cpu", 0.005)  # no RAPL power reading: the stand-in
    assert m.source.startswith("probe") and m.sampling == "dense"
    with m.window() as w:
        time.sleep(0.05)
    assert m.sampled == {0.005: 1} and w.power_samples_w and set(w.power_samples_w) == {0.0}
    assert w.method == SAMPLED and w.energy_j == 0.0


def test_profile_prints_the_points_bookkeeping_from_their_own_times():
    # Four points of (whole, window) = (0.050, 0.040), (0.070, 0.040) x2, (0.050, 0.040):
    # a point 60.0 ms, its window 40.0 ms, bookkeeping 20.0 ms, worked out by hand.
    times = iter([(0.050, 0.040), (0.070, 0.040), (0.070, 0.040), (0.050, 0.040)])
    out = harness_overhead.profile_points(lambda: next(times), 4)
    assert "profile of 4 whole points" in out
    assert "60.0 ms a point, of it the timed window 40.0 ms, bookkeeping 20.0 ms" in out


def test_a_negative_profile_count_is_a_usage_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        harness_overhead.parse_args(["--profile", "-1"])
    assert e.value.code == 2 and "--profile" in capsys.readouterr().err
