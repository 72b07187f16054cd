import os
import time

import pytest

from report_records import own_records, reference_records

from llmbench.store.index import index_path, load_index, signature
from llmbench.store.store import Store


def _age(root, seconds=3600):
    """Move every directory's mtime into the past: settled, as a store is between writes."""
    t = time.time_ns() - seconds * 1_000_000_000
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        os.utime(d, ns=(t, t))


def _rows_by_path(idx):
    return {r["path"]: r for r in idx.table.to_pylist()}


def test_index_matches_store_rows_and_is_cached(tmp_path):
    store = Store(tmp_path)
    for r in reference_records()[:20] + own_records()[:5]:
        store.write(r)
    _age(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    idx = load_index(tmp_path)
    assert index_path(tmp_path).exists()
    assert sorted(tmp_path.rglob("*")) == before  # reading never writes into the store
    want = {r["path"]: r for r in store.rows()}
    got = _rows_by_path(idx)
    assert len(got) == len(want) == 25
    for p, row in want.items():
        g = got[str((tmp_path / os.path.relpath(p, tmp_path)).resolve())]
        for k, v in row.items():
            if k != "path":
                assert g[k] == v, k
    assert "total_throughput_tok_s" in idx.metrics and "batch_size" in idx.workload
    again = load_index(tmp_path)  # no change: served from the Parquet file
    assert again.table.num_rows == 25 and again.signature == idx.signature == signature(tmp_path)


def test_recently_changed_dirs_are_listed_again(tmp_path):
    """A write within the file system's mtime granularity must not hide behind an equal mtime."""
    store = Store(tmp_path)
    p = store.write(reference_records()[0])
    load_index(tmp_path)
    st = os.stat(p.parent)
    store.write(reference_records()[1])
    os.utime(p.parent, ns=(st.st_atime_ns, st.st_mtime_ns))  # as if in the same mtime tick
    assert load_index(tmp_path).table.num_rows == 2


def test_index_sees_added_replaced_and_removed_records(tmp_path):
    store = Store(tmp_path)
    paths = [store.write(r) for r in reference_records()[:6]]
    assert load_index(tmp_path).table.num_rows == 6
    new = store.write(own_records()[0])
    paths[0].unlink()
    idx = load_index(tmp_path)
    rows = _rows_by_path(idx)
    assert len(rows) == 6
    assert str(new.resolve()) in rows and str(paths[0].resolve()) not in rows
    # A record rewritten by rename (the store's only way) gets its new values.
    rec = reference_records()[1]
    rec.metrics["batch_latency_s"].mean = 123.0
    tmp = paths[1].with_suffix(".tmp")
    tmp.write_text(rec.model_dump_json())
    os.replace(tmp, paths[1])
    assert _rows_by_path(load_index(tmp_path))[str(paths[1].resolve())]["batch_latency_s_mean"] == 123.0


def test_edit_in_place_needs_full_check(tmp_path):
    store = Store(tmp_path)
    p = store.write(reference_records()[0])
    load_index(tmp_path)
    rec = reference_records()[0]
    rec.metrics["batch_latency_s"].mean = 7.0
    st = os.stat(p.parent)
    p.write_text(rec.model_dump_json())
    os.utime(p.parent, ns=(st.st_atime_ns, st.st_mtime_ns))  # a hand edit keeps the dir mtime
    time.sleep(0.01)
    assert load_index(tmp_path, full_check=True).table.column("batch_latency_s_mean").to_pylist() == [7.0]


def test_mixed_type_field_and_bad_json(tmp_path):
    store = Store(tmp_path)
    a, b = reference_records()[:2]
    a.workload["kv_cache_dtype"] = 8
    store.write(a)
    store.write(b)
    (tmp_path / "ref-lib" / "broken.json").write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable record"):
        idx = load_index(tmp_path)
    assert idx.table.num_rows == 2
    assert sorted(idx.table.column("kv_cache_dtype").to_pylist()) == ["8", "auto"]


def test_missing_root_is_empty(tmp_path):
    assert load_index(tmp_path / "nope").table.num_rows == 0


def test_read_only_store_is_indexed_without_writing_into_it(tmp_path, monkeypatch):
    """A shared or read-only results directory: the index goes to the user cache. Tests run
    as root here (chmod does not stop root), so the real check is that no file appears."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "shared"
    store = Store(root)
    for r in reference_records()[:4]:
        store.write(r)
    before = sorted(root.rglob("*"))
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        d.chmod(0o555)
    try:
        idx = load_index(root)
        assert idx.table.num_rows == 4
        assert load_index(root).signature == idx.signature  # the second read is the cached one
    finally:
        for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
            d.chmod(0o755)
    assert sorted(root.rglob("*")) == before
    assert index_path(root).parent == tmp_path / "cache" / "index" and index_path(root).exists()


def test_index_of_one_path_is_not_another_store(tmp_path, monkeypatch):
    """A store removed and replaced at the same path (a reused temp dir) is read afresh."""
    import shutil

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "s"
    for r in reference_records()[:3]:
        Store(root).write(r)
    assert load_index(root).table.num_rows == 3
    shutil.rmtree(root)
    for r in own_records()[:2]:
        Store(root).write(r)
    assert load_index(root).table.num_rows == 2


def test_rows_carry_engine_options_that_are_not_workload_fields(tmp_path):
    rec = own_records()[0]
    rec.backend.options = {"loop": "step", "compile": True, "compile_mode": "max-autotune"}
    rec.workload["compile"] = True
    Store(tmp_path).write(rec)
    row = Store(tmp_path).rows()[0]
    assert row["opt_loop"] == "step" and row["opt_compile_mode"] == "max-autotune"
    assert "opt_compile" not in row and row["compile"] is True  # said once, as the workload field


def test_index_saved_later_is_the_one_loaded(tmp_path, monkeypatch):
    """`llmbench dashboard` builds the index with save=False and saves it once it serves."""
    from llmbench.store.index import save_index

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "s"
    store = Store(root)
    for r in reference_records()[:5]:
        store.write(r)
    _age(root)
    idx = load_index(root, save=False)
    assert not index_path(root).exists() and not idx.cached
    save_index(root, idx)
    assert idx.cached and index_path(root).exists()
    again = load_index(root, save=False)
    assert again.cached and again.table.equals(idx.table) and again.signature == idx.signature
    mtime = index_path(root).stat().st_mtime_ns
    save_index(root, again)  # already in the cache: not written again
    assert index_path(root).stat().st_mtime_ns == mtime


def test_partial_index_files_are_pruned(tmp_path, monkeypatch):
    """A dashboard stopped while saving in the background leaves a partial file: removed
    once an hour old, by the next save."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    store = Store(tmp_path / "s")
    store.write(reference_records()[0])
    folder = index_path(tmp_path / "s").parent
    folder.mkdir(parents=True)
    old, new = folder / ".tmp-index-old.part", folder / ".tmp-index-new.part"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    t = time.time() - 7200
    os.utime(old, (t, t))
    load_index(tmp_path / "s")
    assert not old.exists() and new.exists()
