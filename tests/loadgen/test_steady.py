"""The steady-state verdict of one open-loop point, on request streams whose answer is known:
the window's indices, the Wilson interval by its formula, Little's law on a deterministic
queue, a queue that grows, warm-up and drain left out, correlated requests flagged."""
import math

import pytest

from llmbench.loadgen.steady import (Judged, batch_stderr, in_flight, judge, requests_for,
                                     sampling_error, window)

Z95 = 1.959963984540054


def wilson(k, n, z=Z95):
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


def test_the_window_leaves_out_the_first_fifth_and_the_last_tenth():
    assert window(100) == (20, 90)
    assert window(1236) == (247, 1113)


def test_a_search_point_is_sized_for_a_wilson_half_width_of_two_points():
    n = requests_for(0.9)
    first, end = window(n)
    lo, hi = wilson(round(0.9 * (end - first)), end - first)
    assert (hi - lo) / 2 == pytest.approx(0.02, abs=0.0005)
    assert requests_for(0.999) == math.ceil(100 / 0.7)       # at least 100 in the window


def test_the_sampling_error_is_the_binomial_one_and_wilsons_interval():
    e = sampling_error(83, 100)
    assert e["stderr"] == pytest.approx(math.sqrt(0.83 * 0.17 / 100))
    assert e["wilson"] == pytest.approx(list(wilson(83, 100)), abs=1e-12)


def test_in_flight_of_a_deterministic_stream_is_littles_law():
    # an arrival every 0.1 s, each in flight 0.5 s: 5 in flight at all times
    spans = [(0.1 * i, 0.1 * i + 0.5) for i in range(200)]
    f = in_flight(spans, 2.0, 15.0)
    assert f["mean"] == pytest.approx(5.0, rel=1e-6)
    assert abs(f["growth"]) < 1 and not f["growing"]


def one_slot(rate, hold, n, slo_s):
    """Requests at a fixed `rate` on one FIFO slot held `hold` s: (index, sched, end, met)."""
    out, free = [], 0.0
    for i in range(n):
        t = i / rate
        free = max(t, free) + hold
        out.append(Judged(i, t, free, free - t <= slo_s))
    return out


def test_a_stable_queue_meets_and_its_in_flight_matches_littles_law():
    v = judge(one_slot(4.0, 0.2, 400, 1.0), 400, 0.9)   # utilisation 0.8, no wait
    assert v["meets"] and not v["growing"] and v["settled"]
    assert v["fraction"] == 1.0 and v["judged"] == 280
    assert v["in_flight_mean"] == pytest.approx(0.8, rel=0.02)
    assert v["littles_law_ratio"] == pytest.approx(1.0, rel=0.02)


def test_a_queue_that_grows_misses_whatever_fraction_met():
    # 10 req/s into 5 req/s: in flight grows 5 a second; an SLO loose enough that all "meet"
    v = judge(one_slot(10.0, 0.2, 400, 1e9), 400, 0.9)
    assert v["fraction"] == 1.0
    assert v["growing"] and v["in_flight_growth"] > v["growth_bound"]
    assert v["in_flight_growth"] == pytest.approx(5 * 28, rel=0.05)    # 28 s of window x 5/s
    assert v["meets"] is False and v["settled"]
    assert any("past capacity" in f for f in v["flags"])


def test_warm_up_and_drain_are_left_out():
    reqs = [Judged(i, 0.1 * i, 0.1 * i + 0.05, 20 <= i < 90) for i in range(100)]
    v = judge(reqs, 100, 0.9)
    assert v["window_requests"] == [20, 90] and v["met"] == 70 and v["fraction"] == 1.0
    assert judge(reqs, 100, 0.9)["meets"]
    # the whole point's fraction (0.7) would have missed


def test_a_target_inside_the_interval_is_within_sampling_error():
    reqs = [Judged(i, 0.1 * i, 0.1 * i + 0.05, i % 10 != 0) for i in range(100)]   # 90% meet
    v = judge(reqs, 100, 0.9)
    assert v["fraction"] == pytest.approx(0.9) and v["meets"] and not v["settled"]
    assert any("within sampling error" in f for f in v["flags"])


def test_correlated_requests_are_flagged():
    met = [i < 500 for i in range(1000)]          # half, in one run: batches of 0 and 1
    assert batch_stderr(met) == pytest.approx(math.sqrt(0.25 * 10 / 9) / math.sqrt(10))
    reqs = [Judged(i, 0.01 * i, 0.01 * i + 0.005, 250 <= i < 650) for i in range(1000)]
    v = judge(reqs, 1000, 0.5)
    assert v["batch_stderr"] > 2 * v["stderr"]
    assert any("correlated" in f for f in v["flags"])
