"""How a point that did not measure is described: the one failed record of every point kind,
and the cause text of an exception (out of memory named as such, a short traceback else)."""

from __future__ import annotations

import sys
import traceback
from typing import Any

from llmbench.errors import LLMBenchError
from llmbench.store import Record


def failed_record(kind, point, run_id: str, ctx: Any, cause: str) -> Record:
    """A point's record skeleton (as its kind builds it) with status 'failed' and the cause."""
    rec = kind.base_record(point, run_id, ctx)
    rec.status, rec.error = "failed", cause
    return rec


def is_out_of_memory(e: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError (torch.OutOfMemoryError), MemoryError, or an engine's own
    out-of-memory message; checked by name so that torch is never imported for it."""
    names = {c.__name__ for c in type(e).__mro__}
    if "OutOfMemoryError" in names or isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return "out of memory" in text or "cuda_error_out_of_memory" in text


def describe(e: BaseException) -> str:
    if is_out_of_memory(e):
        first = (str(e).strip().splitlines() or [""])[0][:500]
        return f"out of memory: {type(e).__name__}: {first}"
    if isinstance(e, LLMBenchError):
        return f"{type(e).__name__}: {e}"
    tb = traceback.format_exception(type(e), e, e.__traceback__, limit=-3)
    return f"{type(e).__name__}: {e}\n" + "".join(tb)[-2000:]


def release_memory() -> None:
    """After a failed point (e.g. out of memory), hand cached device memory back before the
    next point; only when torch is already loaded (never import it for this)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            pass
