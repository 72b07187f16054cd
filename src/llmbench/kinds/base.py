"""What every kind's configs and points share: strictness and the point key.

A point key names a point across runs (resume, --redo-failed, dedup): it is stored in every
record, so its recipe never changes (sha256 of the sorted JSON, 16 hex digits)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A config or point: an unknown field is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class Frozen(Strict):
    """A Strict value that never changes once built (points, hashable as dict keys)."""

    model_config = ConfigDict(frozen=True)


def point_key(identity: Any) -> str:
    """The key of a point from what identifies it (JSON-able; other values by their str)."""
    blob = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
