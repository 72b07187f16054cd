"""benchmarks/dashboard_scale.py refuses a count of cold opens it cannot take a median of,
before it generates anything."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "dashboard_scale.py"


def test_no_cold_opens_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--cold-opens", "0", "--dir",
                        str(tmp_path / "store")], capture_output=True, text=True)
    assert r.returncode == 2 and "--cold-opens must be at least 1" in r.stderr
    assert not (tmp_path / "store").exists()
