"""Where llmbench keeps what it writes once and reuses: synthetic models, measured peaks, the
store's index. LLMBENCH_CACHE overrides the platform's user cache directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("LLMBENCH_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("llmbench"))


def atomic_dir(target: Path, build: Callable[[Path], None], done: str) -> None:
    """Build `target` in a temporary folder beside it, then rename it into place, so a
    concurrent or interrupted writer never leaves half of it. A writer that loses the race
    to another keeps the winner's folder when it holds the `done` file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        build(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / done).is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
