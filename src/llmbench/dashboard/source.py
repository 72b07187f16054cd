"""The dashboard's view of the store: loaded once, refreshed when the store changes.

Only the store is read (never a running benchmark). A refresh costs a directory scan; records
are re-read only for directories that changed (store/index.py), so the live app can poll.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from llmbench.report.data import Data, load
from llmbench.store.index import Index, signature


class Source:
    def __init__(self, root: Path | str, min_interval_s: float = 5.0, index: Index | None = None):
        self.root = Path(root)
        self.min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._data = load(self.root, index=index)
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
            if signature(self.root) == self._data.signature:
                return False
            self._data = load(self.root)
            self.version += 1
            return True
