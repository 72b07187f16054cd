"""The isolated worker: `python -m llmbench.launch.worker JOB.json EVENTS_FD`.

Runs one group of points (same engine load) with runner.run_group and reports progress as
JSON lines on the inherited pipe EVENTS_FD (never stdout: engines print there). Records are
written by the worker itself, atomically, so a record is either complete on disk or absent.
The worker dies with its parent, so a killed sweep leaves no orphan that keeps writing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

# llama-cpp-python 0.3.36's CUDA build segfaults while loading a model when numpy was imported
# before it (seen on the H200: numpy 2.5 loaded first, then llama_model_load_from_file crashes;
# llama_cpp first, then numpy, works). A worker of llama.cpp points loads it before anything
# here imports numpy.
if os.environ.get("LLMBENCH_WORKER_ENGINE") == "llamacpp":
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pass  # the backend reports the missing engine itself


def _die_with_parent() -> None:
    parent = os.getppid()
    try:  # Linux: the kernel kills us the moment the parent dies
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:  # elsewhere (or if prctl failed): poll
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str]) -> int:
    job_path, fd = argv[0], int(argv[1])
    _die_with_parent()
    chan = os.fdopen(fd, "w", buffering=1)

    def send(msg: dict) -> None:
        chan.write(json.dumps(msg) + "\n")
        chan.flush()

    from llmbench.launch import faults
    from llmbench.models.sources import resolve
    from llmbench.runner import run_group
    from llmbench.spec import Point
    from llmbench.store import Store

    job = json.loads(open(job_path).read())
    from llmbench.measure import env as envmod

    envmod.set_user_argv(job.get("argv"))  # records name the user's command, not ours
    points = [Point.model_validate(d) for d in job["points"]]
    models = {name: resolve(name) for name in {p.model for p in points}}
    planned = faults.plan()  # a malformed fault plan fails the worker before any point, loudly
    if any(planned.get(p.key) == "oom" for p in points):
        import torch  # noqa: F401 - imported before the timed point, not inside its time limit

    def say(event: str, p, n: int) -> None:
        send({"event": event, "key": p.key if p is not None else None, "n": n})

    def on_record(rec, path) -> None:
        send({"event": "record", "key": rec.point_key, "path": str(path)})

    run_group(points, models, job["run_id"], Store(job["results"]), say,
              before_point=faults.inject, on_record=on_record)
    send({"event": "end"})
    chan.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
