"""Schedules as actually driven: concurrency limits, open-loop arrivals, no coordinated omission."""

import asyncio
import math
import time

import pytest
from fault_server import FaultServer

from llmbench.loadgen.client import RequestSpec, encode_request, interpret
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import run_load, run_sync
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.selfcheck import Monitor

SPEC = RequestSpec("hello", 5, 4)


def drive(schedule, n, **server):
    with FaultServer(["ok"], **server) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, SPEC, "m", "completions") for _ in range(n)]
        res = run_sync(run_load(ep, reqs, schedule, timeout_s=10))
    return res, [interpret(x.resp, x.t_sched, SPEC).timeline for x in res.sent]


def max_in_flight(tls):
    ev = sorted([(t.t_send, 1) for t in tls] + [(t.t_last, -1) for t in tls], key=lambda e: (e[0], e[1]))
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def test_closed_loop_keeps_exactly_c_in_flight():
    res, tls = drive(Schedule(concurrency=3, num_prompts=12), 12, ttft_s=0.03, itl_s=0.005)
    assert len(tls) == 12 and all(not t.error for t in tls)
    assert max_in_flight(tls) == 3
    # Closed loop: a request is scheduled when a slot frees, so it is sent at once.
    assert max(t.send_lag_s() for t in tls) < 0.05


def test_open_loop_cap_wait_counts_in_latency():
    # 8 requests all arriving at t=0 but only 1 in flight: later ones wait, and that wait is
    # part of their TTFT (measured from the scheduled arrival, not from the send).
    res, tls = drive(Schedule(rate=math.inf, concurrency=1, num_prompts=8), 8, ttft_s=0.02)
    tls.sort(key=lambda t: t.t_send)
    assert max_in_flight(tls) == 1
    lags = [t.send_lag_s() for t in tls]
    assert lags == sorted(lags) and lags[-1] >= 7 * 0.02
    assert tls[-1].ttft_s() >= lags[-1] + 0.02
    assert all(t.t_ref == tls[0].t_ref for t in tls)


def test_open_loop_arrivals_follow_the_schedule():
    sch = Schedule(rate=40, num_prompts=20, seed=2)
    res, tls = drive(sch, 20)
    offsets = sorted(t.t_ref - res.t_start for t in tls)
    assert offsets == pytest.approx(sch.arrivals(), abs=1e-6)
    assert all(t.send_lag_s() >= 0 for t in tls)


def test_duration_mode_stops_issuing_and_cycles_prompts():
    res, tls = drive(Schedule(concurrency=2, duration_s=0.5), 3, ttft_s=0.02)
    assert len(tls) > 6 and res.prompts_reused
    assert max(t.t_ref for t in tls) - res.t_start < 0.5


def test_monitor_sees_a_blocked_loop():
    async def main():
        m = Monitor()
        m.start()
        await asyncio.sleep(0.02)
        c = time.process_time()
        while time.process_time() - c < 0.08:   # the loop is busy: every stamp now would be late
            pass
        await asyncio.sleep(0.02)
        return await m.stop()

    sc = run_sync(main())
    assert max(sc.lags_s) >= 0.07
    assert any("event-loop lag" in w for w in sc.warnings())
    assert sc.cpu_s > 0.05
