"""The worker: `python -m llmbench.launch.worker JOB.json EVENTS` (every kind of point).

Runs one group of points (same load) with pipeline.run_group and reports progress as JSON
lines into the named pipe EVENTS (never stdout: engines print there). Records are written by
the worker itself, atomically, so a record is either complete on disk or absent. The worker
dies with its parent, so a killed sweep leaves no orphan that keeps writing.

Under torchrun (an N-process training point) every rank runs this module; rank 0 alone
reports events and writes records.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

# What the group's engine must load before anything here imports numpy (its `preload`; why:
# the engine's module, e.g. backends/llamacpp.py).
if os.environ.get("LLMBENCH_WORKER_ENGINE"):
    from llmbench.backends import preload

    preload(os.environ["LLMBENCH_WORKER_ENGINE"])


def _die_with_parent() -> None:
    parent = os.getppid()
    try:  # Linux: the kernel kills us the moment the parent dies
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(1, signal.SIGKILL) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        armed = False
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    if armed:  # no polling thread: it would wake inside the measured windows
        return

    def watch() -> None:  # elsewhere (or if prctl failed): poll
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str]) -> int:
    job_path, events = argv[0], argv[1]
    _die_with_parent()
    rank0 = int(os.environ.get("RANK", "0")) == 0
    chan = open(events, "w", buffering=1) if rank0 else None

    def send(msg: dict) -> None:
        if chan is not None:
            chan.write(json.dumps(msg) + "\n")
            chan.flush()

    from llmbench.launch import faults
    from llmbench.kinds.registry import get_kind
    from llmbench.launch.pipeline import run_group
    from llmbench.store import Store

    job = json.loads(open(job_path).read())
    if job.get("argv"):  # records (env.argv) name the user's command, not this worker's
        from llmbench.measure import env as envmod

        sys.argv = list(job["argv"])
        envmod.set_user_argv(job["argv"])
    kind = get_kind(job["kind"])
    points = [kind.parse_point(d) for d in job["points"]]
    ctx = kind.context(points)
    planned = faults.plan()  # a malformed fault plan fails the worker before any point, loudly
    if any(planned.get(p.key) == "oom" for p in points):
        import torch  # noqa: F401 - imported before the timed point, not inside its time limit

    def say(event: str, p, n: int) -> None:
        send({"event": event, "key": p.key if p is not None else None, "n": n})

    def on_record(rec, path) -> None:
        send({"event": "record", "key": rec.point_key, "path": str(path)})

    run_group(kind, points, ctx, job["run_id"], Store(job["results"]), say,
              before_point=faults.inject, on_record=on_record)
    send({"event": "end"})
    if chan is not None:
        chan.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
