"""Capacity under SLOs: the rate search's walk and answer, and the early stop of one point
(clearly over, clearly under, over-saturated), on an oracle and on the fault server."""

import numpy as np
import pytest
from fault_server import FaultServer

from llmbench.loadgen.capacity import PointWatch, RateSearch
from llmbench.loadgen.client import RequestSpec, encode_request
from llmbench.loadgen.http import Endpoint, Response
from llmbench.loadgen.run import run_load, run_sync
from llmbench.loadgen.schedule import Schedule


def walk(search, capacity):
    while (r := search.next_rate()) is not None:
        search.add(r, r <= capacity, None, None)
    return search.result()


def test_search_doubles_then_bisects_to_the_tolerance():
    res = walk(RateSearch(start_rate=1.0, tolerance=0.1), capacity=7.3)
    rates = [w["rate"] for w in res["walked"]]
    assert rates[:4] == [1, 2, 4, 8]
    assert res["converged"] and res["low_req_s"] <= 7.3 < res["high_req_s"]
    assert res["high_req_s"] / res["low_req_s"] <= 1.1 and res["max_rate_req_s"] == res["low_req_s"]
    assert len(rates) <= 10


def test_search_halves_from_above_and_says_when_nothing_meets():
    res = walk(RateSearch(start_rate=16.0, tolerance=0.2), capacity=3.0)
    assert [w["rate"] for w in res["walked"]][:4] == [16, 8, 4, 2]
    assert res["low_req_s"] <= 3.0 < res["high_req_s"]
    none = walk(RateSearch(start_rate=1.0, max_points=4), capacity=0.0)
    assert none["max_rate_req_s"] is None and none["reason"] == "no rate tried met the SLO"
    assert len(none["walked"]) == 4


def resp(t_first, t_last, status=200, error=None):
    r = Response(status=status, error=error, complete=error is None)
    r.pieces = [(t_first, b"x"), (t_last, b"y")]
    return r


def test_watch_stops_clearly_over_and_clearly_under_on_its_steady_window():
    w = PointWatch(20, {"ttft_s": 0.1}, 0.9)   # window: arrivals 4..17 (14), 1 miss allowed
    assert (w.first, w.end, w.allowed_misses, w.needed_hits) == (4, 18, 1, 13)
    w.on_send(0.0)
    for i in (0, 1, 2, 3, 18, 19):              # warm-up and drain misses do not count
        w.on_done(resp(0.5, 0.6), 0.0, i)
    w.on_done(resp(0.5, 0.6), 0.0, 4)
    assert w.stop_reason is None
    w.on_done(resp(0.01, 0.02, error="timeout"), 0.0, 5)
    assert w.stop_reason == "over"
    w = PointWatch(20, {"ttft_s": 0.1, "e2e_s": 1}, 0.9)
    for i in range(4, 16):
        w.on_done(resp(0.01, 0.05), 0.0, i)               # ended within both: surely met
    assert w.stop_reason is None                           # 12 of the 13 needed
    w.on_done(resp(0.01, 0.05), 0.0, 16)
    assert w.stop_reason == "under"
    w = PointWatch(20, {"tpot_s": 0.1}, 0.9)              # TPOT unknown until parsed: never "under"
    for i in range(20):
        w.on_done(resp(0.01, 0.05), 0.0, i)
    assert w.stop_reason is None


def replay(w, arrivals, departures, lag=lambda i: 0.0, ttft=0.037):
    """Drive a watch with a known stream: request i scheduled at arrivals[i], sent lag(i) late,
    first byte `ttft` later (or at its end, if sooner), done at departures[i]. Returns the time
    of the stop."""
    events = sorted([(a, 0, i) for i, a in enumerate(arrivals)] +
                    [(d, 1, i) for i, d in enumerate(departures)])
    for t, kind, i in events:
        if kind == 0:
            w.on_send(t, t + lag(i))
        else:
            w.on_done(resp(min(arrivals[i] + ttft, t), t), arrivals[i], i)
        if w.stop_reason:
            return t
    return None


def poisson(rate, n, seed):
    return np.cumsum(np.random.default_rng(seed).exponential(1 / rate, n)).tolist()


def old_rule_fires(arrivals, departures):
    """The stop rule of the committed H200 search, recomputed here: from the first answer on,
    in flight >= 16 and >= 1.5 x its value at the midpoint, >= 2 s after that answer."""
    t_c = min(departures)
    for k, t in enumerate(arrivals):
        n_now = sum(1 for a in arrivals[:k + 1]) - sum(1 for d in departures if d <= t)
        if t - t_c >= 2 and n_now >= 16:
            mid = (t_c + t) / 2
            j = max(i for i, a in enumerate(arrivals) if a <= mid) if arrivals[0] <= mid else 0
            n_mid = j + 1 - sum(1 for d in departures if d <= arrivals[j])
            if n_now >= 1.5 * n_mid:
                return True
    return False


def test_poisson_bursts_at_a_stable_server_are_not_saturation():
    # The H200 record's point: 12.34 req/s, every request 0.8 s, no queue (M/D/inf): in flight
    # is Poisson with mean ~9.9. The old rule stopped such points; the new one must not.
    fired_before = 0
    for seed in range(40):
        arr = poisson(12.34, 200, seed)
        dep = [a + 0.8 for a in arr]
        w = PointWatch(200, {"ttft_s": 0.25, "tpot_s": 0.03}, 0.9)
        assert replay(w, arr, dep) is None, (seed, w.evidence)
        fired_before += old_rule_fires(arr, dep)
    assert fired_before >= 2          # the stream does hold the bursts that fooled the old rule


def test_a_server_that_completes_half_the_offered_rate_is_saturated_on_the_server_side():
    # 20 req/s offered, one slot of 0.1 s (10 req/s): in flight grows ~10 per second
    arr = poisson(20.0, 400, 1)
    dep, free = [], 0.0
    for a in arr:
        free = max(a, free) + 0.1
        dep.append(free)
    w = PointWatch(400, {"ttft_s": 100}, 0.9)
    t_stop = replay(w, arr, dep)
    assert w.stop_reason == "saturated" and w.side == "server" and t_stop < 8
    e = w.evidence
    assert e["offered_req_s"] == pytest.approx(20, rel=0.35)
    assert e["achieved_req_s"] == pytest.approx(10, rel=0.2)
    assert e["in_flight_growth"] > e["growth_bound"]
    assert w.verdict() is False and w.judged and "the server is saturated" in w.describe()


def test_a_client_sending_behind_its_schedule_is_saturated_on_the_client_side():
    arr = poisson(10.0, 100, 2)
    dep = [a + 0.2 for a in arr]
    w = PointWatch(100, {"ttft_s": 1}, 0.9)
    replay(w, arr, dep, lag=lambda i: 0.2 if i >= 30 else 0.0)   # the loop falls 200 ms behind
    assert w.stop_reason == "saturated" and w.side == "client"
    e = w.evidence
    assert e["sends_late_in_a_row"] >= 8 and e["late_over_s"] >= 1.0 and w.verdict() is None
    assert not w.judged and "the client is saturated" in w.describe()
    w = PointWatch(100, {"ttft_s": 1, "tpot_s": 1}, 0.9)          # one 0.5 s stall: not saturation
    assert replay(w, arr, dep, lag=lambda i: 0.3 if 30 <= i < 38 else 0.0) is None
    w = PointWatch(100, {"ttft_s": 1, "tpot_s": 1}, 0.9)          # 20 ms late: a busy loop, not behind
    assert replay(w, arr, dep, lag=lambda i: 0.02) is None


def test_cancelled_requests_are_misses_only_when_already_late():
    w = PointWatch(10, {"ttft_s": 0.25, "e2e_s": 2.0}, 0.9)
    early, late_first, streaming, old = Response(), Response(), Response(), Response()
    late_first.pieces = [(0.3, b"x")]              # first byte 0.3 s after its schedule: late
    streaming.pieces = [(0.1, b"x")]               # first byte in time, still streaming
    old.pieces = [(0.05, b"x")]                    # in time, but 2.5 s since its schedule
    w.live = {0: (0.0, [late_first]), 1: (0.0, [streaming]), 2: (0.9, [early]),
              3: (0.5, []), 4: (-1.5, [old])}
    w.judge_cancelled(1.0)
    # 3: no first byte 0.5 s after its schedule (> 0.25): late; 2: 0.1 s, no byte yet: unknown
    assert (w.cancelled, w.cancelled_late, w.cancelled_unknown) == (5, 3, 2)


def test_a_point_clearly_over_stops_early_and_cancels_what_is_in_flight():
    with FaultServer(["ok"], ttft_s=0.3) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, RequestSpec("p", 1, 2), "m", "completions")]
        # steady window: arrivals 8..35 (28), 2 misses allowed
        w = PointWatch(40, {"ttft_s": 0.05}, 0.9)
        res = run_sync(run_load(ep, reqs, Schedule(rate=20, num_prompts=40), watch=w))
    assert w.stop_reason == "over"
    assert w.misses == 3 and len(res.sent) >= 11 and w.cancelled > 0
    assert len(res.sent) + w.cancelled < 40
    # what was sent either answered or was cancelled, nothing twice
    assert len(res.sent) + w.cancelled == len(w._t)
    assert res.t_end - res.t_start < 1.5                   # not the 2 s the whole point takes
