"""`llmbench export parquet` and its way back, `llmbench import parquet`."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from llmbench.store.record import Record
from llmbench.store.store import Store


def llmbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True, text=True)


def _docs(root: Path) -> dict[tuple, dict]:
    """The records of a store, by (run id, point key, created at), read straight from the files."""
    out = {}
    for p in sorted(root.rglob("*.json")):
        d = json.loads(p.read_text())
        if isinstance(d, dict) and "run_id" in d and "kind" in d:   # not a tool's own output
            out[(d["run_id"], d.get("point_key"), d["created_at"])] = d
    return out


def test_round_trip_gives_the_same_records_and_rows(h200_store, tmp_path):
    out = tmp_path / "x.parquet"
    r = llmbench("export", "parquet", str(h200_store), str(out))
    assert r.returncode == 0, r.stderr
    before = _docs(h200_store)
    assert f"wrote {len(before)} records" in r.stdout

    back = tmp_path / "back"
    r = llmbench("import", "parquet", str(out), "--results", str(back))
    assert r.returncode == 0, r.stderr
    after = _docs(back)
    # every field, samples included, under the same run ids (a record written by an older
    # llmbench comes back with today's schema's defaults for the fields it did not have)
    assert after.keys() == before.keys()
    for k, doc in before.items():
        assert after[k] == Record.model_validate(doc).model_dump(mode="json"), k
    # the same flat view: `results --format csv` of both stores, row for row (columns come in
    # the order the files are read, and file names are random: compare by name)
    def rows(root):
        text = llmbench("results", "--results", str(root), "--format", "csv").stdout
        return sorted((tuple(sorted((k, v) for k, v in r.items() if k != "path"))
                       for r in csv.DictReader(io.StringIO(text))))
    a, b = rows(h200_store), rows(back)
    assert len(a) == len(before)
    assert a == b


def test_reimport_writes_nothing_twice(h200_store, tmp_path):
    out = tmp_path / "x.parquet"
    assert llmbench("export", "parquet", str(h200_store), str(out)).returncode == 0
    back = tmp_path / "back"
    for _ in range(2):
        assert llmbench("import", "auto", str(out), "--results", str(back)).returncode == 0
    assert len(list(back.rglob("*.json"))) == len(_docs(h200_store))


def test_columns_are_the_results_columns_and_readable_by_duckdb(h200_store, tmp_path):
    out = tmp_path / "x.parquet"
    assert llmbench("export", "parquet", str(h200_store), str(out)).returncode == 0
    header = llmbench("results", "--results", str(h200_store), "--format", "csv").stdout.splitlines()[0]
    con = duckdb.connect()
    cols = [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM '{out}'").fetchall()]
    assert cols == [c for c in header.split(",") if c != "path"] + ["record_id", "record_json"]
    # a value read through DuckDB equals the one in the record file, found independently
    docs = _docs(h200_store)
    want = {k: d["metrics"]["output_throughput_tok_s"]["median"] for k, d in docs.items()
            if d["status"] == "ok" and "output_throughput_tok_s" in d["metrics"]}
    got = dict(((a, b, c), v) for a, b, c, v in con.execute(
        f"SELECT run_id, point_key, created_at, output_throughput_tok_s_median FROM '{out}' "
        "WHERE output_throughput_tok_s_median IS NOT NULL").fetchall())
    assert want and got == pytest.approx(want)


def test_where_filter_and_bad_destinations(h200_store, tmp_path):
    out = tmp_path / "t.parquet"
    r = llmbench("export", "parquet", str(h200_store), str(out), "--where", "kind='training'")
    assert r.returncode == 0, r.stderr
    n = sum(1 for d in _docs(h200_store).values() if d["kind"] == "training")
    assert n and f"wrote {n} records" in r.stdout
    r = llmbench("export", "parquet", str(h200_store), str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr
    r = llmbench("export", "parquet", str(tmp_path / "nope"), str(out))
    assert r.returncode == 2 and "not a results directory" in r.stderr
    not_ours = tmp_path / "other.parquet"
    duckdb.sql(f"COPY (SELECT 1 AS a) TO '{not_ours}' (FORMAT parquet)")
    r = llmbench("import", "parquet", str(not_ours), "--results", str(tmp_path / "b"))
    assert r.returncode == 2 and "record_json" in r.stderr
    assert not Store(tmp_path / "b").paths()


@pytest.mark.parametrize("keep", [0, 4, 100, 0.5, -8])
def test_a_cut_or_damaged_file_is_one_message(h200_store, tmp_path, keep):
    out = tmp_path / "x.parquet"
    assert llmbench("export", "parquet", str(h200_store), str(out)).returncode == 0
    data = out.read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else keep
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(data[:n] if n >= 0 else data[:n] + b"\0" * 8)
    r = llmbench("import", "parquet", str(bad), "--results", str(tmp_path / "b"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert not Store(tmp_path / "b").paths()
