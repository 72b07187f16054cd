"""One long-lived thread for the reads observers take beside a point, not on its thread.

NVML's slow calls wait in the driver with the GIL released (on H200s, 2026-12-03: the energy
counter 1.5-4.4 ms a read, the GPU process list 0.15-2.75 ms, a GPM sample 0.14-1.9 ms), so the
point's own bookkeeping can go on meanwhile. Each observer once started its own thread per
window: ~0.2 ms a start on the caller's thread, four a window, and the threads' calls queued
in NVML anyway. Here they queue on one thread, in the order they were asked for: a window's
closing energy read first (its job waits for the window's end), then the counters' and the
GPU list's, then the next window's.

A job may wait for its own window to close, never for a later job: the queue is one thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_lane: tuple[int, ThreadPoolExecutor] | None = None  # (the pid it belongs to, its executor)


def aside(fn: Callable[..., Any], *args: Any) -> Future:
    """fn(*args) on the aside thread, after every job asked for before it; the Future holds
    its result (or its exception)."""
    global _lane
    pid = os.getpid()
    if _lane is None or _lane[0] != pid:  # a forked child inherits no thread behind the executor
        _lane = (pid, ThreadPoolExecutor(max_workers=1, thread_name_prefix="llmbench-aside"))
    return _lane[1].submit(fn, *args)
