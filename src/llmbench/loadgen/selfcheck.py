"""The client watching itself: event-loop lag and CPU use over the measured window.

A client whose loop runs late stamps tokens late; one near 100 % of its core is the bottleneck
rather than the server. Both are measured and a run that crossed either limit is marked.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

LAG_PERIOD_S = 0.005
LAG_P99_LIMIT_S = 0.005   # the loop's timers are only ~1 ms fine; 5 ms late is real trouble
CPU_LIMIT = 0.90          # fraction of one core (the loop is single-threaded)


@dataclass
class SelfCheck:
    lags_s: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0
    loop: str = ""
    processes: int = 1              # client worker processes (--workers), each its own loop
    busiest_cpu_util: float | None = None   # several processes: the busiest one's core share

    @property
    def cpu_util(self) -> float:
        """Mean fraction of one core per client process."""
        return self.cpu_s / (self.wall_s * self.processes) if self.wall_s > 0 else 0.0

    @classmethod
    def merge(cls, checks: list[SelfCheck]) -> SelfCheck:
        """One check for several worker processes: their lags pooled, CPU summed; the limit
        applies to the busiest (one late loop makes its own requests' stamps late)."""
        return cls(lags_s=[x for c in checks for x in c.lags_s], cpu_s=sum(c.cpu_s for c in checks),
                   wall_s=max(c.wall_s for c in checks), loop=checks[0].loop,
                   processes=len(checks), busiest_cpu_util=max(c.cpu_util for c in checks))

    def lag_p99_s(self) -> float:
        if not self.lags_s:
            return 0.0
        s = sorted(self.lags_s)
        return s[min(len(s) - 1, int(0.99 * len(s)))]

    def warnings(self) -> list[str]:
        w = []
        util = self.cpu_util if self.busiest_cpu_util is None else self.busiest_cpu_util
        if util > CPU_LIMIT:
            who = "it" if self.processes == 1 else f"its busiest of {self.processes} processes"
            w.append(f"client may be the bottleneck: {who} used {util:.0%} of a core")
        if self.lag_p99_s() > LAG_P99_LIMIT_S:
            why = ("it was busy" if util > 0.5 else
                   f"at {self.cpu_util:.0%} CPU it waited for a core: the machine is oversubscribed")
            w.append(f"client timestamps may be late: event-loop lag p99 "
                     f"{self.lag_p99_s() * 1e3:.1f} ms ({why})")
        return w


class Monitor:
    def __init__(self) -> None:
        self.result = SelfCheck()
        self._task: asyncio.Task | None = None
        self._stop = False

    async def _watch(self) -> None:
        lags = self.result.lags_s
        while not self._stop:
            t = time.perf_counter()
            await asyncio.sleep(LAG_PERIOD_S)
            lags.append(max(0.0, time.perf_counter() - t - LAG_PERIOD_S))

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.result.loop = type(loop).__module__.split(".")[0]
        self._cpu0, self._t0 = time.process_time(), time.perf_counter()
        self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> SelfCheck:
        self.result.cpu_s = time.process_time() - self._cpu0
        self.result.wall_s = time.perf_counter() - self._t0
        self._stop = True
        if self._task is not None:
            await self._task
        return self.result
