"""Multi-turn conversations: sessions of `turns` requests, each turn's prompt carrying the whole
history (earlier prompts and the server's own answers), a think time between a turn's answer
and the next turn, and `concurrency` sessions interleaved (a slot that finishes a session starts
the next one).

A turn's scheduled time is the end of its think time: TTFT counts from there. A turn that fails
ends its session (there is no answer to carry on with); the turns it did not send are missing.
The only work on the event loop between turns is reading the finished answer and building the
next body; token timestamps are taken in `data_received` as for every request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Callable

from llmbench.loadgen.client import RequestSpec, answer_text
from llmbench.loadgen.http import Pool
from llmbench.loadgen.run import Sent


def conversation_driver(specs: list[RequestSpec], turns: int, concurrency: int, think_time_s: float,
                        timeout_s: float | None, encode: Callable[[RequestSpec], bytes],
                        used: dict[int, RequestSpec]):
    """A `run_load` driver. `specs[s * turns + k]` is session s's turn-k message; `used` gets
    the spec actually sent at each index (with its history)."""
    n_sessions = len(specs) // turns

    async def drive(pool: Pool, t0: float, sent: list[Sent]) -> None:
        sessions = iter(range(n_sessions))

        async def slot() -> None:
            for s in sessions:
                history: tuple[tuple[str, str], ...] = ()
                for k in range(turns):
                    if k and think_time_s:
                        await asyncio.sleep(think_time_s)
                    i = s * turns + k
                    spec = replace(specs[i], history=history)
                    data = encode(spec)
                    t_sched = time.perf_counter()
                    resp = await pool.request(data, timeout_s)
                    sent.append(Sent(i, t_sched, resp))
                    used[i] = spec
                    if resp.error or resp.status != 200:
                        break
                    history = (*history, (spec.prompt, answer_text(resp)))

        await asyncio.gather(*(slot() for _ in range(min(concurrency, n_sessions))))

    return drive
