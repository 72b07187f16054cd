"""The multi-process client (--workers): one clock across processes, the load split without
loss, and the merged timing as true as one process's."""

import math
import multiprocessing as mp
import statistics
import sys
import time

import pytest
from fault_server import FaultServer

from llmbench.loadgen.client import RequestSpec, encode_request, interpret
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.workers import plan, run_workers, shared_clock

SPEC = RequestSpec("hello", 5, 8)


def _clock(q):
    q.put(time.perf_counter())


@pytest.mark.skipif(sys.platform != "linux", reason="the CLOCK_MONOTONIC claim is Linux's")
def test_perf_counter_is_one_clock_across_processes():
    assert "CLOCK_MONOTONIC" in shared_clock()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    before = time.perf_counter()
    p = ctx.Process(target=_clock, args=(q,))
    p.start()
    child = q.get(timeout=30)
    after = time.perf_counter()
    p.join(10)
    # a per-process clock (zero at process start) would read far below `before`
    assert before <= child <= after


def test_closed_loop_split_keeps_every_slot_and_request():
    shares = plan(Schedule(concurrency=5, num_prompts=11), 11, 2)
    assert [s.schedule.concurrency for s in shares] == [3, 2]
    assert [s.schedule.num_prompts for s in shares] == [7, 4]     # in proportion to the slots
    assert sorted(i for s in shares for i in s.indices) == list(range(11))
    # more workers than slots: the extra ones get nothing and are dropped
    assert len(plan(Schedule(concurrency=2, num_prompts=8), 8, 4)) == 2
    dur = plan(Schedule(concurrency=4, duration_s=1.0), 10, 2)
    assert [s.schedule.duration_s for s in dur] == [1.0, 1.0] and \
        sorted(i for s in dur for i in s.indices) == list(range(10))


def test_open_loop_split_deals_the_arrivals():
    sch = Schedule(rate=50, num_prompts=9, concurrency=3, seed=1)
    shares = plan(sch, 9, 2)
    arr = sch.arrivals()
    got = sorted((off, i) for s in shares for off, i in zip(s.schedule.arrivals(), s.indices))
    assert got == sorted((arr[i], i) for i in range(9))
    assert [s.schedule.concurrency for s in shares] == [2, 1]


def drive(schedule, n, workers, **server):
    with FaultServer(["ok"], **server) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, SPEC, "m", "completions") for _ in range(n)]
        res = run_workers(ep, reqs, schedule, workers, timeout_s=10)
    return res, [interpret(x.resp, x.t_sched, SPEC).timeline for x in res.sent]


def test_two_workers_measure_the_servers_true_timing():
    ttft_s, itl_s = 0.03, 0.005
    res, tls = drive(Schedule(concurrency=4, num_prompts=12), 12, 2, ttft_s=ttft_s, itl_s=itl_s)
    assert res.selfcheck.processes == 2 and len(tls) == 12 and not any(t.error for t in tls)
    assert sorted(s.index for s in res.sent) == list(range(12))
    # the first wave of both workers is scheduled at the one shared t0
    assert sum(1 for t in tls if t.t_ref == res.t_start) == 4
    ttfts = [t.ttft_s() for t in tls]
    itls = [g for t in tls for g in t.itl_s()]
    # as the single-process tests: the server's timing is a lower bound (its sleeps never end
    # early), and a client stamping on time reads it within a few ms
    assert min(ttfts) >= ttft_s and statistics.median(ttfts) < ttft_s + 0.02
    assert statistics.median(itls) == pytest.approx(itl_s, abs=0.003)
    assert min(t.e2e_s() for t in tls) >= ttft_s + 7 * itl_s * 0.95


def test_two_workers_follow_the_open_loop_schedule_on_one_clock():
    sch = Schedule(rate=40, num_prompts=20, seed=2)
    res, tls = drive(sch, 20, 2)
    offsets = sorted(t.t_ref - res.t_start for t in tls)
    assert offsets == pytest.approx(sch.arrivals(), abs=1e-6)
    assert all(t.send_lag_s() >= 0 for t in tls) and max(t.send_lag_s() for t in tls) < 0.05
    assert not math.isnan(res.t_end) and res.t_end > res.t_start
