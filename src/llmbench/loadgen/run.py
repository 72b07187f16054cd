"""Drive one load point: send pre-built requests on a schedule, record every response raw.

Nothing is parsed while the load runs (see http.py); `Sent` keeps the scheduled time, the real
send time and the raw timed body of each request for reading afterwards.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import time
from dataclasses import dataclass, field

from llmbench.loadgen.http import Endpoint, Pool, Response
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.selfcheck import Monitor, SelfCheck

PREWARM_MAX = 1024


@dataclass
class Sent:
    index: int          # which prompt (requests cycle when a duration outlasts the pool)
    t_sched: float
    resp: Response


@dataclass
class LoadResult:
    t_start: float
    t_end: float
    sent: list[Sent] = field(default_factory=list)
    selfcheck: SelfCheck | None = None
    connections_opened: int = 0
    prompts_reused: bool = False
    shards: list[dict] | None = None   # client shards on Ray (shards.py): one entry each


async def run_load(ep: Endpoint, requests: list[bytes], schedule: Schedule, *,
                   timeout_s: float | None = 300.0, driver=None, watch=None,
                   start_at=None) -> LoadResult:
    """`driver(pool, t0, sent)`, when given, sends the requests itself (conversations build
    each turn from the last answer) inside the same measured set-up. `watch` (open loop, a
    capacity.PointWatch) may end the point early: no more arrivals, requests in flight
    cancelled (counted in `watch.cancelled`, each judged late or unknown). `start_at()`, when given, is called once the
    connections are open and returns the perf_counter time at which to start (workers.py: all
    worker processes start on one t0)."""
    pool = Pool(ep)
    n_req = len(requests)
    # Open loop without a cap: connections beyond these are opened on demand (and charged).
    width = schedule.concurrency or 64
    await pool.prewarm(min(width, PREWARM_MAX, schedule.num_prompts or width))
    mon = Monitor()
    sent: list[Sent] = []
    # A full garbage collection over a big heap stalls the loop for tens to hundreds of ms and
    # every token stamped meanwhile is late: collect now, then pause the collector for the run.
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    if start_at is not None:
        t0 = start_at()
        while (delay := t0 - time.perf_counter()) > 0:   # timers are ms-coarse: yield the rest
            await asyncio.sleep(delay - 0.002 if delay > 0.003 else 0)
    mon.start()
    if start_at is None:
        t0 = time.perf_counter()
    try:
        if driver is not None:
            await driver(pool, t0, sent)
        elif schedule.closed_loop:
            await _closed(pool, requests, schedule, t0, timeout_s, sent)
        else:
            await _open(pool, requests, schedule, t0, timeout_s, sent, watch)
    finally:
        t_end = time.perf_counter()
        check = await mon.stop()
        pool.close()
        if gc_was_enabled:
            gc.enable()
    total = schedule.num_prompts if schedule.num_prompts else len(sent)
    return LoadResult(t0, t_end, sorted(sent, key=lambda s: s.t_sched), check, pool.opened,
                      prompts_reused=driver is None and total > n_req)


async def warm_up(ep: Endpoint, requests: list[bytes], timeout_s: float | None = 300.0) -> dict:
    """Send `requests` one after another before a point's clock starts (first-request costs:
    CUDA graphs captured on demand, allocator growth, caches); nothing of them is measured.
    Returns how many were sent, how many failed, and how long they took."""
    pool = Pool(ep)
    t = time.perf_counter()
    failed = 0
    try:
        for req in requests:
            resp = await pool.request(req, timeout_s)
            failed += bool(resp.error or resp.status != 200 or not resp.complete)
    finally:
        pool.close()
    return {"requests": len(requests), "failed": failed, "duration_s": time.perf_counter() - t}


async def _closed(pool: Pool, requests, schedule: Schedule, t0: float, timeout_s, sent) -> None:
    n = schedule.num_prompts
    deadline = t0 + schedule.duration_s if schedule.duration_s else None
    counter = iter(range(10**12))

    async def worker(i: int, started):
        t_sched = t0
        while True:
            resp = await pool.request(requests[i % len(requests)], timeout_s, started)
            sent.append(Sent(i, t_sched, resp))
            t_sched = time.perf_counter()
            i, started = next(counter), None
            if n is not None and i >= n:
                return
            if deadline is not None and t_sched >= deadline:
                return

    # The first wave goes out back to back before any task runs: the last of 256 requests
    # leaves ~1 ms after the first instead of after 256 task start-ups.
    first = []
    for _ in range(schedule.concurrency):
        i = next(counter)
        if n is not None and i >= n:
            break
        first.append((i, pool.start(requests[i % len(requests)])))
    await asyncio.gather(*(worker(i, st) for i, st in first))


async def _open(pool: Pool, requests, schedule: Schedule, t0: float, timeout_s, sent,
                watch=None) -> None:
    sem = asyncio.Semaphore(schedule.concurrency) if schedule.concurrency else None
    tasks = []

    async def one(i: int, t_sched: float):
        box = None
        if watch is not None:   # the watch judges a request cancelled in flight by its Response
            box = []
            watch.live[i] = (t_sched, box)
        if sem is None:
            resp = await pool.request(requests[i % len(requests)], timeout_s, track=box)
        else:
            async with sem:
                resp = await pool.request(requests[i % len(requests)], timeout_s, track=box)
        sent.append(Sent(i, t_sched, resp))
        if watch is not None:
            del watch.live[i]
            watch.on_done(resp, t_sched, i)

    for i, offset in enumerate(schedule.arrivals()):
        t_sched = t0 + offset
        # The loop's timers are ms-coarse and may fire early: finish the wait by yielding.
        while (delay := t_sched - time.perf_counter()) > 0:
            if watch is not None and watch.stop_reason:
                break
            # (with a watch, at most 100 ms at a time: a stop must not wait for a slow arrival)
            await asyncio.sleep((delay if watch is None else min(delay, 0.1)) if delay > 0.002 else 0)
        if watch is not None:
            if watch.stop_reason:
                break
            watch.on_send(t_sched, time.perf_counter())
        tasks.append(asyncio.ensure_future(one(i, t_sched)))
    if watch is None:
        await asyncio.gather(*tasks)
        return
    pending = {t for t in tasks if not t.done()}
    while pending and not watch.stop_reason:
        _, pending = await asyncio.wait(pending, timeout=0.05)
    # Let every task just created reach its send (and its place in watch.live) first.
    await asyncio.sleep(0)
    pending = {t for t in pending if not t.done()}
    watch.judge_cancelled(time.perf_counter())   # sets watch.cancelled (= len(pending))
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (measured faster per token, see benchmarks/client_fidelity.py)."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def run_sync(coro, use_uvloop: bool = True):
    """Run a load on a fresh loop. Ctrl-C (or SIGTERM) cancels it cleanly -- connections
    closed, monitor stopped -- and then surfaces as KeyboardInterrupt, so callers' clean-up
    (stopping a launched server) runs too."""
    loop = new_loop() if use_uvloop else asyncio.new_event_loop()
    task = loop.create_task(coro)
    interrupted = []
    handled = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, lambda s=sig: (interrupted.append(s), task.cancel()))
            handled.append(sig)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
            pass
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
            signal.signal(sig, previous[sig])   # e.g. the server launcher's SIGTERM clean-up
        loop.close()
