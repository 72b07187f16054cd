"""The real GPM path on an NVIDIA GPU of Hopper or later (run on the device machine; skipped here
without one): a device copy must read as DRAM-bound and a bf16 matmul as tensor-bound."""

import time

import pytest

from llmbench.hardware.device import cuda_device_count

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cuda_device_count() == 0, reason="needs an NVIDIA GPU (NVML)")]


def _window(watch, work, seconds=2.0):
    import torch

    torch.cuda.synchronize()
    watch.reset()
    with watch.window():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            work()
        torch.cuda.synchronize()
    return watch.result()


def test_copy_reads_dram_and_matmul_reads_tensor():
    torch = pytest.importorskip("torch")
    from llmbench.measure.gpm import CounterWatch

    w = CounterWatch.for_device("cuda:0")
    assert w.gpm, w.gpm_reason or w.absent   # Hopper or later: GPM must be there
    src = torch.empty(2 * 2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    x = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    copy = _window(w, lambda: dst.copy_(src))
    mm = _window(w, lambda: x @ x)
    assert copy["dram_bw_util_pct"] > 60 and copy["dram_bw_util_pct"] > mm["dram_bw_util_pct"]
    assert mm["tensor_util_pct"] > 50 and mm["tensor_util_pct"] > copy["tensor_util_pct"]
    e = mm["gpus"][0]
    assert e["start"]["sm_clock_mhz"] > 0 and e["end"]["temperature_c"] > 0
