"""Is the driver's power sample buffer a sound energy source? (issue 24; measure/power.py BUFFER)

On one GPU, under a load this script drives (bf16 matmuls, steady or switching on and off):
1. agreement: over SPAN seconds, the buffer's samples (gathered every second, since it keeps
   only ~2.4 s) integrated, against NVML's total-energy counter read at both ends (its 100 ms
   granularity is +-1% of a 10 s span);
2. the meter as a record uses it: `NvmlMeter` windows of --window-s on steady load, each one's
   method and average power, against the steady power the counter gave in step 1.

    python3 benchmarks/power_buffer_check.py [--index 0] [--span-s 10] [--window-s 0.3] [--windows 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time


def load(kind: str, stop: threading.Event) -> None:
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while not stop.is_set():
        t = time.time()
        while time.time() - t < 0.15:
            a @ a
        torch.cuda.synchronize()
        if kind == "on/off":
            time.sleep(0.1)


def gathered(nv, h, seconds: float) -> tuple[list[tuple[float, float]], float, float, float, float]:
    """(samples (s, W), counter J, span s, its wall-clock start and end) over `seconds`, the
    buffer read every second."""
    e0, t0 = nv.nvmlDeviceGetTotalEnergyConsumption(h), time.time()
    seen: dict[int, float] = {}
    since = int(t0 * 1e6) - 200_000
    while time.time() - t0 < seconds:
        time.sleep(min(1.0, max(0.0, seconds - (time.time() - t0))))
        _, got = nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, since)
        for x in got:
            seen[x.timeStamp] = x.sampleValue.uiVal / 1e3
    e1, t1 = nv.nvmlDeviceGetTotalEnergyConsumption(h), time.time()
    return sorted((t / 1e6, w) for t, w in seen.items()), (e1 - e0) / 1e3, t1 - t0, t0, t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--span-s", type=float, default=10.0)
    ap.add_argument("--window-s", type=float, default=0.3)
    ap.add_argument("--windows", type=int, default=20)
    a = ap.parse_args()
    if a.span_s <= 1 or a.window_s <= 0 or a.windows < 1:
        ap.error("--span-s must be > 1, --window-s > 0, --windows >= 1")
    try:
        import pynvml as nv
        import torch  # noqa: F401  (the load)
        nv.nvmlInit()
    except Exception as e:
        sys.exit(f"power_buffer_check: needs pynvml, torch and a GPU: {type(e).__name__}: {e}")
    from llmbench.measure.power import NvmlMeter, integrate_j

    h = nv.nvmlDeviceGetHandleByIndex(a.index)
    steady_w = None
    for kind in ("steady", "on/off", "idle"):
        stop = threading.Event()
        th = None if kind == "idle" else threading.Thread(target=load, args=(kind, stop), daemon=True)
        if th:
            th.start()
            time.sleep(2.0)
        pts, counter_j, span, t0, t1 = gathered(nv, h, a.span_s)
        stop.set()
        if th:
            th.join()
        gaps = [q[0] - p[0] for p, q in zip(pts, pts[1:])]
        buf_j = integrate_j(pts, t0, t1)
        print(f"{kind:7s} load, {span:.2f} s: counter {counter_j:9.2f} J ({counter_j / span:6.1f} W); "
              f"buffer {len(pts)} samples, median {statistics.median(gaps) * 1e3:.1f} ms apart "
              f"(max {max(gaps) * 1e3:.1f}): "
              + (f"{buf_j:9.2f} J ({buf_j / span:6.1f} W), buffer / counter = {buf_j / counter_j:.4f}"
                 if buf_j is not None else "does not cover the span"))
        if kind == "steady":
            steady_w = counter_j / span
        time.sleep(0.5)
    stop = threading.Event()
    th = threading.Thread(target=load, args=("steady", stop), daemon=True)
    th.start()
    time.sleep(2.0)
    meter = NvmlMeter([a.index], sampling="off")
    wins = []
    for _ in range(a.windows):
        with meter.window() as w:
            time.sleep(a.window_s)
        wins.append(w)
        time.sleep(0.05)
    stop.set()
    th.join()
    methods = statistics.multimode([w.method for w in wins])
    pw = [w.avg_power_w for w in wins if w.avg_power_w is not None]
    print(f"meter windows of {a.window_s:g} s on steady load: methods {meter.describe().get('windows_by_method')}, "
          f"average power median {statistics.median(pw):.1f} W (min {min(pw):.1f}, max {max(pw):.1f}); "
          f"steady power by the counter {steady_w:.1f} W: ratio {statistics.median(pw) / steady_w:.4f} ({methods})")


if __name__ == "__main__":
    main()
