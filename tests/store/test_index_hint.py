"""A cold build that parses many records no sidecar covers says, in one line, which command
gives them one (`llmbench index`); a store whose records sidecars cover says nothing."""

import json
import os

import pytest

from llmbench.cli import main
from llmbench.store import index
from llmbench.store.index import HINT_MIN_RECORDS, load_index


@pytest.fixture
def store(tmp_path, monkeypatch):
    """HINT_MIN_RECORDS records, 100 a run, no sidecars; a cache of our own."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "res"
    for i in range(HINT_MIN_RECORDS):
        d = root / f"run-{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"inference-{i}.json").write_text(json.dumps(
            {"run_id": d.name, "point_key": f"p{i}", "kind": "inference", "status": "ok",
             "workload": {"batch_size": i % 8}, "metrics": {}}))
    return root


def _cold_hints(root, capsys):
    index.index_path(root).unlink(missing_ok=True)
    capsys.readouterr()
    load_index(root)
    return [ln for ln in capsys.readouterr().err.splitlines() if "llmbench index" in ln]


def test_an_uncovered_store_names_the_command_once(store, capsys):
    assert _cold_hints(store, capsys) == [
        f"llmbench: note: {HINT_MIN_RECORDS:,} records had no sidecar and were parsed in full; "
        f"run once: llmbench index --results {store.resolve()}"]
    load_index(store)  # a warm load, or a catch-up, parses few records: no hint
    extra = json.loads((store / "run-000" / "inference-0.json").read_text())
    (store / "run-000" / "inference-extra.json").write_text(json.dumps({**extra, "point_key": "x"}))
    load_index(store)
    assert "llmbench index" not in capsys.readouterr().err
    main(["index", "--results", str(store)])
    assert _cold_hints(store, capsys) == []


def test_below_the_threshold_no_hint(store, capsys):
    index.write_sidecar(store / "run-000")  # 100 records covered: fewer than the threshold left
    assert _cold_hints(store, capsys) == []


def test_a_store_this_user_cannot_write_gets_no_hint(store, capsys, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if mode == os.W_OK else real(p, mode, **k))
    assert _cold_hints(store, capsys) == []
