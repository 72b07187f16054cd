"""Start a real OpenAI-compatible engine server as a subprocess, and always stop it.

`launched(engine, model)` asks the engine (backends/) for its server's command line and health
route, picks a free loopback port, starts the server in its own process group (so its workers
die with it), waits until it answers its health route, yields its URL,
and on exit -- normal, exception, Ctrl-C or SIGTERM -- stops the whole group (SIGTERM, then
SIGKILL). The server's output goes to a log file whose tail is shown when it fails to start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from llmbench.backends.options import EngineOptions
from llmbench.errors import ServerNotStarted, SpecError, did_you_mean


@dataclass
class Launched:
    engine: str
    url: str
    pid: int
    command: list[str]
    version: str | None
    device: str
    log: Path
    startup_s: float = 0.0
    options: dict = field(default_factory=dict)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_engine(engine: str):
    """The engine class whose server `--launch engine` starts (SpecError when none)."""
    from llmbench.backends import engine_class, launchable

    names = launchable()
    if engine not in names:
        raise SpecError([("--launch", f"unknown engine {engine!r}{did_you_mean(engine, names)}; "
                                      f"one of {', '.join(names)}")])
    return engine_class(engine)


def _healthy(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _tail(path: Path, n: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def stop(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after the grace period."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:  # workers (vLLM's engine core) may outlive the leader: the group goes too
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


@contextmanager
def launched(engine: str, model: str, *, device: str = "cpu", extra_args: list[str] | None = None,
             ready_timeout_s: float = 300.0, log_dir: Path | None = None,
             options: EngineOptions | None = None) -> Iterator[Launched]:
    cls = server_engine(engine)
    cls.require_installed()
    port = free_port()
    cmd = cls.server_command(model, port, device, options)
    argv, env, health = cmd.argv + list(extra_args or []), cmd.env, cmd.health_path
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="llmbench-server-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{engine}-{port}.log"
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    with open(log, "wb") as logf:
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env}, start_new_session=True)
    # SIGTERM to us must still stop the server: turn it into the same path as Ctrl-C.
    prev = signal.getsignal(signal.SIGTERM)
    is_main = _is_main_thread()
    if is_main:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while not _healthy(url + health):
            if proc.poll() is not None:
                raise ServerNotStarted(f"{engine} server exited with status {proc.returncode} before "
                                       f"becoming healthy; log {log}, its end:\n{_tail(log, 10)}")
            if time.perf_counter() - t0 > ready_timeout_s:
                raise ServerNotStarted(f"{engine} server not healthy after {ready_timeout_s:.0f} s; "
                                       f"log {log}, its end:\n{_tail(log, 10)}")
            time.sleep(0.25)
        yield Launched(engine, url, proc.pid, argv, cls.installed_version(), device, log,
                       startup_s=time.perf_counter() - t0,
                       options={"launched": True, "server_args": _redact(argv[3:])})
    finally:
        stop(proc)
        if is_main:
            signal.signal(signal.SIGTERM, prev)


def _redact(args: list[str]) -> list[str]:
    from llmbench.measure.redact import redact_args

    return redact_args(args)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
