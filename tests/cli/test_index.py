"""`llmbench index`: every run directory of a store given its sidecar, so that a cold build
reads sidecars and gives exactly the index a full parse gives; its summary's counts; clear
errors."""

import json
import os

import pytest

from llmbench.cli import main
from llmbench.store import index, sidecar
from tests.store.test_sidecar import _cold, _doc, _full, _same_index, _store, _write, parsed  # noqa: F401


def _index(root, capsys):
    try:
        main(["index", "--results", str(root)])
        code = 0
    except SystemExit as e:
        code = e.code or 0
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_after_it_a_cold_build_reads_sidecars_and_equals_a_full_parse(tmp_path, parsed, capsys):
    root = tmp_path / "res"
    runs = _store(root)
    for d in root.iterdir():  # a store copied in, or written before sidecars
        (d / sidecar.SIDECAR).unlink(missing_ok=True)
    want = _full(root)
    code, out, _ = _index(root, capsys)
    assert code == 0
    assert f"5 run directories in {root} indexed: {sum(map(len, runs.values()))} records" in out
    parsed.clear()
    _same_index(_cold(root), want, parsed.bulk)
    # the file that is no record is all a cold build still parses
    assert parsed == [[str((root / "a" / "notes.json").resolve())]]


def test_the_summary_counts_a_hand_built_store(tmp_path, capsys):
    root = tmp_path / "res"
    for i in range(2):
        _write(root / "current", f"inference-{i}.json", _doc("current", i))
    index.write_sidecar(root / "current")  # as llmbench's writer left it
    for i in range(3):
        _write(root / "notes", f"inference-{i}.json", _doc("notes", i))
    notes = _write(root / "notes", "notes.json", {"not": "a record"})
    for i in range(4):
        _write(root / "broken", f"inference-{i}.json", _doc("broken", i))
    (root / "broken" / "inference-3.json").write_text('{"run_id": "broken", "kind": ')
    files = {p: p.stat().st_mtime_ns for p in root.rglob("*.json")}
    code, out, err = _index(root, capsys)
    assert code == 0, err
    assert out.strip().startswith(f"3 run directories in {root} indexed: 8 records covered by "
                                  "their sidecars, 1 already current, 2 written; ")
    assert "could not be indexed" not in out
    # the unreadable record is named, and left uncovered; no file is touched
    assert err.count("llmbench: warning: skipping unreadable record") == 1
    assert "broken/inference-3.json" in err
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.json")} == files
    assert json.loads(notes.read_text()) == {"not": "a record"}
    covered = {d.name: sidecar.read_sidecar(str(d), index.INDEX_VERSION)[0].num_rows
               for d in root.iterdir()}
    assert covered == {"current": 2, "notes": 3, "broken": 3}

    # again: every sidecar current, none written (the directories' mtimes, the index's key, stay)
    dirs = {d: os.stat(d).st_mtime_ns for d in index.record_dirs(root)}
    code, out, _ = _index(root, capsys)
    assert code == 0 and ": 8 records covered by their sidecars, 3 already current, 0 written; " in out
    assert {d: os.stat(d).st_mtime_ns for d in index.record_dirs(root)} == dirs


def test_a_directory_that_cannot_be_indexed_does_not_stop_the_others(tmp_path, capsys, monkeypatch):
    root = tmp_path / "res"
    for run in ("a", "b", "c"):
        for i in range(2):
            _write(root / run, f"inference-{i}.json", _doc(run, i))
    real = sidecar.write

    def write(d, *a):
        if d.endswith(os.sep + "b"):
            raise OSError(30, "Read-only file system")
        real(d, *a)

    monkeypatch.setattr(sidecar, "write", write)
    code, out, err = _index(root, capsys)
    assert code == 3
    assert "2 run directories" in out and "4 records covered" in out
    assert "; 1 could not be indexed (warnings above" in out
    assert f"could not write the index rows of {(root / 'b').resolve()}: [Errno 30]" in err
    assert {d.name for d in root.iterdir() if (d / sidecar.SIDECAR).exists()} == {"a", "c"}


def test_a_missing_or_wrong_results_directory_is_bad_input(tmp_path, capsys):
    code, out, err = _index(tmp_path / "nope", capsys)
    assert code == 2 and "Traceback" not in err
    assert f"--results: {tmp_path / 'nope'} is not a results directory (it does not exist)" in err
    (tmp_path / "file").write_text("")
    code, _, err = _index(tmp_path / "file", capsys)
    assert code == 2 and f"{tmp_path / 'file'} is not a directory" in err
