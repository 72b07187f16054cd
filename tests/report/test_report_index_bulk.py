"""The index built by DuckDB (store/bulk.py) holds the rows that parsing every record in Python
gives, and a store changed after its index was built is caught up (added, changed, deleted)."""

import json
import math
import os
import threading
import time
import warnings
from pathlib import Path

import pytest

from report_records import own_records, reference_records

from llmbench.store import bulk, index
from llmbench.store.index import load_index, read_table
from llmbench.store.store import Store, flatten


def _expected(paths):
    """Every record file parsed here with the json module, flattened by store.flatten (the one
    definition of a row): path -> row, and the metric and workload names."""
    rows, metrics, workload = {}, set(), set()
    for p in paths:
        try:
            doc = json.loads(Path(p).read_bytes())
        except ValueError:
            continue
        if isinstance(doc, dict) and "run_id" in doc and "kind" in doc:
            rows[p] = flatten(doc, path=Path(p))
            metrics |= {k for k, v in (doc.get("metrics") or {}).items() if isinstance(v, dict)}
            workload |= set(doc.get("workload") or {})
    return rows, metrics, workload


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def _check(table, want_rows, paths, differ=()):
    got = {r["path"]: r for r in table.to_pylist()}
    assert sorted(got) == sorted(want_rows)
    if paths is not None:  # read_table's rows are sorted by path (an index's need not be)
        assert table.column("path").to_pylist() == sorted(want_rows)
    cols = set().union(*(r.keys() for r in want_rows.values()))
    assert set(table.column_names) == cols | {"_mtime_ns", "_size"}
    # A column of mixed types, or of an integer past int64, is text (str() of each value), as
    # the Python path makes it.
    def mixed(c):
        vals = [v for r in want_rows.values() if (v := r.get(c)) is not None]
        types = {type(v) for v in vals}
        return (len(types) > 1 and not types <= {int, float}) or \
            any(type(v) is int and not -2 ** 63 <= v < 2 ** 63 for v in vals)
    mixed = {c for c in cols if mixed(c)}
    for p, want in want_rows.items():
        st = os.stat(p)
        assert got[p]["_mtime_ns"] == st.st_mtime_ns and got[p]["_size"] == st.st_size
        for c in cols - set(differ):
            w, g = want.get(c), got[p][c]
            if w is None:
                assert g is None, (p, c, g)
            elif c in mixed:
                assert g == str(w), (p, c, g, w)
            elif isinstance(w, int) and not isinstance(w, bool) and isinstance(g, float):
                assert g == float(w), (p, c)  # a column of ints and floats is double
            else:
                assert _same(g, w), (p, c, g, w)
    return got


def _irregular_store(root: Path) -> list[str]:
    """Records and files that exercise every rule of flatten the DuckDB reader mirrors."""
    store = Store(root)
    recs = reference_records()[:6] + own_records()[:6]
    recs[0].workload["kv_cache_dtype"] = 8          # 8 here, 'auto' elsewhere: a text column
    recs[1].workload["flag"] = True                 # a boolean column
    recs[2].workload["flag"] = None
    recs[3].workload["shape"] = [1, 2]              # not a scalar: a workload name, no column
    recs[4].workload["shape"] = "1x2"               # ... a scalar in another record
    recs[5].workload["bigint"] = 2 ** 70            # past 64 bits: the one known difference
    recs[6].backend.options = {"loop": "step", "threads": 4, "none": None}
    recs[7].backend.options = {"loop": "graph", "threads": 2}
    recs[7].workload["threads"] = 2                 # said by the workload: no opt_threads here
    recs[8].workload["mixed_num"] = 3               # an int here, a float there: double
    recs[9].workload["mixed_num"] = 2.5
    paths = [str(store.write(r)) for r in recs]
    d = root / "hand"
    d.mkdir()
    docs = {
        "odd_metrics.json": {"run_id": "h", "kind": "inference", "status": "ok",
                             "metrics": {"x_s": {"mean": 1, "p50": "n/a", "std": None},
                                         "y_s": 3, "z_s": {}},
                             "roofline": {"bound": {"x_s": 2.0}, "efficiency": "bad",
                                          "binding_resource": "hbm"},
                             "backend": "not an object", "env": {"contention": {"contended": True}},
                             "source": {"tool": "vllm-bench"}, "workload": {"batch_size": "auto"}},
        "not_a_record.json": {"run_id": "h"},
        "a_list.json": [1, 2, 3],
    }
    for name, doc in docs.items():
        (d / name).write_text(json.dumps(doc))
    (d / "nan.json").write_text('{"run_id": "h", "kind": "inference", "metrics": '
                                '{"x_s": {"mean": NaN}}}')  # not JSON, but both read it
    (d / "torn.json").write_text('{"run_id": "h", "ki')
    (d / "latin1.json").write_bytes(b'{"run_id": "\xe9", "kind": "x"}')
    return paths + [str(p) for p in sorted(d.iterdir())]


def test_duckdb_rows_equal_rows_parsed_in_python(tmp_path):
    paths = _irregular_store(tmp_path)
    want, want_metrics, want_workload = _expected(paths)
    # The DuckDB reader itself reads these (no fallback to Python for the whole set) and
    # leaves only the files it cannot parse as JSON to Python.
    f = index._Files(sorted(paths))
    table, metrics, workload, left = bulk.read_rows([f], index._array)
    assert sorted(Path(f.paths[i]).name for i in left) == ["latin1.json", "torn.json"]
    assert table.num_rows == len(want)
    m, w = set(), set()
    with pytest.warns(UserWarning, match="unreadable record"):
        got_table = read_table(paths, m, w, bulk=True)
    # An integer literal past 64 bits is text in Python (pa.array cannot hold it) and a double
    # in DuckDB (json_structure calls it DOUBLE): documented in store/bulk.py.
    got = _check(got_table, want, paths, differ=["bigint"])
    assert [v for v in got_table.column("bigint").to_pylist() if v] == [float(2 ** 70)]
    assert m == want_metrics and w == want_workload
    assert "x_s" in m and "z_s" in m and "y_s" not in m
    # Known values, read off the documents above.
    by_name = {Path(p).name: r for p, r in got.items()}
    assert by_name["odd_metrics.json"]["x_s_p50"] == "n/a" and by_name["odd_metrics.json"]["x_s_mean"] == 1.0  # NaN elsewhere: double
    assert by_name["odd_metrics.json"]["batch_size"] == "auto"
    assert by_name["odd_metrics.json"]["source_tool"] == "vllm-bench"
    assert by_name["odd_metrics.json"]["contended"] is True
    assert by_name["odd_metrics.json"]["backend"] is None
    assert math.isnan(by_name["nan.json"]["x_s_mean"])
    assert got_table.column("x_s_std").null_count == got_table.num_rows  # present, always null
    opt = {r["opt_loop"]: r["opt_threads"] for r in got.values() if r.get("opt_loop")}
    assert opt == {"step": 4, "graph": None}
    assert "opt_none" not in got_table.column_names
    # the six reference records say 'auto', the first now 8; the own ones have no such field
    assert sorted(v for v in got_table.column("kv_cache_dtype").to_pylist() if v) == ["8"] + ["auto"] * 5
    assert sorted(v for v in got_table.column("shape").to_pylist() if v) == ["1x2"]
    assert sorted(v for v in got_table.column("mixed_num").to_pylist() if v) == [2.5, 3.0]
    # And the same table as the Python path, column types included.
    py = read_table([p for p in paths if not p.endswith(("latin1.json", "torn.json"))],
                    set(), set(), bulk=False)
    assert {f.name: f.type for f in py.schema if f.name != "bigint"} == \
        {f.name: f.type for f in got_table.schema if f.name != "bigint"}


def test_a_column_fed_from_two_places_is_parsed_in_python(tmp_path):
    """A workload field named like a row's own column (`model`): flatten lets the workload's
    value win; the DuckDB reader does not guess, it hands the files to Python."""
    store = Store(tmp_path)
    recs = reference_records()[:3]
    recs[0].workload["model"] = "from-workload"
    paths = [str(store.write(r)) for r in recs]
    f = index._Files(sorted(paths))
    with pytest.raises(bulk.Irregular):
        bulk.read_rows([f], index._array)
    got = _check(read_table(paths, set(), set(), bulk=True), _expected(paths)[0], paths)
    assert "from-workload" in {r["model"] for r in got.values()}


def _age(root, seconds=3600):
    t = time.time_ns() - seconds * 1_000_000_000
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        os.utime(d, ns=(t, t))


@pytest.mark.parametrize("bulk_min", [0, 10 ** 9], ids=["duckdb", "python"])
def test_changed_store_is_caught_up(tmp_path, monkeypatch, bulk_min):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(index, "BULK_MIN_FILES", bulk_min)
    root = tmp_path / "s"
    store = Store(root)
    recs = reference_records()[:8]
    paths = [store.write(r) for r in recs]
    _age(root)
    first = load_index(root)
    _check(first.table, _expected([str(p.resolve()) for p in paths])[0], None)

    read = []
    real = index.read_table
    monkeypatch.setattr(index, "read_table", lambda ps, *a, **k: read.append(sorted(ps)) or real(ps, *a, **k))
    added = store.write(own_records()[0])                   # added
    paths[0].unlink()                                        # deleted
    rec = reference_records()[1]                             # changed (by rename, as the store does)
    rec.metrics["batch_latency_s"].mean = 123.0
    tmp = paths[1].with_suffix(".tmp")
    tmp.write_text(rec.model_dump_json())
    os.replace(tmp, paths[1])
    now = [added] + paths[1:]
    idx = load_index(root)
    want = _expected([str(p.resolve()) for p in now])[0]
    got = _check(idx.table, want, None)
    assert got[str(paths[1].resolve())]["batch_latency_s_mean"] == 123.0
    assert str(paths[0].resolve()) not in got
    # Only what changed was read again: the new file and the rewritten one.
    assert read == [sorted([str(added.resolve()), str(paths[1].resolve())])]
    assert "ttft_s" in idx.metrics  # the own record's metric joins the names


def test_rows_read_over_many_arrow_batches_keep_path_order(tmp_path, monkeypatch):
    """DuckDB scans the files as Arrow batches in parallel (bulk._BATCH rows each): rows from
    several batches and structures come back in path order, equal to flatten's."""
    monkeypatch.setattr(bulk, "_BATCH", 3)
    paths = _irregular_store(tmp_path)
    good = [p for p in paths if not p.endswith(("latin1.json", "torn.json"))]
    want = _expected(good)[0]
    assert len(want) > 3 * bulk._BATCH
    _check(read_table(good, set(), set(), bulk=True), want, good, differ=["bigint"])


@pytest.mark.parametrize("chunk_files", [1, 4])
def test_files_read_in_chunks_give_the_rows_of_one_read(tmp_path, monkeypatch, chunk_files):
    """The structures are found a chunk of files at a time (index.CHUNK_FILES) while the next
    chunk is read: a field typed differently in two chunks (8 in one, 'auto' in others), files
    DuckDB cannot read among them, and still flatten's rows in path order."""
    monkeypatch.setattr(index, "CHUNK_FILES", chunk_files)
    paths = _irregular_store(tmp_path)
    read = threading.Event()
    with pytest.warns(UserWarning, match="unreadable record"):
        got = read_table(paths, set(), set(), bulk=True, read=read)
    assert read.is_set()
    _check(got, _expected(paths)[0], paths, differ=["bigint"])


def test_a_bulk_read_that_fails_on_one_chunk_is_parsed_in_python(tmp_path, monkeypatch):
    """DuckDB failing on one chunk's structures (a file removed while read, say): every file
    is still read, and every row parsed in Python."""
    import duckdb

    monkeypatch.setattr(index, "CHUNK_FILES", 3)
    monkeypatch.setattr(bulk, "ARROW_FIRST", False)  # these records Arrow's reader would take
    real, calls = bulk._structures, []

    def second_fails(con, files):
        calls.append(files.num_rows)
        if len(calls) == 2:
            raise duckdb.IOException("gone")
        return real(con, files)

    monkeypatch.setattr(bulk, "_structures", second_fails)
    store = Store(tmp_path)
    paths = [str(store.write(r)) for r in reference_records()[:8] + own_records()[:4]]
    got = read_table(paths, set(), set(), bulk=True)
    assert len(calls) >= 2
    _check(got, _expected(paths)[0], paths)


REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "llm-inference-bench"


@pytest.mark.skipif(not REF.is_dir(), reason=f"the published LLM-Inference-Bench data is not at {REF}")
def test_the_published_data_reads_the_same_in_duckdb_and_in_python(tmp_path):
    """The 6,140 imported records: 37 structures, 212 columns, many only in some structures
    (the columns DuckDB's rows take by structure)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "llmbench", "import", "llm-inference-bench", str(REF),
                        "--results", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    paths = [str(p) for p in tmp_path.rglob("*.json")]
    assert len(paths) > 6000
    got = read_table(paths, set(), set(), bulk=True)
    want = read_table(paths, set(), set(), bulk=False)
    assert {f.name: f.type for f in got.schema} == {f.name: f.type for f in want.schema}
    assert [c for c in want.column_names if got.column(c).to_pylist() != want.column(c).to_pylist()] == []


def _arrow_used(monkeypatch) -> list[bool]:
    """Whether each bulk read was Arrow's one pass (True) or gave way to DuckDB's (False)."""
    used, real = [], bulk._duckdb_rows
    monkeypatch.setattr(bulk, "_duckdb_rows", lambda *a, **k: used.append(False) or real(*a, **k))
    real_from = bulk._from_arrow
    monkeypatch.setattr(bulk, "_from_arrow", lambda *a: (r := real_from(*a)) and (used.append(True) or r))
    return used


def _regular_store(root: Path, compact: bool) -> list[str]:
    """Records Arrow's reader takes: written by the store (indent=1) or one line each; an int in
    one chunk and a float in another, a field null in some records and text in others, absent
    and empty sections, a stat present and always null."""
    recs = reference_records()[:6] + own_records()[:6]
    recs[0].workload["mixed_num"] = 3
    recs[11].workload["mixed_num"] = 2.5
    recs[1].workload["maybe"] = None
    recs[10].workload["maybe"] = "text"
    recs[2].backend.options = {"loop": "step", "threads": 4, "none": None}
    recs[3].backend.options = {}
    if not compact:
        return [str(Store(root).write(r)) for r in recs]
    paths = []
    for i, r in enumerate(recs):
        doc = json.loads(r.model_dump_json())
        if i == 4:
            doc["metrics"]["extra_s"] = {"mean": 1, "std": None}
            doc.pop("roofline", None)
        p = root / f"r{i:02d}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("chunk_files", [4, 8192])
def test_arrow_one_pass_gives_flatten_rows(tmp_path, monkeypatch, compact, chunk_files):
    monkeypatch.setattr(index, "CHUNK_FILES", chunk_files)
    used = _arrow_used(monkeypatch)
    paths = _regular_store(tmp_path, compact)
    want, want_metrics, want_workload = _expected(paths)
    m, w = set(), set()
    got = read_table(paths, m, w, bulk=True)
    assert used == [True]
    _check(got, want, paths)
    assert m == want_metrics and w == want_workload
    py = read_table(paths, set(), set(), bulk=False)
    assert {f.name: f.type for f in py.schema} == {f.name: f.type for f in got.schema}
    assert [c for c in py.column_names if got.column(c).to_pylist() != py.column(c).to_pylist()] == []


@pytest.mark.parametrize("case, arrow", [
    ("timestamp_workload", False), ("int_and_text", False),
    ("bool_and_int", False), ("object_stat", False), ("null_run_id", False), ("two_objects", False),
    ("kind_not_at_top", False),
    # files that are no record object are left to Python, the others still read by Arrow
    ("tool_output", True), ("torn", True), ("list_root", True), ("bom", True), ("empty", True),
    # an engine option named like a workload field: rows that may lack it left to Python
    ("option_named_like_workload", True), ("option_and_null_workload_field", True)])
def test_arrow_gives_way_where_its_merged_structure_is_not_flattens(tmp_path, monkeypatch, case,
                                                                    arrow):
    """What Arrow's one merged structure cannot tell (or cannot read) goes to DuckDB's passes,
    whose rows are flatten's; a file that cannot be a record, or is not one object, to Python."""
    monkeypatch.setattr(index, "CHUNK_FILES", 4)
    used = _arrow_used(monkeypatch)
    paths = _regular_store(tmp_path, compact=True)
    doc = json.loads(Path(paths[5]).read_text())
    extra = tmp_path / "zz.json"
    if case == "timestamp_workload":
        doc["workload"]["date"] = "2026-01-01"
    elif case == "option_named_like_workload":  # here the workload has it: no opt_batch_size
        doc["backend"]["options"] = {"batch_size": 3}
        other = json.loads(Path(paths[6]).read_text())  # here it has none: opt_batch_size
        del other["workload"]["batch_size"]
        other["backend"]["options"] = {"batch_size": 5}
        Path(paths[6]).write_text(json.dumps(other))
    elif case == "option_and_null_workload_field":  # null, not absent: no opt_batch_size
        doc["workload"]["batch_size"] = None
        doc["backend"]["options"] = {"batch_size": 3}
    elif case == "int_and_text":
        doc["workload"]["batch_size"] = "auto"
    elif case == "bool_and_int":
        doc["workload"]["batch_size"] = True
    elif case == "object_stat":
        doc["metrics"]["ttft_s"] = {"mean": {"a": 1}}
    elif case == "null_run_id":
        doc["run_id"] = None
    elif case == "kind_not_at_top":
        doc = {"run_id": "x", "backend": {"kind": "y"}, "metrics": {"other_s": {"mean": 1}}}
    elif case == "tool_output":
        doc = {"date": "2026-01-01", "backend": "vllm", "metrics": {"other_s": {"mean": "x"}}}
    text = json.dumps(doc)
    if case == "torn":
        text = text[:50]
    elif case == "list_root":
        text = "[1, 2]"
    elif case == "bom":
        text = "\ufeff" + text
    elif case == "empty":
        text = ""
    elif case == "two_objects":
        text = text + " " + text
    extra.write_text(text)
    paths.append(str(extra))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unreadable files)
        got = read_table(paths, m := set(), w := set(), bulk=True)
    assert used == [arrow]
    want, want_metrics, want_workload = _expected(paths)
    _check(got, want, paths)
    assert m == want_metrics and w == want_workload


def test_a_chunk_is_parsed_on_one_core_while_files_are_still_read(tmp_path, monkeypatch):
    """The reading thread keeps a core: chunks parsed before every file is read use one
    thread (use_threads=False), the ones after all of them; the rows are the same."""
    import pyarrow.json as pj

    monkeypatch.setattr(index, "CHUNK_FILES", 4)
    paths = _regular_store(tmp_path, compact=True)
    want, _, _ = _expected(paths)
    seen, real = [], pj.read_json

    def read_json(*a, read_options=None, **kw):
        seen.append(read_options.use_threads)
        return real(*a, read_options=read_options, **kw)

    monkeypatch.setattr(pj, "read_json", read_json)
    chunks = [index._Files(paths[i:i + 4]) for i in range(0, len(paths), 4)]
    assert len(chunks) >= 3

    def reading():  # each chunk handed over once the one before it is parsed
        for k, c in enumerate(chunks):
            while len(seen) < k:
                time.sleep(0.001)
            yield c

    table, _, _, left = bulk.read_rows(reading(), index._array)
    assert left == [] and seen[:len(chunks) - 1] == [False] * (len(chunks) - 1)
    _check(table, want, None)
    # parsed on its own, a chunk uses every core; with an event, once it is set
    ev = threading.Event()
    for given, threads in ((None, True), (ev, False)):
        seen.clear()
        bulk._arrow_chunk(chunks[0].data, given)
        assert seen == [threads]
    ev.set()
    seen.clear()
    bulk._arrow_chunk(chunks[0].data, ev)
    assert seen == [True]
