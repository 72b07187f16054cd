"""A store that meets a corrupt file or a full disk: `llmbench results` names the bad file and
shows the rest; a write onto a full disk leaves no partial file and says which record failed."""

import contextlib
import json
import errno
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from llmbench.cli import main
from llmbench.errors import StoreWriteError
from llmbench.store import Store
from tests.store.test_store import rec


def test_results_reports_corrupt_record_files_and_shows_the_rest(tmp_path, capsys):
    s = Store(tmp_path)
    good = s.write(rec(bs=1))
    torn = s.write(rec(bs=2))
    torn.write_bytes(torn.read_bytes()[:100])  # cut mid-document, as a bad copy would
    mangled = s.write(rec(bs=4))
    # valid JSON whose sections are not what a record holds
    mangled.write_text('{"run_id": "r1", "kind": "inference", "backend": "x", "metrics": [1], '
                       '"workload": 3, "roofline": {"bound": 5}}')
    main(["results", "--results", str(tmp_path), "--format", "csv"])  # no SystemExit: status 0
    out, err = capsys.readouterr()
    assert str(torn) in err and "unreadable record" in err
    assert str(good) in out and "k1" in out
    assert str(mangled) in out  # readable JSON: listed, with empty cells where it is broken
    # the typed view (report, compare) skips what does not validate, naming it
    with pytest.warns(UserWarning, match="unreadable record"):
        assert [r.point_key for r in s.records()] == ["k1"]


@contextlib.contextmanager
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the last byte (needs root and mount); else None."""
    mnt = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        yield None
        return
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(root):
    with open(root / "filler", "wb", buffering=0) as f:  # unbuffered: close has nothing to flush
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC


def test_record_write_onto_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    with full_disk(tmp_path) as mnt:
        if mnt is None:  # not root or no mount: emulate the full disk at the write
            mnt = tmp_path / "emulated"
            real_fsync = os.fsync

            def no_space(fd):
                if os.fstat(fd).st_size > 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                real_fsync(fd)
        else:
            no_space = None
        s = Store(mnt / "results")
        kept = s.write(rec(bs=1))
        if no_space is None:
            _fill(mnt)
        else:
            monkeypatch.setattr(os, "fsync", no_space)
        with pytest.raises(StoreWriteError, match=r"point 'k2'.*No space left on device") as e:
            s.write(rec(bs=2))
        assert "no partial file" in str(e.value)
        left = [p.name for p in (mnt / "results").rglob("*") if p.is_file()]
        assert left == [kept.name]  # the complete record kept, no .tmp- part file
        assert [r.point_key for r in s.records()] == ["k1"]


@pytest.mark.parametrize("bad", [["ttft_s"], "fast", 3])
def test_the_index_reads_a_record_whose_sections_are_not_objects(bad):
    # flatten reads such a section as empty; the index's own row builder must do the same
    # (it crashed on a non-empty list or string before)
    from llmbench.store.index import _row
    from llmbench.store.store import flatten

    doc = {"run_id": "r", "kind": "inference", "metrics": bad, "workload": bad}
    metrics, workload = set(), set()
    row = _row("/x/r/a.json", json.dumps(doc).encode(), 1, 2, metrics, workload)
    assert metrics == set() and workload == set()
    assert {k: v for k, v in row.items() if not k.startswith("_")} == flatten(doc, path=Path("/x/r/a.json"))
