"""Capacity under SLOs: the rate search's walk and answer, and the early stop of one point
(clearly over, clearly under, over-saturated), on an oracle and on the fault server."""

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


def test_watch_stops_clearly_over_and_clearly_under():
    w = PointWatch(10, {"ttft_s": 0.1}, 0.9)             # 1 miss of 10 allowed
    w.on_send(0.0)
    w.on_done(resp(0.5, 0.6), 0.0)
    assert w.stop_reason is None
    w.on_done(resp(0.01, 0.02, error="timeout"), 0.0)
    assert w.stop_reason == "over"
    w = PointWatch(10, {"ttft_s": 0.1, "e2e_s": 1}, 0.9)
    for _ in range(9):
        w.on_done(resp(0.01, 0.05), 0.0)                  # ended within both: surely met
    assert w.stop_reason == "under"
    w = PointWatch(10, {"tpot_s": 0.1}, 0.9)              # TPOT unknown until parsed: never "under"
    for _ in range(10):
        w.on_done(resp(0.01, 0.05), 0.0)
    assert w.stop_reason is None


def test_watch_sees_a_queue_that_grows_without_bound():
    w = PointWatch(1000, {"ttft_s": 1}, 0.9)
    for i in range(60):                                   # 10 req/s in, 2 req/s out
        w.on_send(i * 0.1)
        if i % 5 == 4:
            w.on_done(resp(i * 0.1, i * 0.1), 0.0)
        if w.stop_reason:
            break
    assert w.stop_reason == "saturated" and 2.3 <= i * 0.1 < 3.5
    w = PointWatch(1000, {"ttft_s": 1}, 0.9)
    for i in range(100):                                  # steady: 20 in flight, in and out
        w.on_send(i * 0.1)
        if i >= 20:
            w.on_done(resp(i * 0.1 - 1.9, i * 0.1), i * 0.1 - 2)
    assert w.stop_reason is None


def test_a_point_clearly_over_stops_early_and_cancels_what_is_in_flight():
    with FaultServer(["ok"], ttft_s=0.3) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, RequestSpec("p", 1, 2), "m", "completions")]
        w = PointWatch(40, {"ttft_s": 0.05}, 0.9)          # 4 misses allowed
        res = run_sync(run_load(ep, reqs, Schedule(rate=20, num_prompts=40), watch=w))
    assert w.stop_reason == "over"
    assert w.misses == 5 and len(res.sent) >= 5 and w.cancelled > 0
    assert len(res.sent) + w.cancelled < 40
    # what was sent either answered or was cancelled, nothing twice
    assert len(res.sent) + w.cancelled == len(w._t)
    assert res.t_end - res.t_start < 1.5                   # not the 2 s the whole point takes
