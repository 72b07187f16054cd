"""The DuckDB reader's rows come in file order (store/bulk.py reads them without ORDER BY and
checks the order instead): known answers, and the reader's rows with DuckDB free to reorder."""

import json
from pathlib import Path

import duckdb
import pyarrow as pa

from llmbench.store import bulk
from llmbench.store.index import read_table
from llmbench.store.store import flatten


def test_rows_out_of_order_are_put_in_file_order():
    t = pa.table({"i": [3, 0, 2, 1], "path": ["d", "a", "c", "b"],
                  "d": pa.array([{"x": 3}, {"x": 0}, {"x": 2}, {"x": 1}])})
    got = bulk._in_order(t)
    assert got.column("i").to_pylist() == [0, 1, 2, 3]
    assert got.column("path").to_pylist() == ["a", "b", "c", "d"]
    assert got.column("d").to_pylist() == [{"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}]


def test_rows_in_order_are_left_as_they_are():
    t = pa.table({"i": [0, 2, 5], "path": ["a", "b", "c"]})
    assert bulk._in_order(t) is t
    one = pa.table({"i": [7], "path": ["a"]})
    assert bulk._in_order(one) is one and bulk._in_order(one.slice(0, 0)).num_rows == 0


def test_rows_keep_path_order_when_duckdb_may_reorder(tmp_path, monkeypatch):
    """One file per Arrow batch, four threads and insertion order not kept: the rows still
    come in path order, each flatten's row of its file."""
    real = duckdb.connect

    def connect(*a, **k):
        con = real(*a, **k)
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET threads = 4")
        return con

    monkeypatch.setattr(duckdb, "connect", connect)
    monkeypatch.setattr(bulk, "_BATCH", 1)
    docs = [{"run_id": f"r{i}", "kind": "inference", "point_key": f"p{i}",
             "workload": {"batch_size": i}, "metrics": {"ttft_s": {"mean": i / 10}}}
            for i in range(60)]
    paths = []
    for i, d in enumerate(docs):
        p = tmp_path / f"{i:03d}.json"
        p.write_text(json.dumps(d))
        paths.append(str(p))
    got = read_table(paths, set(), set(), bulk=True)
    assert got.column("path").to_pylist() == sorted(paths)
    want = [flatten(d, path=Path(p)) for p, d in zip(paths, docs)]
    assert got.column("batch_size").to_pylist() == [r["batch_size"] for r in want]
    assert got.column("ttft_s_mean").to_pylist() == [r["ttft_s_mean"] for r in want]
    assert got.column("point_key").to_pylist() == [r["point_key"] for r in want]
