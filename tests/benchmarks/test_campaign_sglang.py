"""The H200 campaign's `sglang` part (issue 39): the study's points, and sweeps whose every
option llmbench accepts. This machine has neither a GPU nor SGLang, so validation refuses the
device and the package: the test asserts those are the ONLY problems it names."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "h200"))
import campaign  # noqa: E402

EXPECTED_ON_CPU = ("device: 'cuda' asked for", "backend 'sglang': needs the Python package 'sglang'")


def _runs():
    return [(label, argv) for label, argv, _, _ in campaign.plan("sglang", "RES") if "run" in argv[1:4]]


def test_the_part_covers_the_issues_points():
    steps = campaign.plan("sglang", "RES")
    assert "sglang" in campaign.PARTS and all(needs == "sglang" for *_, needs in steps)
    text = [" ".join(argv) for _, argv, _, _ in steps]
    assert any("sglang_crosscheck.py offline" in t and "--batch-size 1,16,64" in t for t in text)
    assert any("sglang_crosscheck.py serve" in t and "--concurrency 1,16,64" in t for t in text)
    assert any("weight_quant=fp8" in t and "--batch-size 1,64" in t for t in text)
    assert any("--input-len 2048" in t and "--output-len 2048" in t for t in text)


@pytest.mark.slow
@pytest.mark.parametrize("label,argv", _runs(), ids=[lab for lab, _ in _runs()])
def test_each_sweep_is_refused_here_only_for_the_gpu_and_the_package(label, argv):
    r = subprocess.run([*argv, "--list-points"], capture_output=True, text=True,
                       env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    problems = [ln.strip() for ln in r.stderr.splitlines()[1:] if ln.strip()]
    assert r.returncode == 2 and problems, r.stderr
    assert all(p.startswith(EXPECTED_ON_CPU) for p in problems), problems
