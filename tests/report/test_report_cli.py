import subprocess
import sys

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True,
                          text=True, timeout=300)


def test_report_without_png_prints_its_path(fixture_store, tmp_path):
    r = _run("report", "--results", str(fixture_store), "--out", str(tmp_path / "rep"), "--no-png")
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip().splitlines()[-1]
    assert path == str((tmp_path / "rep" / "index.html").resolve())
    assert not (tmp_path / "rep" / "figures").exists()
    html = (tmp_path / "rep" / "index.html").read_text()
    for section in ("Best configuration", "Your results", "Published reference data",
                    "efficiency against the roofline", "Definitions"):
        assert section in html


def test_report_on_a_missing_store_is_bad_input(tmp_path):
    r = _run("report", "--results", str(tmp_path / "nope"), "--out", str(tmp_path / "rep"))
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_report_on_an_empty_store(tmp_path):
    (tmp_path / "empty").mkdir()
    r = _run("report", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "rep"), "--no-png")
    assert r.returncode == 0, r.stderr
    assert "No records of this kind" in (tmp_path / "rep" / "index.html").read_text()


def test_reading_commands_never_write_into_a_read_only_store(tmp_path):
    """results and report over a read-only (shared) directory: exit 0, and no file appears in
    it (tests run as root here, where chmod alone would not stop a write)."""
    import os

    from report_records import own_records

    from llmbench.store.store import Store

    root = tmp_path / "shared"
    for r in own_records()[:3]:
        Store(root).write(r)
    before = sorted(root.rglob("*"))
    dirs = [root, *[p for p in root.rglob("*") if p.is_dir()]]
    for d in dirs:
        d.chmod(0o555)
    env = {**os.environ, "LLMBENCH_CACHE": str(tmp_path / "cache")}
    try:
        for args in (["report", "--results", str(root), "--out", str(tmp_path / "rep"), "--no-png"],
                     ["results", "--results", str(root)]):
            r = subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True,
                               text=True, timeout=300, env=env)
            assert r.returncode == 0, r.stderr
    finally:
        for d in dirs:
            d.chmod(0o755)
    assert sorted(root.rglob("*")) == before
    assert list((tmp_path / "cache" / "index").glob("*.parquet"))  # the index went there
