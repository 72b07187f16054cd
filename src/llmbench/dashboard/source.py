"""The dashboard's view of the store: loaded once, refreshed when the store changes.

Only the store is read (never a running benchmark). A refresh costs a directory scan; records
are re-read only for directories that changed (store/index.py), so the live app can poll.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from llmbench.report.data import Data, load


class Source:
    def __init__(self, root: Path | str, min_interval_s: float = 5.0):
        self.root = Path(root)
        self.min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._data = load(self.root)
        self._checked = time.monotonic()
        self.version = 0

    @property
    def data(self) -> Data:
        return self._data

    def refresh(self) -> bool:
        """Reload if the store changed; True when it did. Rate-limited: cheap to call often."""
        with self._lock:
            if time.monotonic() - self._checked < self.min_interval_s:
                return False
            self._checked = time.monotonic()
            new = load(self.root)
            if len(new.df) == len(self._data.df) and _same(new, self._data):
                return False
            self._data = new
            self.version += 1
            return True


def _same(a: Data, b: Data) -> bool:
    if "path" not in a.df.columns or "path" not in b.df.columns:
        return a.df.empty and b.df.empty
    ka = a.df[["path", "_mtime_ns"]].sort_values("path").to_numpy().tolist()
    kb = b.df[["path", "_mtime_ns"]].sort_values("path").to_numpy().tolist()
    return ka == kb
