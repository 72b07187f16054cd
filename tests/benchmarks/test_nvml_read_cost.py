"""benchmarks/nvml_read_cost.py: its two figures from fake clocks and reads, worked by hand."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "nvml_read_cost.py"
spec = importlib.util.spec_from_file_location("nvml_read_cost", SCRIPT)
nvml_read_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nvml_read_cost)


def test_timed_gives_median_and_p90_of_the_calls():
    # ten calls lasting 1..10 ms (the clock advances inside fn): median 5.5 ms; p90 is the
    # sorted times' element int(0.9 * 9) = 8, i.e. 9 ms
    now, durations = [0.0], iter(range(1, 11))
    med, p90 = nvml_read_cost.timed(lambda: now.__setitem__(0, now[0] + next(durations) / 1e3),
                                    10, clock=lambda: now[0])
    assert med == pytest.approx(5.5) and p90 == pytest.approx(9.0)


def test_changes_counts_values_and_the_period_between_changes():
    # each read advances the clock 10 ms; the value steps every 10 reads (100 ms), from a phase
    # of 3 reads in: over 1 s, 1000 ms / 10 ms = 100 reads, values 0 (3 reads), 1..9 (10 each),
    # 10 (7): 11 distinct values, 100 ms between the changes after the first
    now, reads = [0.0], [0]

    def read():
        reads[0] += 1
        now[0] += 0.010
        return (reads[0] + 6) // 10

    n, distinct, gap_ms = nvml_read_cost.changes(read, 1.0, clock=lambda: now[0])
    assert (n, distinct) == (100, 11) and gap_ms == pytest.approx(100.0)


def test_a_usage_mistake_exits_2_with_one_message():
    r = subprocess.run([sys.executable, str(SCRIPT), "--calls", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--calls must be >= 1" in r.stderr and "Traceback" not in r.stderr
