"""A sweep's records made durable off the caller's thread (Store.write's sync_later): the record
is whole and in place when write returns, its fsyncs (file, then directory) run on the store's
sync thread, the next write and flush() wait for them, a failed fsync is raised naming the
record, and a process killed right after the write leaves the whole record."""

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from llmbench.errors import StoreWriteError
from llmbench.store import Record, Store
from llmbench.store import store as storemod
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo

SMALL = dict(backend=BackendInfo(name="llamacpp"), model=ModelInfo(name="smollm2-135m"),
             hardware=HardwareInfo(name="cpu"))


def _rec(key: str = "p1", **more) -> Record:
    return Record(run_id="r1", point_key=key, kind="inference", status="ok", **SMALL, **more)


def test_the_record_is_in_place_before_its_fsyncs_which_run_on_their_own_thread(tmp_path, monkeypatch):
    gate, synced = threading.Event(), []
    real = storemod.sync_written

    def gated(path):  # the fsyncs wait until the test has looked at the file
        gate.wait(10)
        synced.append((Path(path), threading.current_thread().name))
        real(path)

    monkeypatch.setattr(storemod, "sync_written", gated)
    store = Store(tmp_path)
    path = store.write(_rec(), sync_later=True)
    assert json.loads(path.read_text())["point_key"] == "p1"  # whole, named, before any fsync
    assert synced == [] and not list(path.parent.glob(".tmp-*"))
    gate.set()
    store.flush()
    assert synced == [(path, synced[0][1])] and synced[0][1].startswith("llmbench-fsync")
    store.flush()  # nothing left: returns at once


def test_the_next_write_waits_for_the_previous_records_fsyncs(tmp_path, monkeypatch):
    gate, order = threading.Event(), []

    def slow(path):
        gate.wait(10)
        order.append(("synced", Path(path).name))

    monkeypatch.setattr(storemod, "sync_written", slow)
    store = Store(tmp_path)
    first = store.write(_rec("a"), sync_later=True)
    second_done = threading.Event()

    def write_second():
        store.write(_rec("b"), sync_later=True)
        order.append(("wrote", "b"))
        second_done.set()

    t = threading.Thread(target=write_second)
    t.start()
    assert not second_done.wait(0.3)  # held until the first record's fsyncs are done
    gate.set()
    t.join(10)
    store.flush()
    assert order[:2] == [("synced", first.name), ("wrote", "b")]
    assert len(list((tmp_path / "r1").glob("*.json"))) == 2


def test_a_failed_fsync_is_raised_at_the_next_flush_naming_the_record(tmp_path, monkeypatch):
    def broken(path):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(storemod, "sync_written", broken)
    store = Store(tmp_path)
    path = store.write(_rec(), sync_later=True)
    with pytest.raises(StoreWriteError, match=str(path)):
        store.flush()
    store.flush()  # raised once, not again


def test_sync_written_fsyncs_the_file_and_then_its_directory(tmp_path, monkeypatch):
    path = tmp_path / "r" / "x.json"
    storemod.atomic_write_text(path, "{}", sync=False)
    fds = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fds.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    storemod.sync_written(path)
    assert fds == [str(path), str(path.parent)]


def test_a_process_killed_right_after_the_write_leaves_the_whole_record(tmp_path):
    code = ("import os, signal, sys\n"
            "from llmbench.store import Record, Store\n"
            "from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo\n"
            "rec = Record(run_id='r1', point_key='k', kind='inference', status='ok',\n"
            "             backend=BackendInfo(name='llamacpp'), model=ModelInfo(name='m'),\n"
            "             hardware=HardwareInfo(name='cpu'), notes=['x' * 100000])\n"
            "Store(sys.argv[1]).write(rec, sync_later=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, timeout=60)
    assert proc.returncode == -9
    files = list((tmp_path / "r1").glob("*"))
    assert len(files) == 1 and files[0].suffix == ".json"
    assert json.loads(files[0].read_text())["notes"] == ["x" * 100000]


def test_an_empty_record_file_is_read_as_not_done(tmp_path):
    # What an operating-system crash before the fsyncs can leave: the point runs again on resume.
    store = Store(tmp_path)
    store.write(_rec("done"))
    (tmp_path / "r1" / "inference-lost-0000000000000000.json").write_text("")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert store.done_keys() == {"done"}
    assert any("unreadable record" in str(w.message) for w in seen)


def test_run_group_names_the_sync_and_leaves_every_record_durable(tmp_path, monkeypatch):
    # Each record's fsyncs run while the next point is measured: point 2 starts before point
    # 1's record is synced (gated here), and when run_group returns every record is synced.
    from types import SimpleNamespace

    from llmbench.launch.kind import PointKind
    from llmbench.launch.pipeline import run_group
    from llmbench.measure.observers import RECORD_SYNC

    gate, synced, seen_at_start = threading.Event(), [], []
    real = storemod.sync_written

    def gated(path):
        gate.wait(10)
        synced.append(Path(path))
        real(path)

    monkeypatch.setattr(storemod, "sync_written", gated)

    class Fake(PointKind):
        name = "fake"
        parse_point = prepare = load_key = base_record = lambda self, *a, **k: None

        def run_group(self, group, ctx, run_id, say, before_point=None):
            for p in group:
                seen_at_start.append(len(synced))
                if p.i == 1:
                    gate.set()  # point 1's record waited for its fsyncs until point 2 began
                yield p, _rec(p.key)

    store = Store(tmp_path)
    points = [SimpleNamespace(i=i, key=f"p{i}") for i in range(3)]
    records = run_group(Fake(), points, None, "r1", store, lambda *a: None)
    assert seen_at_start[:2] == [0, 0]
    assert sorted(synced) == sorted((tmp_path / "r1").glob("*.json")) and len(synced) == 3
    assert store._unsynced is None
    assert all(r.observers["record_sync"] == RECORD_SYNC for r in records)
    stored = [json.loads(p.read_text()) for p in (tmp_path / "r1").glob("*.json")]
    assert all(d["observers"]["record_sync"] == RECORD_SYNC for d in stored)
