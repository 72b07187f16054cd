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
