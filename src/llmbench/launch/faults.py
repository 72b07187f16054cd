"""Test hook: make a worker crash, hang or run out of memory just before a named point.

LLMBENCH_FAULT_INJECT="segv@<point_key>|hang@<point_key>|oom@<point_key>|..." is read by the
isolated worker (never by the in-process runner), so tests and benchmarks/fault_soak.py can
prove that a real engine's crash costs only its point. The engine itself is never faked: the
fault happens in the worker process that holds the real, loaded engine.

Kinds: segv (a real NULL-pointer read: SIGSEGV), abort (SIGABRT), kill (SIGKILL, as the
kernel's OOM killer sends), exit (exit status 1 without a word), hang (sleep forever: the
per-point timeout must end it), oom (torch.cuda.OutOfMemoryError: a real over-sized CUDA
allocation when a GPU is present, else the same exception raised), raise (a Python error),
killgen (SIGKILL while the engine's generate() runs), killwrite (SIGKILL half-way through
writing the point's record: a torn temporary file is left, as a real kill would leave it).
"""

from __future__ import annotations

import os
import signal
import time

ENV = "LLMBENCH_FAULT_INJECT"
KINDS = ("segv", "abort", "kill", "exit", "hang", "oom", "raise", "killgen", "killwrite")


def plan(text: str | None = None) -> dict[str, str]:
    """'segv@k1|hang@k2' -> {'k1': 'segv', 'k2': 'hang'}; unknown kinds are refused loudly."""
    text = os.environ.get(ENV, "") if text is None else text
    out: dict[str, str] = {}
    for item in filter(None, (t.strip() for t in text.split("|"))):
        kind, _, key = item.partition("@")
        if kind not in KINDS or not key:
            raise ValueError(f"{ENV}: {item!r} is not KIND@POINT_KEY with KIND in {KINDS}")
        out[key] = kind
    return out


def inject(point) -> None:
    kind = plan().get(point.key)
    if kind is None:
        return
    if kind == "segv":
        import ctypes
        import faulthandler

        faulthandler.disable()  # let the signal kill the process as an engine's crash would
        ctypes.string_at(0)
    elif kind == "abort":
        os.abort()
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "exit":
        os._exit(1)
    elif kind == "hang":
        while True:
            time.sleep(3600)
    elif kind == "oom":
        import torch

        if torch.cuda.is_available():
            # Ask for far more than any GPU holds: the allocator raises the real error.
            torch.empty(1 << 50, dtype=torch.uint8, device="cuda")
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 1.00 PiB (injected by " + ENV + ")")
    elif kind == "raise":
        raise RuntimeError(f"fault injected by {ENV}")
    elif kind == "killgen":
        _kill_inside_generate(point)
        return
    elif kind == "killwrite":
        _kill_inside_record_write()
        return
    # a kill/abort that somehow returned must not pass for a measured point
    raise RuntimeError(f"fault {kind!r} injected by {ENV} did not take effect")


def _kill_inside_generate(point) -> None:
    """Wrap the engine's generate(): once it is running, another thread SIGKILLs the worker.
    The engine's work is native code that releases the GIL, so the kill lands inside it."""
    import threading

    from llmbench.backends import backend_class

    cls = backend_class(point.backend)
    real = cls.generate

    def generate(self, *args, **kwargs):
        threading.Thread(target=lambda: (time.sleep(0.005), os.kill(os.getpid(), signal.SIGKILL)),
                         daemon=True).start()
        return real(self, *args, **kwargs)

    cls.generate = generate


def _kill_inside_record_write() -> None:
    """The next record write writes half its temporary file, then the worker is SIGKILLed."""
    import tempfile

    from llmbench.store import store

    def torn_write(path, text: str, **_) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, _ = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        os.write(fd, text[:len(text) // 2].encode())
        os.fsync(fd)
        os.kill(os.getpid(), signal.SIGKILL)

    store.atomic_write_text = torn_write
