"""Peak FLOP/s: the hardware's dense datasheet peak per precision, and a dense matrix-product
peak measured on the device in the same run, sustained under the power limit in force (the
ceiling `mfu_measured_peak` divides by)."""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections.abc import Callable

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
# window, so launch gaps and timer resolution are amortised over its products.
# Sustained (issue 37): an H200 ran 732 TFLOP/s for its first burst, then 676-681 once its 700 W
# limit held the clocks near 1590 MHz. So windows go on until the last WINDOWS of them agree
# within SPREAD_GOAL (the clocks have settled where the power limit holds them), or SUSTAIN_MAX_S
# has passed (then the peak is marked unsettled). The peak is the median of those last WINDOWS;
# the first window is kept as `burst_flops`. Clocks and clock-event reasons are sampled through
# the timed windows and the power limit read (measure/clocks.py), so the record says under which
# power state the peak was sustained; a run measures it again when the enforced limit changes.
# Its spread (the largest deviation of a window from the median, relative) is recorded beside
# every efficiency that divides by it. benchmarks/matmul_peak_stability.py measures how stable
# it is between runs (goal: +-2%).
WINDOWS = 5
WARMUP_S = 1.0
WINDOW_S = 0.25
SPREAD_GOAL = 0.02
SUSTAIN_MAX_S = 10.0


def spread(values: list[float]) -> float:
    """The largest relative deviation of a value from their median: 0.02 is +-2%."""
    med = statistics.median(values)
    return max(abs(v - med) for v in values) / med if med else float("nan")


def settled(values: list[float], windows: int = WINDOWS, goal: float = SPREAD_GOAL) -> bool:
    """Whether the last `windows` values agree within `goal` (the clocks have settled)."""
    return len(values) >= windows and spread(values[-windows:]) <= goal


def sustained_windows(window_flops: Callable[[], float], windows: int = WINDOWS,
                      goal: float = SPREAD_GOAL, max_s: float = SUSTAIN_MAX_S,
                      clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """FLOP/s of successive windows (window_flops() times one), until the last `windows` are
    settled() or `max_s` has passed with at least `windows` taken: every window, in order."""
    values: list[float] = []
    t0 = clock()
    while not settled(values, windows, goal) and (len(values) < windows or clock() - t0 < max_s):
        values.append(window_flops())
    return values


def power_state(device: str) -> dict:
    """The device's power limits now ({"power_limit_w": {"enforced", "default"}}), or why not."""
    if not device.startswith("cuda"):
        return {"absent": f"{device}: no power limit read (NVML reads NVIDIA GPUs only)"}
    from llmbench.measure.clocks import power_limits_w
    from llmbench.measure.power import visible_cuda_indices

    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(visible_cuda_indices(device)[0])
    except Exception as e:
        return {"absent": f"NVML unavailable: {type(e).__name__}: {e}"}
    return {"power_limit_w": power_limits_w(pynvml, h)}


def measured_matmul_peak(device: str, precision: str, windows: int = WINDOWS,
                         warmup_s: float = WARMUP_S, window_s: float = WINDOW_S) -> dict:
    """The sustained matmul peak (see above) under the device's enforced power limit now:
    measured once a process per limit."""
    enforced = (power_state(device).get("power_limit_w") or {}).get("enforced")
    return _measured_peak(device, precision, enforced, windows, warmup_s, window_s)


@functools.cache
def _measured_peak(device: str, precision: str, enforced_limit_w: float | None, windows: int,
                   warmup_s: float, window_s: float) -> dict:
    """FLOP/s of a dense n x n x n product on random data in the step's compute precision: the
    median of the last `windows` timed windows once they settle, after a warm-up of `warmup_s`
    (see above), with every window's value, their spread and the power state they ran under."""
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
        with sampled_state(device) as state:
            every = sustained_windows(lambda: 2.0 * n ** 3 * per_window / timed(per_window), windows,
                                      max_s=SUSTAIN_MAX_S if cuda else window_s * windows * 4)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    flops = every[-windows:]
    med = statistics.median(flops)
    ok = settled(every, windows)
    return {"flops": med, "windows_flops": flops, "spread": spread(flops), "n": n,
            "products_per_window": per_window, "warmup_s": el, "burst_flops": every[0],
            "windows_taken": len(every), "settled": ok, "power_state": state,
            "what": f"{label} {n}^3, median of the last {windows} of {len(every)} windows of "
                    f"{per_window} back-to-back products after a {el:.1f} s warm-up"
                    + ("" if ok else f" (not settled within +-{SPREAD_GOAL:.0%} in {SUSTAIN_MAX_S:.0f} s)")}


@contextlib.contextmanager
def sampled_state(device: str):
    """A dict filled, as the context closes, with the device's power limit and its clocks,
    clock-event reason fractions and mean power sampled through the context; CPU: why not."""
    state = power_state(device)
    if "absent" in state:
        yield state
        return
    import pynvml

    from llmbench.measure.clocks import ClockSampler, ClockTrace
    from llmbench.measure.power import open_meter, visible_cuda_indices

    sampler = ClockSampler(pynvml, [pynvml.nvmlDeviceGetHandleByIndex(visible_cuda_indices(device)[0])])
    with open_meter(device, sampling="dense").window() as win:
        sampler.start()
        t0 = time.perf_counter()
        try:
            yield state
        finally:
            t1 = time.perf_counter()
            readings = sampler.stop()[0]
    trace = ClockTrace()
    trace.add_window(readings, t0, t1)
    state.update(trace.summary())
    if (p := win.avg_power_w) is not None:
        state["avg_power_w"] = p
