"""A run directory's sidecar (store/sidecar.py) changes how fast a cold index build is, never
what it holds: the index built with sidecars equals the one built by parsing every record file
(sidecars ignored), whatever was added, rewritten or removed since a sidecar was written."""

import json
import math
import os

import pytest

from llmbench.store import index, sidecar
from llmbench.store.index import load_index
from llmbench.store.store import Store
from llmbench.store.record import Record


def _doc(run, i, workload=None, **extra):
    doc = {"run_id": run, "point_key": f"p{i}", "kind": "inference", "status": "ok",
           "created_at": "2026-12-03T00:00:00+00:00",
           "backend": {"name": "vllm", "version": "0.9", "options": {"loop": "graph"}},
           "model": {"name": "m", "params": 7_000_000_000}, "hardware": {"name": "H200", "count": 1},
           "workload": {"batch_size": i, "input_len": 128, **(workload or {})},
           "metrics": {"batch_latency_s": {"unit": "s", "n": 3, "mean": 0.5 + i, "p99": 0.9,
                                           "ci95_low": None}}}
    doc.update(extra)
    return doc


def _reference(run, i):
    return {"run_id": run, "point_key": f"r{i}", "kind": "reference", "status": "ok",
            "source": {"tool": "paper"}, "workload": {"batch_size": i, "precision": "fp8"},
            "metrics": {"ttft_s": {"unit": "s", "median": 0.01 * i, "client_limited": i % 2 == 0}},
            "tool_figures": {"tput": {"mean": 10.0 * i, "label": "tok/s"}},
            "roofline": {"bound": {"ttft_s": 0.001}, "efficiency": {"ttft_s": 0.5}, "version": 2}}


def _write(d, name, doc):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(doc))
    return d / name


def _store(root):
    """Runs of several record structures, columns whose types differ within a run and between
    runs, a file that is no record; every run but one ends with its sidecar."""
    runs = {
        # kv_cache_dtype: an integer in one run, text in another; within run c, both
        "a": [_doc("a", i, {"kv_cache_dtype": 8, "scale": 1}) for i in range(4)],
        "b": [_doc("b", i, {"kv_cache_dtype": "auto", "scale": 2.5, "flag": True}) for i in range(3)]
             + [_reference("b", i) for i in range(3)],
        "c": [_doc("c", i, {"kv_cache_dtype": 16 if i % 2 else "fp8", "scale": i if i else 0.5,
                            "big": 2 ** 70 if i == 1 else 3})
              for i in range(4)],
        "d": [_doc("d", i, {"flag": 1}, error="boom", status="failed") for i in range(2)],
        "nosidecar": [_doc("nosidecar", i, {"extra": "x"}) for i in range(3)],
    }
    for run, docs in runs.items():
        for i, doc in enumerate(docs):
            _write(root / run, f"{doc['kind']}-{i}.json", doc)
    _write(root / "a", "notes.json", {"not": "a record"})
    for run in runs:
        if run != "nosidecar":
            index.write_sidecar(root / run)
    return runs


def _full(root):
    """The index built by parsing every file: sidecars ignored, no cached index."""
    index.index_path(root).unlink(missing_ok=True)
    real = sidecar.read_sidecar
    sidecar.read_sidecar = lambda d, version: None
    try:
        return load_index(root, save=False)
    finally:
        sidecar.read_sidecar = real


def _cold(root):
    index.index_path(root).unlink(missing_ok=True)
    return load_index(root, save=False)


def _same_index(got, want, bulk=False):
    # DuckDB reads an integer past int64 as a double, Python as text (store/bulk.py): a
    # difference of the two parsers, not of the sidecars
    if bulk and "big" in want.table.column_names:
        got, want = (index.Index(i.table.drop_columns(["big"]), i.metrics, i.workload, i.dirs)
                     for i in (got, want))
    assert got.table.schema.names and sorted(got.table.schema.names) == sorted(want.table.schema.names)
    for c in want.table.column_names:  # the same Arrow type, column by column
        assert got.table.schema.field(c).type == want.table.schema.field(c).type, c
    rows = lambda t: sorted(t.select(sorted(t.column_names)).to_pylist(), key=lambda r: r["path"])
    for g, w in zip(rows(got.table), rows(want.table), strict=True):
        for c in w:
            same = (isinstance(g[c], float) and math.isnan(g[c]) and math.isnan(w[c])) or \
                (g[c] == w[c] and type(g[c]) is type(w[c]))
            assert same, (w["path"], c, g[c], w[c])
    assert got.metrics == want.metrics and got.workload == want.workload
    assert got.table.column("path").to_pylist() == sorted(got.table.column("path").to_pylist())


class _Reads(list):
    bulk = False


@pytest.fixture(params=[True, False], ids=["duckdb", "python"])
def parsed(request, monkeypatch, tmp_path):
    """Files no sidecar covers are parsed by DuckDB or in Python (`bulk`); the paths each
    parse was given; a cache of our own."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(index, "BULK_MIN_FILES", 0 if request.param else 10 ** 9)
    reads = _Reads()
    real = index.read_table
    monkeypatch.setattr(index, "read_table",
                        lambda paths, *a, **k: (reads.append(sorted(paths)), real(paths, *a, **k))[1])
    reads.bulk = request.param
    return reads


def test_sidecar_rows_equal_a_full_parse(tmp_path, parsed):
    root = tmp_path / "res"
    runs = _store(root)
    want = _full(root)
    assert want.table.num_rows == sum(len(v) for v in runs.values())
    # run c's columns of mixed types are kept as JSON text, converted with the other runs'
    assert sidecar.read_sidecar(str(root / "c"), index.INDEX_VERSION)[1] == {"kv_cache_dtype", "scale", "big"}
    parsed.clear()
    _same_index(_cold(root), want, parsed.bulk)
    # only what no sidecar covers was parsed: the run without one, the file that is no record
    assert parsed == [sorted([str((root / "a" / "notes.json").resolve())]
                             + [str(p.resolve()) for p in (root / "nosidecar").glob("*.json")])]


def test_changed_files_are_read_and_removed_ones_drop_out(tmp_path, parsed):
    root = tmp_path / "res"
    _store(root)
    added = _write(root / "a", "hand-added.json", _doc("a", 9, {"kv_cache_dtype": "int4", "new": 1}))
    rewritten = root / "b" / "inference-0.json"
    rewritten.write_text(json.dumps(_doc("b", 0, {"kv_cache_dtype": 4, "scale": "x"})))
    os.utime(rewritten, ns=(1, 1))  # (a rewrite within the mtime tick: the size still differs)
    (root / "c" / "inference-1.json").unlink()  # the only record with an integer past int64
    want = _full(root)
    parsed.clear()
    _same_index(_cold(root), want, parsed.bulk)
    assert str(added.resolve()) in parsed[0] and str(rewritten.resolve()) in parsed[0]
    assert "new" in want.workload and want.table.num_rows == 19


def test_stale_or_corrupt_sidecars_are_ignored(tmp_path, parsed, monkeypatch):
    root = tmp_path / "res"
    _store(root)
    (root / "a" / sidecar.SIDECAR).write_bytes(b"not arrow")
    (root / "d" / sidecar.SIDECAR).write_bytes(b"")
    monkeypatch.setattr(index, "INDEX_VERSION", "older")
    index.write_sidecar(root / "c")  # written by an llmbench whose rows were other ones
    monkeypatch.undo()  # (also drops the fixture's patches: set the ones this test needs again)
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    want = _full(root)
    _same_index(_cold(root), want, parsed.bulk)
    for run in "acd":
        assert sidecar.read_sidecar(str(root / run), index.INDEX_VERSION) is None


def test_a_catch_up_reads_new_runs_sidecars(tmp_path, parsed):
    root = tmp_path / "res"
    _store(root)
    load_index(root)  # cached
    docs = [_doc("late", i, {"kv_cache_dtype": 2.5}) for i in range(3)]
    for i, doc in enumerate(docs):
        _write(root / "late", f"inference-{i}.json", doc)
    index.write_sidecar(root / "late")
    parsed.clear()
    got = load_index(root, save=False)
    assert not any(p for call in parsed for p in call if "/late/" in p)
    _same_index(got, _full(root), parsed.bulk)


def test_an_import_leaves_sidecars_and_reading_writes_nothing(tmp_path, monkeypatch):
    from pathlib import Path

    from llmbench.importers.registry import import_path

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "res"
    fixtures = Path(__file__).parents[1] / "importers" / "fixtures" / "lib"
    dirs = import_path("llm-inference-bench", fixtures, root).run_dirs  # one sidecar a run, at its end
    assert dirs and all((d / sidecar.SIDECAR).is_file() for d in dirs)
    n = len(Store(root).paths())  # the sidecar is never read as a record
    assert n == sum(len(list(d.glob("*.json"))) for d in dirs)
    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*"))
    got = _cold(root)
    assert got.table.num_rows == n
    _same_index(got, _full(root))
    assert sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*")) == before


def test_a_sweep_leaves_its_runs_sidecar_once_it_ends(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from llmbench.launch.kind import PointKind
    from llmbench.launch.pipeline import run_sweep

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    written = []

    class Fake(PointKind):
        name = "fake"
        parse_point = prepare = load_key = lambda self, *a, **k: None

        def base_record(self, point, run_id, ctx):
            return Record.model_validate(_doc(run_id, point.i))

        def run_group(self, group, ctx, run_id, say, before_point=None):
            for p in group:
                # no sidecar while the run is written: nothing is added per record
                written.append((root / run_id / sidecar.SIDECAR).exists())
                yield p, self.base_record(p, run_id, ctx)

    root = tmp_path / "res"
    points = [SimpleNamespace(i=i, key=f"p{i}") for i in range(3)]
    run_sweep(Fake(), points, root, executor="in-process", run_id="sweep")
    assert written == [False] * 3 and (root / "sweep" / sidecar.SIDECAR).is_file()
    _same_index(_cold(root), _full(root))


def _sidecar_file(d):
    """A sidecar as written: rows, types, column order and metadata."""
    import pyarrow as pa

    with pa.OSFile(str(d / sidecar.SIDECAR)) as f:
        return pa.ipc.open_file(f).read_all()


def _from_scratch(d):
    (d / sidecar.SIDECAR).unlink()
    index.write_sidecar(d)
    return _sidecar_file(d)


def _resume(d, first_gone=False):
    """What a resumed run does to a run directory: new records (one sorting before the others,
    with a new workload field and other key orders, one of another type), one rewritten with
    values of other types, one removed (the first one, whose row holds every column first)."""
    _write(d, "a-new.json", _doc(d.name, 7, {"late": None, "kv_cache_dtype": "int4"},
                                 tool_figures={"t": {"mean": 1}}))
    _write(d, "reference-9.json", _reference(d.name, 9))
    rewritten = d / "inference-1.json"
    rewritten.write_text(json.dumps(_doc(d.name, 1, {"kv_cache_dtype": 4.5, "scale": "x"})))
    os.utime(rewritten, ns=(1, 1))
    (d / ("inference-0.json" if first_gone else "inference-2.json")).unlink()
    return {d / "a-new.json", d / "reference-9.json", rewritten}


@pytest.mark.parametrize("run", "abc")
def test_a_resumed_runs_sidecar_equals_one_written_from_scratch(tmp_path, run):
    root = tmp_path / "res"
    _store(root)
    d = root / run
    _resume(d)
    index.write_sidecar(d)
    got = _sidecar_file(d)
    assert got.num_rows == len([p for p in d.glob("*.json") if p.name != "notes.json"])
    want = _from_scratch(d)
    assert got.equals(want, check_metadata=True), (got.schema, want.schema)
    assert got.column("path").to_pylist() == sorted(got.column("path").to_pylist())


@pytest.mark.parametrize("first_gone", [False, True], ids=["first-kept", "first-gone"])
def test_a_resumed_run_parses_only_its_new_and_changed_files(tmp_path, monkeypatch, first_gone):
    root = tmp_path / "res"
    _store(root)
    d = root / "a"
    changed = _resume(d, first_gone)
    parsed = []
    real = index._row
    monkeypatch.setattr(index, "_row", lambda path, *a: (parsed.append(path), real(path, *a))[1])
    index.write_sidecar(d)
    got = _sidecar_file(d)
    # (notes.json is no record: no sidecar covers it, it is parsed every time)
    left = {str(p) for p in changed} | {str(d / "notes.json")}
    if first_gone:  # which kept row holds its columns first is not known: all are parsed
        assert set(parsed) == {str(p) for p in d.glob("*.json")}
    else:
        assert sorted(parsed) == sorted(left)
    monkeypatch.undo()
    assert got.equals(_from_scratch(d), check_metadata=True)


@pytest.mark.parametrize("bad", [b"not arrow", b"", "older", "no first rows"])
def test_a_corrupt_or_older_sidecar_is_written_again_from_scratch(tmp_path, monkeypatch, bad):
    import warnings

    import pyarrow as pa

    root = tmp_path / "res"
    _store(root)
    d = root / "c"
    _resume(d)
    if bad == "older":  # of other index rows
        monkeypatch.setattr(index, "INDEX_VERSION", "older")
        index.write_sidecar(d)
        monkeypatch.undo()
    elif bad == "no first rows":  # written before sidecars kept each column's first row
        t = _sidecar_file(d)
        meta = json.loads(t.schema.metadata[b"llmbench"])
        del meta["first"]
        t = t.replace_schema_metadata({"llmbench": json.dumps(meta)})
        with pa.OSFile(str(d / sidecar.SIDECAR), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
    else:
        (d / sidecar.SIDECAR).write_bytes(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.write_sidecar(d)
    got = _sidecar_file(d)
    assert got.equals(_from_scratch(d), check_metadata=True)
