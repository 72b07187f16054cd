"""Peak FLOP/s: the hardware's dense datasheet peak per precision, and a dense matrix-product
peak measured on the device in the same run (the ceiling `mfu_measured_peak` divides by)."""

from __future__ import annotations

import functools
import statistics
import time

from llmbench.hardware import dense_peak_flops

def hardware_peak(device_name: str, precision: str) -> tuple[float | None, str]:
    """(FLOP/s, where the number came from); None when the device is not known."""
    v = dense_peak_flops(device_name, precision)
    if v:
        return float(v), "llmbench.hardware"
    return None, f"no dense peak known for {device_name!r}"


# The measured peak (what `mfu_measured_peak` divides by): one 20-product median per run read
# 730, 764, 774 and 786 TFLOP/s on one H200 (bf16 8192^3), too unstable to divide by. Now:
# products run back to back until WARMUP_S has passed (clocks ramp up, cuBLAS settles on its
# kernel), then WINDOWS timed windows of back-to-back products, each about WINDOW_S long (the
# count of products per window comes from the warm-up's rate); one event pair around a whole
# window, so launch gaps and timer resolution are amortised over its products. The peak is the
# median window; its spread (the largest deviation of a window from the median, relative) is
# recorded beside every efficiency that divides by it. benchmarks/matmul_peak_stability.py
# measures how stable it is between runs (goal: +-2%).
WINDOWS = 5
WARMUP_S = 1.0
WINDOW_S = 0.25
SPREAD_GOAL = 0.02


def spread(values: list[float]) -> float:
    """The largest relative deviation of a value from their median: 0.02 is +-2%."""
    med = statistics.median(values)
    return max(abs(v - med) for v in values) / med if med else float("nan")


@functools.cache
def measured_matmul_peak(device: str, precision: str, windows: int = WINDOWS,
                         warmup_s: float = WARMUP_S, window_s: float = WINDOW_S) -> dict:
    """FLOP/s of a dense n x n x n product on random data in the step's compute precision: the
    median of `windows` timed windows after a warm-up of `warmup_s` (see above), with every
    window's value and their spread."""
    import torch

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    n = 8192 if cuda else 512
    if not cuda:  # a CPU run's peak only needs to be plausible, not last seconds
        warmup_s, window_s = min(warmup_s, 0.1), min(window_s, 0.05)
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

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    def timed(k: int) -> float:
        """Seconds of k back-to-back products (CUDA events around the whole window)."""
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(k):
                mm()
            e.record()
            e.synchronize()
            return s.elapsed_time(e) / 1e3
        t0 = time.perf_counter()
        for _ in range(k):
            mm()
        return time.perf_counter() - t0

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        sync()
        done, t0 = 0, time.perf_counter()
        while True:  # warm-up: at least warmup_s of products, in batches of 10
            for _ in range(10):
                mm()
            sync()
            done += 10
            if (el := time.perf_counter() - t0) >= warmup_s:
                break
        per_window = max(1, round(window_s / (el / done)))
        flops = [2.0 * n ** 3 * per_window / timed(per_window) for _ in range(windows)]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    med = statistics.median(flops)
    return {"flops": med, "windows_flops": flops, "spread": spread(flops), "n": n,
            "products_per_window": per_window, "warmup_s": el,
            "what": f"{label} {n}^3, median of {windows} windows of {per_window} back-to-back "
                    f"products after a {el:.1f} s warm-up"}
