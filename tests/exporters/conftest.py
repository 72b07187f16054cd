"""A copy of the committed H200 records (every kind: inference, serving, training) as the
store the export tests read: real records, whatever fields their kinds carry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

H200 = Path(__file__).resolve().parents[2] / "results" / "h200"


@pytest.fixture
def h200_store(tmp_path) -> Path:
    dst = tmp_path / "results"
    shutil.copytree(H200, dst)
    return dst


@pytest.fixture
def small_store(tmp_path) -> Path:
    """Four records of each kind from the H200 store (an MLflow round trip per record costs
    several HTTP calls)."""
    dst = tmp_path / "small"
    for kind in ("inference", "serving", "training"):
        for p in sorted(H200.rglob(f"{kind}-*.json"))[:4]:
            (dst / p.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dst / p.parent.name / p.name)
    return dst
