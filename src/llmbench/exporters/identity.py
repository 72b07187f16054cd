"""A record's identity outside the store: what a re-export or a re-import recognises.

A record file's name is random (store.Store.write) and changes when a record is imported
again; the fields that say which measurement it is do not."""

from __future__ import annotations

import hashlib
from typing import Any


def record_id(doc: dict[str, Any]) -> str:
    """sha256 of kind, run id, point key and creation time: equal for the same measurement,
    wherever its file lives and whatever annotations were added since."""
    parts = [str(doc.get(k) or "") for k in ("kind", "run_id", "point_key", "created_at")]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
