"""Drive one load point from several client processes (`llmbench serve --workers N`), for loads
one event loop cannot stamp in time.

The requests are split: closed loop, the concurrency slots (each worker keeps its share in
flight, and gets a share of the requests in proportion); open loop, the schedule's arrivals
(dealt round-robin, so every worker sees the whole time span at 1/N of the rate; a concurrency
cap is split the same way, so it holds per worker, not across them). Each worker is a spawned
process running the ordinary asyncio client (run.py) on its share. All of them start on one t0
chosen by the parent once every worker has its connections open.

One clock: time.perf_counter() is clock_gettime(CLOCK_MONOTONIC) on Linux, a system-wide clock,
so a value read in one process is comparable with one read in another on the same host
(`shared_clock` refuses a platform where that is not known). The workers' raw responses come
back and are merged into one LoadResult, indices mapped back to the caller's request list, so
every metric and record is computed from them exactly as from one process.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from dataclasses import dataclass

from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import LoadResult, Sent
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.selfcheck import SelfCheck

# Clocks known to be one system-wide clock on one host, by time.get_clock_info's name.
SYSTEM_WIDE = ("CLOCK_MONOTONIC", "mach_absolute_time", "QueryPerformanceCounter")
START_MARGIN_S = 0.05     # t0 this far after "go" is sent: every worker has it before t0
READY_TIMEOUT_S = 120.0   # imports + connections per worker, on a slow shared machine


def shared_clock() -> str:
    """perf_counter's implementation, when it is a system-wide clock; else an error."""
    impl = time.get_clock_info("perf_counter").implementation
    if not any(name in impl for name in SYSTEM_WIDE):
        raise RuntimeError(f"time.perf_counter is {impl!r} here, not known to be one clock "
                           "across processes: --workers needs a system-wide monotonic clock")
    return impl


@dataclass
class Share:
    """One worker's part: its schedule, and the caller's index of each of its requests."""

    schedule: Schedule
    indices: list[int]


def _split(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, the remainder to the first ones."""
    w = sum(weights)
    parts = [total * x // w for x in weights]
    for i in range(total - sum(parts)):
        parts[i % len(parts)] += 1
    return parts


def plan(schedule: Schedule, n_requests: int, workers: int, thin: bool = False) -> list[Share]:
    """Each worker's share of a point; workers left without work are dropped (fewer requests
    or slots than workers). Open loop: arrivals dealt round-robin, or with `thin` (Ray shards)
    each to a worker drawn at random (seeded), so that each worker's stream is itself a
    Poisson process of rate R/N; a replayed trace is always dealt by request."""
    if schedule.closed_loop:
        slots = _split(schedule.concurrency, [1] * min(workers, schedule.concurrency))
        # with -n, the requests; with a duration, the prompt pool each worker cycles through
        counts = _split(schedule.num_prompts or n_requests, slots)
        shares, start = [], 0
        for c, k in zip(slots, counts):
            if k:
                shares.append(Share(Schedule(concurrency=c, num_prompts=k if schedule.num_prompts else None,
                                             duration_s=schedule.duration_s), list(range(start, start + k))))
            start += k
        return shares
    arrivals = schedule.arrivals()
    caps = _split(schedule.concurrency, [1] * min(workers, schedule.concurrency)) \
        if schedule.concurrency else [None] * workers
    if thin and schedule.offsets_s is None:
        import numpy as np

        owner = np.random.default_rng([schedule.seed, len(caps)]).integers(0, len(caps), len(arrivals))
        dealt = [np.flatnonzero(owner == w).tolist() for w in range(len(caps))]
    else:
        dealt = [list(range(w, len(arrivals), len(caps))) for w in range(len(caps))]
    out = []
    for w, cap in enumerate(caps):
        idx = dealt[w]
        if idx:
            out.append(Share(Schedule(rate=schedule.rate, offsets_s=tuple(arrivals[i] for i in idx),
                                      num_prompts=len(idx), concurrency=cap, seed=schedule.seed), idx))
    return out


def _worker(conn, ep: Endpoint, requests: list[bytes], schedule: Schedule,
            timeout_s: float | None, use_uvloop: bool) -> None:
    """A worker process: open its connections, say ready, start at the t0 it is sent, and
    send back the LoadResult (raw responses; nothing is parsed here)."""
    from llmbench.loadgen.run import run_load, run_sync

    def start_at() -> float:
        conn.send("ready")
        return conn.recv()

    try:
        res = run_sync(run_load(ep, requests, schedule, timeout_s=timeout_s, start_at=start_at),
                       use_uvloop)
        conn.send(("ok", res))
    except BaseException:   # the parent reports it; a worker never dies silently
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_workers(ep: Endpoint, requests: list[bytes], schedule: Schedule, workers: int, *,
                timeout_s: float | None = 300.0, use_uvloop: bool = True) -> LoadResult:
    """run.run_load's result for one point, driven by `workers` processes."""
    shared_clock()
    shares = plan(schedule, len(requests), workers)
    ctx = mp.get_context("spawn")   # no fork of a parent with threads (scraper, power meter)
    procs, conns = [], []
    try:
        for sh in shares:
            mine = [requests[i % len(requests)] for i in sh.indices]
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(child, ep, mine, sh.schedule, timeout_s, use_uvloop),
                            daemon=True, name="llmbench-client")
            p.start()
            child.close()
            procs.append(p)
            conns.append(parent)
        for p, c in zip(procs, conns):
            msg = c.recv() if c.poll(READY_TIMEOUT_S) else ("error", "no answer (timed out)")
            if msg != "ready":
                raise RuntimeError(f"client worker {p.pid} failed to start: {msg[1]}")
        t0 = time.perf_counter() + START_MARGIN_S
        for c in conns:
            c.send(t0)
        results = []
        for p, c in zip(procs, conns):
            kind, payload = c.recv()
            if kind != "ok":
                raise RuntimeError(f"client worker {p.pid} failed:\n{payload}")
            results.append(payload)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.terminate()
                p.join(5)
    return merge(results, shares, len(requests), t0)


def merge(results: list[LoadResult], shares: list[Share], n_requests: int, t0: float) -> LoadResult:
    """The workers' results as one: each Sent's index is the caller's request index."""
    sent = [Sent(sh.indices[s.index % len(sh.indices)], s.t_sched, s.resp)
            for r, sh in zip(results, shares) for s in r.sent]
    return LoadResult(t0, max(r.t_end for r in results), sorted(sent, key=lambda s: s.t_sched),
                      SelfCheck.merge([r.selfcheck for r in results]),
                      sum(r.connections_opened for r in results),
                      prompts_reused=len(sent) > n_requests)
