"""Where llmbench keeps what it writes once and reuses: synthetic models, measured peaks, the
store's index. LLMBENCH_CACHE overrides the platform's user cache directory."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("LLMBENCH_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("llmbench"))
