"""Run a sweep's point groups in isolated worker processes, so that a crash (segfault,
abort, OOM kill), a CUDA out-of-memory or a hang costs only the point it happened in: that
point gets a `status='failed'` record naming the cause, a fresh worker is started for the
rest of its group, and the sweep goes on. The same for every kind of point (launch/kind.py).

One worker per group of points that share a load (`kind.load_key`), so a model loads once per
group (once more after each crash). Groups run one after another: points measured side by side
on one machine would disturb each other's timings. A group whose points need N processes
(a torchrun training point) is one unit: the worker command is torchrun's, the events come
from rank 0, and a crash of any rank fails the point.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from llmbench.launch.failures import failed_record
from llmbench.launch.kind import PointKind, Progress
from llmbench.store import Record, Store
from llmbench.store.store import atomic_write_text

#: Per-point limit when the spec gives none: generous, since a big model's point can take long.
DEFAULT_TIMEOUT_S = 3600.0
#: Loading an engine has its own limit (at least this long, whatever timeout_s says).
LOAD_TIMEOUT_S = 1800.0


def run_group_isolated(kind: PointKind, group: list, ctx: Any, run_id: str,
                       store: Store, say: Progress, argv: list[str] | None = None) -> list[Record]:
    """Every point of the group ends with exactly one record of this run, whatever the
    workers do. `argv`: the user's command, for the records (default: this process's)."""
    records: list[Record] = []
    remaining = list(group)
    before = existing(store, run_id)
    while remaining:
        outcome = _Worker(kind, remaining, run_id, store, say, argv or sys.argv).supervise()
        records.extend(outcome.records)
        done = {r.point_key for r in outcome.records}
        remaining = [p for p in remaining if p.key not in done]
        if outcome.cause is None:
            if remaining:  # the worker ended cleanly yet skipped points: never silently
                outcome.cause, outcome.blame = "worker ended without running this point", [remaining[0]]
            else:
                break
        for p in outcome.blame:
            rec = stored_since(store, run_id, p, before)
            if rec is None:
                rec = failed_record(kind, p, run_id, ctx, outcome.cause)
                store.write(rec)
            records.append(rec)
            say("done", p, 0)
        blamed = {p.key for p in outcome.blame}
        remaining = [p for p in remaining if p.key not in blamed]
    return records


def existing(store: Store, run_id: str) -> set[Path]:
    return set((store.root / run_id).glob("*.json"))


def stored_since(store: Store, run_id: str, p, before: set[Path]) -> Record | None:
    """The record a worker wrote for `p` just before it died, if it got that far (records
    that were there before, e.g. an earlier failure of the same --run-id, do not count)."""
    for path in sorted((store.root / run_id).glob(f"*-{p.key}-*.json")):
        if path in before:
            continue
        try:
            return Record.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
    return None


class _Outcome:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.cause: str | None = None
        self.blame: list = []


class _Worker:
    """One worker process for (the rest of) a group, watched by the parent."""

    def __init__(self, kind: PointKind, points: list, run_id: str, store: Store, say: Progress,
                 argv: list[str]):
        self.kind, self.points, self.run_id, self.store, self.say = kind, points, run_id, store, say
        self.argv = argv
        self.by_key = {p.key: p for p in points}

    def supervise(self) -> _Outcome:
        out = _Outcome()
        with tempfile.TemporaryDirectory(prefix="llmbench-worker-") as tmp:
            job = Path(tmp) / "job.json"
            job.write_text(json.dumps({"kind": self.kind.name, "run_id": self.run_id, "argv": self.argv,
                                       "results": str(self.store.root),
                                       "points": [p.model_dump(mode="json") for p in self.points]}))
            log = self.log = open(Path(tmp) / "worker.log", "w+b")
            # Events come through a named pipe, not an inherited descriptor: torchrun closes
            # those before it starts its ranks. Holding a write end ourselves keeps the pipe
            # from reading as closed before the worker opens it; a death is seen by poll().
            events = Path(tmp) / "events"
            os.mkfifo(events, 0o600)
            r = os.open(events, os.O_RDONLY | os.O_NONBLOCK)
            keep = os.open(events, os.O_WRONLY)
            prefix, extra_env = self.kind.command(self.points)
            # the engine, so that the worker can load it before numpy (launch/worker.py says why)
            extra_env = {**extra_env, "LLMBENCH_WORKER_ENGINE": str(getattr(self.points[0], "backend", ""))}
            proc = None
            try:
                proc = subprocess.Popen(
                    [*prefix, "-m", "llmbench.launch.worker", str(job), str(events)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env={**os.environ, **extra_env},
                    start_new_session=True,  # its own process group: engine children die with it
                    preexec_fn=_die_with_parent)
                self._watch(proc, r, out, log)
            finally:
                os.close(r)
                os.close(keep)
                if proc is not None:
                    _kill_group(proc)
                log.close()
        return out

    def _watch(self, proc: subprocess.Popen, r: int, out: _Outcome, log) -> None:
        self.current = None
        self.started = False  # the engine loaded: a point started or a record came
        self.limit = max(LOAD_TIMEOUT_S, _timeout(self.points[0]))
        self.deadline = time.monotonic() + self.limit
        buf, eof = b"", False
        while True:
            wait = min(0.5, max(0.0, self.deadline - time.monotonic()))
            lines, buf, eof = _read_lines(r, buf, eof, wait)
            if self._handle(lines, out):
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:  # stuck in its exit handlers: work is done
                    pass
                return
            rc = proc.poll()
            if rc is not None or eof:
                if rc is None:  # pipe closed but the process lingers: give it a moment
                    try:
                        rc = proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        _kill_group(proc)
                        rc = proc.wait()
                lines, buf, _ = _read_lines(r, buf, False, 0)  # what it said before dying
                if self._handle(lines, out):
                    return
                self._fail(out, _exit_cause(rc) + _tail(log))
                return
            if time.monotonic() >= self.deadline:
                _kill_group(proc)
                proc.wait()
                self._fail(out, f"timed out after {self.limit:g} s (per-point limit timeout_s); "
                                "worker killed" if self.started else
                                f"timed out after {self.limit:g} s while loading; worker killed")
                return

    def _handle(self, lines: list[bytes], out: _Outcome) -> bool:
        """Apply the worker's events; True once it reported the end of its group."""
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:  # a torn line from a dying worker
                continue
            ev, p = msg.get("event"), self.by_key.get(msg.get("key"))
            if ev == "end":
                return True
            if ev == "record":
                out.records.append(self._with_engine_errors(Path(msg["path"])))
                self.current, self.started = None, True
                if p is not None:
                    self.say("done", p, 0)
                    # the next point's start follows at once; until then the same limit holds
                    self.limit = _timeout(p)
                    self.deadline = time.monotonic() + self.limit
            elif p is None:
                continue
            elif ev == "start":
                self.current, self.started = p, True
                self.limit = _timeout(p)
                self.deadline = time.monotonic() + self.limit
                self.say("start", p, 0)
            elif ev == "measured":  # timeout_s limits the engine's work, not the bookkeeping
                self.limit = max(LOAD_TIMEOUT_S, _timeout(p))
                self.deadline = time.monotonic() + self.limit
            elif ev in ("load", "repeat"):
                self.say(ev, p, msg.get("n", 0))
        return False

    def _with_engine_errors(self, path: Path) -> Record:
        """A failed record gets the error lines its engine printed (vLLM's engine processes say
        the root cause only on stderr, e.g. an unsupported KV block size)."""
        rec = Record.model_validate_json(path.read_text())
        if rec.status == "failed":
            lines = _error_lines(self.log)
            if lines and lines not in (rec.error or ""):
                rec.error = f"{rec.error}\nengine output: {lines}"
                atomic_write_text(path, rec.model_dump_json(indent=1))
        return rec

    def _fail(self, out: _Outcome, cause: str) -> None:
        done = {r.point_key for r in out.records}
        rest = [p for p in self.points if p.key not in done]
        if self.current is not None and self.current.key not in done:
            out.cause, out.blame = cause, [self.current]
        elif not self.started:  # died or hung while loading: the group shares that load
            out.cause, out.blame = f"load failed: {cause}", rest
        else:  # between points: blame the next one, so that a restart always makes progress
            out.cause, out.blame = cause, rest[:1]


def _read_lines(fd: int, buf: bytes, eof: bool, wait_s: float) -> tuple[list[bytes], bytes, bool]:
    if not eof:
        ready, _, _ = select.select([fd], [], [], wait_s)
        while ready:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                eof = True
                break
            buf += chunk
            ready, _, _ = select.select([fd], [], [], 0)
    *lines, buf = buf.split(b"\n")
    return [x for x in lines if x.strip()], buf, eof


def _timeout(p) -> float:
    return p.timeout_s if p.timeout_s else DEFAULT_TIMEOUT_S


def _die_with_parent() -> None:
    """In the worker's child before exec: SIGKILL when llmbench dies (Linux), so that a
    killed sweep leaves no worker (or torchrun agent) that keeps writing records."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _exit_cause(rc: int) -> str:
    if rc < 0:
        sig = -rc
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown signal"
        cause = f"worker killed by signal {sig} ({name})"
        if sig == signal.SIGKILL:
            cause += ", e.g. by the kernel's out-of-memory killer"
        return cause
    if rc == 0:
        return "worker exited before finishing its points"
    return f"worker exited with status {rc}"


def _tail(log, lines: int = 4, chars: int = 600) -> str:
    """The worker's last words (engine asserts, Python errors), for the failure cause."""
    try:
        log.flush()
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - 8192))
        text = log.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    last = [x.strip() for x in text.splitlines() if x.strip()][-lines:]
    return f"; last output: {' | '.join(last)[-chars:]}" if last else ""


def _error_lines(log, keep: int = 3, chars: int = 800) -> str:
    """The last distinct lines of the worker's output that name an error."""
    try:
        log.flush()
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - 32768))
        text = log.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    found: list[str] = []
    for line in text.splitlines():
        m = re.search(r"\b(\w*(?:Error|Exception)): (.+)$", line)
        if m:
            msg = f"{m.group(1)}: {m.group(2).strip()}"
            if msg in found:
                found.remove(msg)
            found.append(msg)
    return " | ".join(found[-keep:])[-chars:]


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the worker's process group (the worker and any engine processes it spawned)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
