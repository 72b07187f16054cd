"""Drive one load point: send pre-built requests on a schedule, record every response raw.

Nothing is parsed while the load runs (see http.py); `Sent` keeps the scheduled time, the real
send time and the raw timed body of each request for reading afterwards.
"""

from __future__ import annotations

import asyncio
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


async def run_load(ep: Endpoint, requests: list[bytes], schedule: Schedule, *,
                   timeout_s: float | None = 300.0) -> LoadResult:
    pool = Pool(ep)
    n_req = len(requests)
    # Open loop without a cap: connections beyond these are opened on demand (and charged).
    width = schedule.concurrency or 64
    await pool.prewarm(min(width, PREWARM_MAX, schedule.num_prompts or width))
    mon = Monitor()
    sent: list[Sent] = []
    mon.start()
    t0 = time.perf_counter()
    try:
        if schedule.closed_loop:
            await _closed(pool, requests, schedule, t0, timeout_s, sent)
        else:
            await _open(pool, requests, schedule, t0, timeout_s, sent)
    finally:
        t_end = time.perf_counter()
        check = await mon.stop()
        pool.close()
    total = schedule.num_prompts if schedule.num_prompts else len(sent)
    return LoadResult(t0, t_end, sorted(sent, key=lambda s: s.t_sched), check, pool.opened,
                      prompts_reused=total > n_req)


async def _closed(pool: Pool, requests, schedule: Schedule, t0: float, timeout_s, sent) -> None:
    n = schedule.num_prompts
    deadline = t0 + schedule.duration_s if schedule.duration_s else None
    counter = iter(range(10**12))

    async def worker():
        t_sched = t0
        while True:
            i = next(counter)
            if n is not None and i >= n:
                return
            if deadline is not None and t_sched >= deadline:
                return
            resp = await pool.request(requests[i % len(requests)], timeout_s)
            sent.append(Sent(i, t_sched, resp))
            t_sched = time.perf_counter()

    await asyncio.gather(*(worker() for _ in range(schedule.concurrency)))


async def _open(pool: Pool, requests, schedule: Schedule, t0: float, timeout_s, sent) -> None:
    sem = asyncio.Semaphore(schedule.concurrency) if schedule.concurrency else None
    tasks = []

    async def one(i: int, t_sched: float):
        if sem is None:
            resp = await pool.request(requests[i % len(requests)], timeout_s)
        else:
            async with sem:
                resp = await pool.request(requests[i % len(requests)], timeout_s)
        sent.append(Sent(i, t_sched, resp))

    for i, offset in enumerate(schedule.arrivals()):
        t_sched = t0 + offset
        # The loop's timers are ms-coarse and may fire early: finish the wait by yielding.
        while (delay := t_sched - time.perf_counter()) > 0:
            await asyncio.sleep(delay if delay > 0.002 else 0)
        tasks.append(asyncio.ensure_future(one(i, t_sched)))
    await asyncio.gather(*tasks)


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (measured faster per token, see benchmarks/client_fidelity.py)."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def run_sync(coro, use_uvloop: bool = True):
    loop = new_loop() if use_uvloop else asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
