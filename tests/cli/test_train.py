"""`llmbench train` end to end: the issue's check command and input errors."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")


def _train(*args, results):
    return subprocess.run([sys.executable, "-m", "llmbench", "train", *args, "--results", str(results)],
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_issue_check_command(tmp_path):
    r = _train("--workload", "gpt2", "--size", "small", "--seq-len", "128", "--micro-batch", "2",
               "--grad-accum", "2", "--steps", "4", "--device", "cpu", results=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (f,) = list(tmp_path.rglob("training-*.json"))
    d = json.loads(f.read_text())
    assert d["kind"] == "training" and d["status"] == "ok"
    w, m = d["workload"], d["metrics"]
    assert (w["workload"], w["size"], w["seq_len"], w["micro_batch"], w["grad_accum"]) == ("gpt2", "small", 128, 2, 2)
    N = 124_439_808 - 1024 * 768                     # catalog count minus the position table
    assert w["flop_params"] == N
    fpt = 6 * N + 12 * 12 * 768 * 128
    assert m["tflops"]["mean"] == pytest.approx(m["tokens_per_s"]["mean"] * fpt / 1e12, rel=1e-9)
    assert m["step_time_s"]["n"] == 4


def test_sweep_lists_points(tmp_path):
    r = _train("--workload", "block", "--hidden", "64", "--heads", "4", "--seq-len", "16,32",
               "--compile", "false,true", "--list-points", results=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 4


def test_bad_input_exits_2(tmp_path):
    r = _train("--workload", "gpt2", "--size", "huge", results=tmp_path)
    assert r.returncode == 2
    assert "huge" in r.stderr and "small" in r.stderr
    r = _train("--workload", "gpt2", "--micro-batch", "two", results=tmp_path)
    assert r.returncode == 2


def test_device_defaults_to_the_first_accelerator(tmp_path, monkeypatch, capsys):
    """`--device` left out means `auto`: resolved by hardware.device.resolve_device (here made
    to see a GPU), so the points ask for cuda, which the device check (made to see none)
    refuses."""
    import llmbench.hardware.device as device
    import llmbench.cli.train as command
    from llmbench.cli import main

    seen = []
    monkeypatch.setattr(command, "resolve_device", lambda d: seen.append(d) or "cuda")
    monkeypatch.setattr(device, "cuda_device_count", lambda: 0)
    with pytest.raises(SystemExit) as e:
        main(["train", "--workload", "block", "--hidden", "32", "--heads", "2", "--seq-len", "8",
              "--list-points", "--results", str(tmp_path)])
    assert seen == ["auto"]
    assert e.value.code == 2 and "'cuda' asked for, but no CUDA device is present" in capsys.readouterr().err
