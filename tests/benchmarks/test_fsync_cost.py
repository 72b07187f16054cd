"""benchmarks/fsync_cost.py: it writes and removes its files, prints every step, refuses bad usage."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fsync_cost.py"


def test_prints_each_step_and_leaves_nothing(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--dir", str(tmp_path), "--files", "3", "--size", "100"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for step in ("create", "write", "fsync file", "rename", "fsync directory"):
        assert f"{step} " in out.stdout
    assert list(tmp_path.iterdir()) == []


def test_bad_usage_exits_2(tmp_path):
    for args in (["--files", "0"], ["--dir", str(tmp_path / "missing")]):
        out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "error" in out.stderr
