"""benchmarks/harness_overhead.py's order and statistics against values computed here (scipy
where it has the same statistic)."""

import math
import subprocess
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


def test_a_negative_breakdown_count_is_a_usage_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        harness_overhead.parse_args(["--breakdown", "-3"])
    assert e.value.code == 2 and "--breakdown" in capsys.readouterr().err


def test_sections_give_each_step_its_own_time_on_the_callers_thread_only():
    # A fake clock advanced by hand: outer runs 1 s itself around inner's 2 s; a call from
    # another thread (a reader thread) is never counted there, but apart, in `aside` (its 2 s).
    # Worked out: outer 1 s, inner 2 s; aside: inner 2 s.
    import threading
    import types

    now = [0.0]
    mod = types.SimpleNamespace()

    def inner():
        now[0] += 2.0

    def outer():
        now[0] += 0.5
        mod.inner()
        now[0] += 0.5

    mod.inner, mod.outer = inner, outer
    sec = harness_overhead.Sections(clock=lambda: now[0])
    sec.wrap(mod, "inner")
    sec.wrap(mod, "outer")
    mod.outer()
    th = threading.Thread(target=mod.inner)
    th.start()
    th.join()
    assert sec.totals == {"outer": 1.0, "inner": 2.0} and now[0] == 5.0
    assert sec.aside == {"inner": 2.0}
    assert sec.calls == {"outer": 1, "inner": 1}  # the caller's thread's calls only
    sec.restore()
    assert mod.inner is inner and mod.outer is outer


def test_tree_text_counts_our_processes_by_name():
    from llmbench.measure import contention

    import psutil

    child = subprocess.Popen(["sleep", "30"])
    try:
        out = harness_overhead.tree_text(contention)
        # psutil's count of this process and its descendants (a suite may hold other children)
        ours = 1 + len(psutil.Process().children(recursive=True))
    finally:
        child.kill()
        child.wait()
    assert out.startswith(f"our process tree now: {ours} process(es): ") and "sleep x1" in out


def test_sections_restore_a_class_method_as_it_was():
    class Thing:
        def f(self):
            return 7

    sec = harness_overhead.Sections()
    sec.wrap(Thing, "f")
    assert Thing().f() == 7 and "f" in sec.totals
    sec.restore()
    assert "f" in Thing.__dict__ and Thing.f.__name__ == "f" and Thing().f() == 7


def test_breakdown_text_names_the_rest_that_no_step_holds():
    # 2 points, wholes 0.100 s, windows 0.080 s: bookkeeping 10.00 ms a point; the steps hold
    # 6 + 2 = 8 ms of it over the two points, 4.00 ms a point; 6.00 ms a point in no step
    out = harness_overhead.breakdown_text({"a": 0.006, "b": 0.002}, 2, 0.100, 0.080)
    assert "bookkeeping 10.00 ms" in out
    assert "   3.000  a" in out and "   1.000  b" in out and "   6.000  in no step" in out
    assert "other threads" not in out
    # 5 calls of a over the 2 points: 2.5 a point
    assert "   3.000  a (2.5 calls a point)" in harness_overhead.breakdown_text(
        {"a": 0.006}, 2, 0.1, 0.08, calls={"a": 5})
    # the aside thread's 0.010 s of NVML reads over the 2 points: 5.000 ms a point
    assert "   5.000  read" in harness_overhead.breakdown_text({}, 2, 0.1, 0.08, {"read": 0.010})
