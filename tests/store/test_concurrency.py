"""Several processes writing into one results directory (as job-array tasks or Ray nodes on a
shared file system do) lose and corrupt nothing, even while a reader scans it."""

import json
import multiprocessing as mp
import os
import signal
import time

from llmbench.store import Record, Store
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo
from llmbench.store.store import atomic_write_text

WRITERS, PER_WRITER = 4, 60


def _record(run_id: str, writer: int, i: int) -> Record:
    # the same point keys across writers: names must still never collide
    return Record(run_id=run_id, point_key=f"k{i % 7}", kind="inference",
                  backend=BackendInfo(name="llamacpp"), model=ModelInfo(name="m"),
                  hardware=HardwareInfo(name="cpu"), workload={"writer": writer, "i": i},
                  notes=["x" * 2000])  # big enough that a torn write would show


def _write_many(root: str, writer: int, go) -> None:
    go.wait()
    store = Store(root)
    for i in range(PER_WRITER):
        store.write(_record("shared-run" if i % 2 else f"run-{writer}", writer, i))


def _read_loop(root: str, stop, errors) -> None:
    store = Store(root)
    while not stop.is_set():
        for p in store.paths():
            try:
                json.loads(p.read_text())
            except FileNotFoundError:
                pass
            except ValueError as e:  # a reader must never see a partial record
                errors.put(f"{p}: {e}")


def test_concurrent_writers_lose_and_corrupt_nothing(tmp_path):
    ctx = mp.get_context("spawn")
    go, stop, errors = ctx.Event(), ctx.Event(), ctx.Queue()
    reader = ctx.Process(target=_read_loop, args=(str(tmp_path), stop, errors))
    reader.start()
    writers = [ctx.Process(target=_write_many, args=(str(tmp_path), w, go)) for w in range(WRITERS)]
    for w in writers:
        w.start()
    go.set()
    for w in writers:
        w.join(60)
        assert w.exitcode == 0
    stop.set()
    reader.join(30)
    assert errors.empty(), errors.get()

    recs = Store(tmp_path).records()
    assert len(recs) == WRITERS * PER_WRITER
    seen = {(r.workload["writer"], r.workload["i"]) for r in recs}
    assert len(seen) == WRITERS * PER_WRITER  # every write landed, none overwrote another
    assert not list(tmp_path.rglob(".tmp-*"))  # no temp file left behind by a finished write


def _slow_writer(path: str) -> None:
    atomic_write_text(__import__("pathlib").Path(path), json.dumps({"big": "y" * 50_000_000}))


def test_a_writer_killed_mid_write_leaves_no_record(tmp_path):
    """A kill -9 during a write leaves the old state: the temp file is never read as a record."""
    target = tmp_path / "run" / "inference-k-1.json"
    p = mp.get_context("spawn").Process(target=_slow_writer, args=(str(target),))
    p.start()
    deadline = time.time() + 30
    while not list(tmp_path.rglob(".tmp-*")) and time.time() < deadline:
        time.sleep(0.001)
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    assert not target.exists() or json.loads(target.read_text())["big"]
    store = Store(tmp_path)
    assert store.paths() == [] or all(json.loads(x.read_text()) for x in store.paths())
    assert store.records() == []


def test_record_names_never_escape_the_results_directory(tmp_path):
    import pytest

    from llmbench.errors import SpecError

    rec = _record("../evil", 0, 0)
    with pytest.raises(SpecError, match="run_id"):
        Store(tmp_path / "res").write(rec)
    rec = _record("ok-run", 0, 0)
    rec.point_key = "../../etc/passwd"
    path = Store(tmp_path / "res").write(rec)
    assert path.parent == tmp_path / "res" / "ok-run"
