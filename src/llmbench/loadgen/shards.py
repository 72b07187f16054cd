"""Drive one load point from client shards on Ray actors (`llmbench serve --executor ray
--workers N`), for loads one host cannot drive: wherever the cluster places them.

Each shard asks for one CPU (SPREAD scheduling), so shards go to different nodes while there
are free ones. Its slice of the schedule (workers.plan): closed loop, its share of the
concurrency; open loop, a thinned stream (each arrival dealt to a shard at random, so each shard
sees a Poisson process of rate R/N and their union is the requested process); a trace, by
request. Shards run the ordinary asyncio client (run.py) on their slice.

Clocks: each host has its own monotonic clock, so every shard's offset to the driver's is
measured at the start and at the end (the best of several round trips: offset = shard clock -
midpoint of the driver's send and receive, uncertainty = half the round trip), the shard starts
at the driver's t0 expressed on its own clock, and its timestamps are brought onto the driver's
clock afterwards. TTFT, TPOT and ITL are differences of one shard's own stamps and do not
depend on the offset; only the alignment of the shards' windows (throughput, the merged
timeline) does, to within the recorded uncertainty.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import LoadResult, Sent
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.selfcheck import SelfCheck
from llmbench.loadgen.workers import Share, merge, plan

START_MARGIN_S = 0.5      # t0 this far after the go: each shard has it (a Ray call) before t0
READY_TIMEOUT_S = 180.0   # actor start + imports + connections, on a slow shared machine
OFFSET_PROBES = 9
SHARD_NAME = "llmbench-shard"
# A shard whose offset moved by more than this between start and end: its clock drifted or a
# probe was delayed; its alignment (not its latencies) is then uncertain, and the point says so.
OFFSET_DRIFT_LIMIT_S = 0.005


class ClientShard:
    """One shard (a Ray actor): runs its slice on its own loop; `go` is a second call, so the
    actor is threaded (max_concurrency=2)."""

    def __init__(self):
        import threading

        self._ready = threading.Event()
        self._go = threading.Event()
        self._t0 = 0.0

    def clock(self) -> float:
        return time.perf_counter()

    def where(self) -> dict:
        import ray

        return {"host": socket.gethostname(), "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id()}

    def wait_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def go(self, t0_local: float) -> None:
        self._t0 = t0_local
        self._go.set()

    def run(self, ep: Endpoint, requests: list[bytes], schedule: Schedule,
            timeout_s: float | None, use_uvloop: bool) -> tuple[LoadResult, float]:
        """The LoadResult on this shard's clock, and the process CPU seconds it used."""
        from llmbench.loadgen.run import run_load, run_sync

        def start_at() -> float:
            self._ready.set()
            self._go.wait()
            return self._t0

        cpu0 = time.process_time()
        res = run_sync(run_load(ep, requests, schedule, timeout_s=timeout_s, start_at=start_at),
                       use_uvloop)
        return res, time.process_time() - cpu0


@dataclass
class Offset:
    offset_s: float         # shard clock - driver clock
    uncertainty_s: float    # half the best round trip


def measure_offset(read_clock: Callable[[], float], probes: int = OFFSET_PROBES) -> Offset:
    """The shard's clock minus ours, from the probe with the shortest round trip
    (`read_clock` asks the shard for its perf_counter)."""
    best: Offset | None = None
    for _ in range(probes):
        t1 = time.perf_counter()
        ts = read_clock()
        t3 = time.perf_counter()
        o = Offset(ts - (t1 + t3) / 2, (t3 - t1) / 2)
        if best is None or o.uncertainty_s < best.uncertainty_s:
            best = o
    assert best is not None
    return best


def shift(res: LoadResult, by_s: float) -> LoadResult:
    """The same result with every timestamp moved by `by_s` (a shard's clock onto the driver's)."""
    for s in res.sent:
        r = s.resp
        s.t_sched += by_s
        if r.t_send is not None:
            r.t_send += by_s
        if r.t_headers is not None:
            r.t_headers += by_s
        r.pieces = [(t + by_s, b) for t, b in r.pieces]
    res.t_start += by_s
    res.t_end += by_s
    return res


def run_shards(ep: Endpoint, requests: list[bytes], schedule: Schedule, shards: int, *,
               timeout_s: float | None = 300.0, use_uvloop: bool = True,
               cpus_per_shard: float = 1.0) -> LoadResult:
    """run.run_load's result for one point, driven by `shards` Ray actors; `.shards` lists
    each one's host, requests, CPU use, loop lag and clock offset."""
    import ray

    from llmbench.launch.ray_executor import _connect

    if not ray.is_initialized():
        _connect(ray)
    parts = plan(schedule, len(requests), shards, thin=True)
    Actor = ray.remote(num_cpus=cpus_per_shard, max_concurrency=2,
                       scheduling_strategy="SPREAD")(ClientShard)
    # named (llmbench-shard-<point>-<k>), so an operator (or a test) can find a shard
    tag = secrets.token_hex(4)
    actors = [Actor.options(name=f"{SHARD_NAME}-{tag}-{k}").remote() for k in range(len(parts))]
    where: list[dict] = [{"host": "?", "node_id": "?", "pid": None} for _ in actors]

    def get(k: int, ref, stage: str, timeout: float | None = None):
        """A shard's answer; a dead shard (RayActorError) or its client's own error fails the
        point, naming the shard and where it ran."""
        try:
            return ray.get(ref, timeout=timeout)
        except Exception as e:
            raise RuntimeError(f"client shard {k} on {where[k]['host']} (node "
                               f"{str(where[k]['node_id'])[:12]}) failed {stage}: "
                               f"{str(e).splitlines()[0]}") from None

    def offsets() -> list[Offset]:
        # a shard that dies while its clock is read fails the point by name, as in its load
        return [measure_offset(lambda k=k, a=a: get(k, a.clock.remote(), "to read its clock"))
                for k, a in enumerate(actors)]

    try:
        where = [get(k, a.where.remote(), "to start", READY_TIMEOUT_S) for k, a in enumerate(actors)]
        runs = [a.run.remote(ep, [requests[i % len(requests)] for i in sh.indices], sh.schedule,
                             timeout_s, use_uvloop) for a, sh in zip(actors, parts)]
        for k, a in enumerate(actors):
            if not get(k, a.wait_ready.remote(READY_TIMEOUT_S), "to open its connections"):
                raise RuntimeError(f"client shard {k} on {where[k]['host']} did not open its "
                                   f"connections within {READY_TIMEOUT_S:.0f} s")
        before = offsets()
        t0 = time.perf_counter() + START_MARGIN_S
        for k, (a, o) in enumerate(zip(actors, before)):
            get(k, a.go.remote(t0 + o.offset_s), "to start its load")
        results = [get(k, ref, "during its load") for k, ref in enumerate(runs)]
        after = offsets()
    finally:
        for a in actors:
            ray.kill(a)
    loads = [shift(r, -b.offset_s) for (r, _), b in zip(results, before)]
    merged = merge(loads, parts, len(requests), t0)
    merged.shards = [_shard_info(k, w, sh, r, cpu, b, a)
                     for k, (w, sh, (r, cpu), b, a) in enumerate(zip(where, parts, results, before, after))]
    return merged


def _shard_info(k: int, where: dict, share: Share, res: LoadResult, cpu_s: float,
                before: Offset, after: Offset) -> dict:
    sc: SelfCheck | None = res.selfcheck
    wall = res.t_end - res.t_start
    drift = after.offset_s - before.offset_s
    return {"shard": k, "host": where["host"], "node_id": where["node_id"], "pid": where["pid"],
            "requests": len(res.sent), "planned_requests": len(share.indices),
            "concurrency": share.schedule.concurrency if share.schedule.closed_loop else None,
            "cpu_s": cpu_s, "cpu_util": cpu_s / wall if wall > 0 else None,
            "loop_lag_p99_s": sc.lag_p99_s() if sc else None,
            "clock_offset_s": before.offset_s, "clock_offset_uncertainty_s": before.uncertainty_s,
            "clock_offset_end_s": after.offset_s, "clock_offset_end_uncertainty_s": after.uncertainty_s,
            "clock_drift_s": drift,
            "warnings": (sc.warnings() if sc else []) + (
                [f"clock offset moved {drift * 1e3:.2f} ms between start and end"]
                if abs(drift) > OFFSET_DRIFT_LIMIT_S + before.uncertainty_s + after.uncertainty_s else [])}
