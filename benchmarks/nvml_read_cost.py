"""What each NVML read that llmbench's observers take costs on this machine, and how often the
energy counter's value changes (its update granularity): the floor under a point's bookkeeping
on a GPU (issue 24).

    python3 benchmarks/nvml_read_cost.py [--index 0] [--calls 50] [--watch-s 1.0]

Prints, per read, the median and p90 of `--calls` calls (ms), then the energy counter's distinct
values over `--watch-s` seconds of back-to-back reads through both APIs that give it, then the
driver's buffer of power samples (`nvmlDeviceGetSamples(TOTAL_POWER_SAMPLES)`): what a read of it
costs, how far apart its samples are, and the energy of `--samples-s` seconds integrated from them
against the energy counter's difference over the same seconds (is the buffer a cheaper, finer
energy source than the counter?).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def timed(fn, calls: int, clock=time.perf_counter) -> tuple[float, float]:
    """(median, p90) ms of `calls` calls of fn; p90 is the sorted times' element at 0.9 (n-1)."""
    ts = []
    for _ in range(calls):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    ts.sort()
    return statistics.median(ts) * 1e3, ts[int(0.9 * (len(ts) - 1))] * 1e3


def changes(read, watch_s: float, clock=time.perf_counter) -> tuple[int, int, float | None]:
    """(reads, distinct values, median ms between value changes) over watch_s of reads; the
    first change only opens the count (the watch starts at an unknown phase of the counter)."""
    t_end = clock() + watch_s
    last, n, stamps = None, 0, []
    while clock() < t_end:
        v = read()
        n += 1
        if v != last:
            stamps.append(clock())
            last = v
    gaps = [b - a for a, b in zip(stamps[1:], stamps[2:])]
    return n, len(stamps), statistics.median(gaps) * 1e3 if gaps else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--watch-s", type=float, default=1.0)
    ap.add_argument("--samples-s", type=float, default=3.0)
    a = ap.parse_args()
    if a.calls < 1 or a.watch_s <= 0 or a.samples_s <= 0:
        ap.error("--calls must be >= 1, --watch-s and --samples-s > 0")
    try:
        import pynvml as nv

        nv.nvmlInit()
    except Exception as e:  # no pynvml, no driver: nothing to time here
        sys.exit(f"nvml_read_cost: NVML unavailable on this machine: {type(e).__name__}: {e}")
    h = nv.nvmlDeviceGetHandleByIndex(a.index)
    print(f"GPU {a.index}: {nv.nvmlDeviceGetName(h)}, driver {nv.nvmlSystemGetDriverVersion()}")
    energy_fi = nv.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION

    def field(fid):
        return lambda: nv.nvmlDeviceGetFieldValues(h, [fid])[0]

    def field_value(fid):
        def read():
            f = nv.nvmlDeviceGetFieldValues(h, [fid])[0]
            return f.value.ullVal if f.nvmlReturn == 0 else None
        return read

    def gpm_sample():
        s = nv.nvmlGpmSampleAlloc()
        nv.nvmlGpmSampleGet(h, s)
        nv.nvmlGpmSampleFree(s)

    reads = {
        "nvmlDeviceGetTotalEnergyConsumption": lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h),
        "nvmlDeviceGetFieldValues(TOTAL_ENERGY_CONSUMPTION)": field(energy_fi),
        "nvmlDeviceGetPowerUsage": lambda: nv.nvmlDeviceGetPowerUsage(h),
        "nvmlDeviceGetFieldValues(POWER_INSTANT)": field(nv.NVML_FI_DEV_POWER_INSTANT),
        "nvmlDeviceGetSamples(TOTAL_POWER_SAMPLES, since 0)":
            lambda: nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, 0),
        "nvmlDeviceGetComputeRunningProcesses": lambda: nv.nvmlDeviceGetComputeRunningProcesses(h),
        "nvmlGpmSampleGet (alloc/free included)": gpm_sample,
        "nvmlDeviceGetClockInfo(SM)": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        "nvmlDeviceGetTemperature": lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
    }
    for name, fn in reads.items():
        try:
            med, p90 = timed(fn, a.calls)
            print(f"  {med:7.3f} ms median, {p90:7.3f} ms p90  {name}")
        except nv.NVMLError as e:
            print(f"  unavailable: {e}  {name}")
    for name, read in (("nvmlDeviceGetTotalEnergyConsumption",
                        lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h)),
                       ("nvmlDeviceGetFieldValues(TOTAL_ENERGY_CONSUMPTION)", field_value(energy_fi))):
        n, distinct, gap = changes(read, a.watch_s)
        print(f"  {name}: {n} reads in {a.watch_s:g} s, {distinct} distinct values, "
              f"median {gap if gap is None else round(gap, 2)} ms between changes")

    power_buffer(nv, h, a.samples_s)


def power_buffer(nv, h, seconds: float) -> None:
    """The driver's power samples over `seconds`, integrated (trapezoids, mW x us = nJ), against
    the energy counter's difference (mJ) read at both ends."""
    try:
        _, old = nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, 0)
    except nv.NVMLError as e:
        print(f"  power sample buffer unavailable: {e}")
        return
    stamps = [s.timeStamp for s in old]
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    print(f"  power sample buffer: {len(old)} samples over {(stamps[-1] - stamps[0]) / 1e6:.2f} s, "
          f"median {gaps[len(gaps) // 2] / 1e3 if gaps else float('nan'):.1f} ms apart"
          f" (min {gaps[0] / 1e3 if gaps else float('nan'):.1f}, max {gaps[-1] / 1e3 if gaps else float('nan'):.1f})")
    e0, t0_us = nv.nvmlDeviceGetTotalEnergyConsumption(h), time.time_ns() // 1000
    time.sleep(seconds)
    e1, t1_us = nv.nvmlDeviceGetTotalEnergyConsumption(h), time.time_ns() // 1000
    _, new = nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, t0_us)
    pts = [(s.timeStamp, s.sampleValue.uiVal) for s in new if t0_us <= s.timeStamp <= t1_us]
    if len(pts) < 2:
        print(f"  power sample buffer: {len(pts)} samples in {seconds:g} s, nothing to integrate")
        return
    nj = sum((tb - ta) * (pa + pb) / 2 for (ta, pa), (tb, pb) in zip(pts, pts[1:]))
    span_s = (pts[-1][0] - pts[0][0]) / 1e6
    mean_w = nj / 1e9 / span_s
    print(f"  over {(t1_us - t0_us) / 1e6:.3f} s: counter {(e1 - e0) / 1e3:.3f} J "
          f"({(e1 - e0) / 1e3 / ((t1_us - t0_us) / 1e6):.1f} W); samples: {len(pts)} over {span_s:.3f} s, "
          f"mean {mean_w:.1f} W, x {(t1_us - t0_us) / 1e6:.3f} s = {mean_w * (t1_us - t0_us) / 1e6:.3f} J")


if __name__ == "__main__":
    main()
