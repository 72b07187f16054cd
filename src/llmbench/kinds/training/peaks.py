"""Peak FLOP/s: the hardware's dense datasheet peak per precision, and a dense matrix-product
peak measured on the device in the same run (the ceiling `mfu_measured_peak` divides by)."""

from __future__ import annotations

import functools
import time

from llmbench.hardware import dense_peak_flops

def hardware_peak(device_name: str, precision: str) -> tuple[float | None, str]:
    """(FLOP/s, where the number came from); None when the device is not known."""
    v = dense_peak_flops(device_name, precision)
    if v:
        return float(v), "llmbench.hardware"
    return None, f"no dense peak known for {device_name!r}"


@functools.cache
def measured_matmul_peak(device: str, precision: str) -> dict:
    """Median FLOP/s of a dense n×n×n product on random data in the step's compute precision."""
    import torch

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    n = 8192 if cuda else 512
    iters = 20 if cuda else 5
    g = torch.Generator(device=dev).manual_seed(1234)
    a = torch.randn(n, n, device=dev, generator=g)
    b = torch.randn(n, n, device=dev, generator=g)
    if precision == "fp8" and cuda:
        a8, b8 = a.to(torch.float8_e4m3fn), b.t().contiguous().t().to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)

        def mm():
            return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        label = "fp8 e4m3 _scaled_mm"
    elif precision in ("bf16", "fp8"):
        a, b = a.bfloat16(), b.bfloat16()

        def mm():
            return a @ b
        label = "bf16 matmul"
    else:
        def mm():
            return a @ b
        label = f"{precision} matmul"
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        times = []
        for i in range(3 + iters):
            if cuda:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                mm()
                e.record()
                e.synchronize()
                dt = s.elapsed_time(e) / 1e3
            else:
                t0 = time.perf_counter()
                mm()
                dt = time.perf_counter() - t0
            if i >= 3:
                times.append(dt)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    times.sort()
    med = times[len(times) // 2]
    return {"flops": 2.0 * n ** 3 / med, "n": n, "what": f"{label} {n}^3, median of {iters}"}
