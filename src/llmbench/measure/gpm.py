"""The hardware's own counters over a measured window: NVML GPM metrics (Hopper and later);
clocks, clock-event (throttle) reasons and temperature at each window's edges; clocks and
clock-event reasons sampled through the window and the power limit read once a window
(measure/clocks.py).

GPM metrics are computed by NVML between two samples (`nvmlGpmSampleGet` before and after the
window, then `nvmlGpmMetricsGet`): no sampling thread, and the reads sit outside the timed window
(the energy meter's window is inside ours), so they cost the measurement nothing. The closing
ones are taken on the aside thread (measure/aside.py) as the window closes, right after the
energy counter's closing read, beside the point's bookkeeping. Every GPU of
the point is read (tensor / pipeline parallel: never GPU 0 alone).

A record's `hardware_counters` is either `{"absent": reason}` (CPU run, no NVML, no permission)
or `{"source": "nvml", "gpus": [...], "windows", "window_s", <metric>_pct ..., "throttled",
"throttle_reasons", "throttle_fraction", "reason_fractions", "sm_clock_mhz", "power_limit_w",
"gpm": {"available": bool, "reason"?}}`. A metric NVML did not give is left
out and named in `absent_metrics` with NVML's reason, never written as zero. The point's value
of a metric is the window-duration-weighted mean over its windows of the mean over its GPUs
(each GPU's percentage of its own peak; the per-GPU values are in `gpus`).

Read by hand on an H200 on 2026-12-02 (not backed by a committed log; docs/findings.md): a 4 GiB
device copy at 4.28 TB/s read DRAM bandwidth utilisation 85.7%; an 8192^3 bf16 matmul at 659
TFLOP/s read tensor activity 87.5%, DRAM 18%; idle 1-4%.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from llmbench.measure.aside import aside
from llmbench.measure.clocks import (SAMPLE_PERIOD_S, THROTTLE, ClockSampler, ClockTrace, power_limits_w,
                                     reason_names)

# record field -> pynvml constant (the percentage NVML computes between two samples)
GPM_METRICS = {
    "dram_bw_util_pct": "NVML_GPM_METRIC_DRAM_BW_UTIL",
    "sm_util_pct": "NVML_GPM_METRIC_SM_UTIL",
    "sm_occupancy_pct": "NVML_GPM_METRIC_SM_OCCUPANCY",
    "tensor_util_pct": "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
}
# NVML's GPM metrics are unreliable over very short sample intervals; windows below this are
# flagged in the record (workloads already lengthen energy windows to >= 2 s)
MIN_GPM_WINDOW_S = 0.1


class CounterWatch:
    """Accumulates the counters over every measured window of one point."""

    def __init__(self, gpu_indices: list[int] | None = None, nvml=None, absent: str | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 sample_period_s: float | None = SAMPLE_PERIOD_S):
        """sample_period_s: how often clocks and clock-event reasons are read through a window
        (measure/clocks.py); None: at its edges only."""
        self.indices = gpu_indices or []
        self.nvml = nvml
        self.absent = absent
        self.clock = clock
        self.sample_period_s = sample_period_s
        self.handles: list = []
        self.gpm_reason: str | None = None
        self.gpm_ids: dict[str, int] = {}
        self._pending: list[tuple[Future, dict, float]] = []  # windows not yet taken
        if nvml is not None and absent is None:
            self._open()
        self.reset()

    @classmethod
    def for_device(cls, device: str, count: int = 1) -> CounterWatch:
        if not device.startswith("cuda"):
            return cls(absent=f"{device} run: no GPU counters (NVML reads NVIDIA GPUs only)")
        from llmbench.measure.power import visible_cuda_indices

        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as e:  # no driver, no pynvml: say so, never zeros
            return cls(absent=f"NVML unavailable: {type(e).__name__}: {e}")
        return cls(visible_cuda_indices(device, count), pynvml)

    def _open(self) -> None:
        nv = self.nvml
        try:
            self.handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in self.indices]
        except Exception as e:
            self.absent = f"NVML cannot open GPU(s) {self.indices}: {e}"
            return
        missing = [n for n, c in GPM_METRICS.items() if not hasattr(nv, c)]
        if not hasattr(nv, "nvmlGpmSampleGet"):
            self.gpm_reason = "this pynvml has no GPM functions (nvidia-ml-py >= 12 needed)"
            return
        self.gpm_ids = {n: getattr(nv, c) for n, c in GPM_METRICS.items() if n not in missing}
        try:
            for i, h in zip(self.indices, self.handles):
                if not nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice:
                    self.gpm_reason = (f"GPU {i} does not support GPM (NVML's GPM metrics need "
                                       "Hopper or later)")
                    return
        except Exception as e:  # e.g. NVML_ERROR_NO_PERMISSION, a driver too old
            self.gpm_reason = f"GPM support query failed: {type(e).__name__}: {e}"

    @property
    def gpm(self) -> bool:
        return self.absent is None and self.gpm_reason is None and bool(self.gpm_ids)

    def reset(self) -> None:
        """Forget the windows so far (a serving session measures many points)."""
        self.settle()  # a read still out belongs to the windows forgotten
        self._pending.clear()
        self.windows = 0
        self.window_s = 0.0
        self.short_windows = 0
        self.sums: list[dict[str, float]] = [{} for _ in self.indices]   # metric -> sum(v * dt)
        self.dts: list[dict[str, float]] = [{} for _ in self.indices]    # metric -> sum(dt)
        self.metric_errors: dict[str, str] = {}
        self.first: list[dict | None] = [None for _ in self.indices]
        self.last: list[dict | None] = [None for _ in self.indices]
        self.throttle: list[set[str]] = [set() for _ in self.indices]
        self.min_sm_clock: list[int | None] = [None for _ in self.indices]
        self.traces: list[ClockTrace] = [ClockTrace() for _ in self.indices]
        self.limits: list[list[dict[str, float]]] = [[] for _ in self.indices]  # one a window
        self.edge_errors: set[str] = set()

    # -- reads ---------------------------------------------------------------------------
    def _edge(self, h) -> dict[str, Any]:
        """Clocks, clock-event reasons and temperature now; a field NVML refuses is left out."""
        nv, out, errs = self.nvml, {}, {}
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        reads = (("sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                 ("mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                 ("temperature_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                 ("clocks_event_mask", (lambda: reasons(h)) if reasons else None))
        for key, read in reads:
            if read is None:
                errs[key] = "this pynvml cannot read clock-event reasons"
                continue
            try:
                out[key] = int(read())
            except Exception as e:
                errs[key] = f"{type(e).__name__}: {e}"
        if "clocks_event_mask" in out:
            out["clocks_event_reasons"] = reason_names(out["clocks_event_mask"])
        for k, v in errs.items():
            self.edge_errors.add(f"{k}: {v}")
        return out

    def _sample(self, h):
        s = self.nvml.nvmlGpmSampleAlloc()
        self.nvml.nvmlGpmSampleGet(h, s)
        return s

    def _metrics(self, s1, s2) -> dict[str, float]:
        """NVML's metrics between two samples; a metric it refuses goes to metric_errors."""
        nv = self.nvml
        names = list(self.gpm_ids)
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = len(names)
        mg.sample1, mg.sample2 = s1, s2
        for k, n in enumerate(names):
            mg.metrics[k].metricId = self.gpm_ids[n]
        nv.nvmlGpmMetricsGet(mg)
        out = {}
        for k, n in enumerate(names):
            m = mg.metrics[k]
            if m.nvmlReturn == 0:
                out[n] = float(m.value)
            else:
                self.metric_errors[n] = f"NVML returned {m.nvmlReturn} for {GPM_METRICS[n]}"
        return out

    def _samples(self) -> list:
        n = len(self.handles)
        if not self.gpm:
            return [None] * n
        try:
            return [self._sample(h) for h in self.handles]
        except Exception as e:
            self.gpm_reason = f"nvmlGpmSampleGet failed: {type(e).__name__}: {e}"
            return [None] * n

    @contextlib.contextmanager
    def window(self, at_close: Callable[[Callable[[], None]], None] | None = None):
        """The opening reads are taken here, before the window; the closing ones on the aside
        thread as the window closes: a GPM sample took ~1.9 ms on an H200 (2026-12-03), waiting
        in NVML with the GIL released, so the point's bookkeeping goes on meanwhile (the GPU is
        idle then). result() takes the windows. at_close: hands the closing reads to whoever
        runs them on the aside thread as the window closes (the energy meter's job, before its
        own closing read, ~4 ms on an H200, which result() then need not wait for)."""
        if self.absent is not None or not self.handles:
            yield self
            return
        self.settle()  # the previous window's closing reads come before this one's opening
        read = {"starts": [self._edge(h) for h in self.handles], "samples0": self._samples(),
                "limits": [power_limits_w(self.nvml, h) for h in self.handles]}
        sampler = None
        if self.sample_period_s:
            sampler = ClockSampler(self.nvml, self.handles, self.sample_period_s, self.clock)
            sampler.start()

        def closing() -> None:
            if sampler is not None:  # told to stop at the closing edge; its readings collected here
                read["readings"] = sampler.stop()
            read["samples1"] = self._samples() if None not in read["samples0"] \
                else [None] * len(self.handles)
            read["ends"] = [self._edge(h) for h in self.handles]
            read["metrics"] = [self._window_metrics(s0, s1)
                               for s0, s1 in zip(read["samples0"], read["samples1"])]

        job: Future | None = None
        if at_close is not None:
            job = Future()

            def run() -> None:
                try:
                    job.set_result(closing())
                except BaseException as e:
                    job.set_exception(e)

            at_close(run)
        t0 = self.clock()
        try:
            yield self
        finally:
            t1 = self.clock()
            read["span"] = (t0, t1)
            if sampler is not None:
                sampler.halt()  # no reading after the window's end counts (add_window)
            self._pending.append((job or aside(closing), read, t1 - t0))

    def _window_metrics(self, s0, s1) -> dict[str, float] | None:
        """NVML's metrics between a window's two samples (None without both), samples freed."""
        m = None
        if s0 is not None and s1 is not None:
            try:
                m = self._metrics(s0, s1)
            except Exception as e:
                self.gpm_reason = f"nvmlGpmMetricsGet failed: {type(e).__name__}: {e}"
        for s in (s0, s1):
            if s is not None:
                with contextlib.suppress(Exception):
                    self.nvml.nvmlGpmSampleFree(s)
        return m

    def settle(self) -> None:
        """Wait until every window's closing reads are in (they run on the windows' threads)."""
        for job, _, _ in self._pending:
            job.result()

    def _take_windows(self) -> None:
        """Add the windows read so far to the point's sums."""
        self.settle()
        for _, read, dt in self._pending:
            self.windows += 1
            self.window_s += dt
            self.short_windows += dt < MIN_GPM_WINDOW_S
            for g in range(len(self.handles)):
                if read["metrics"][g] is not None:
                    for n, v in read["metrics"][g].items():
                        self.sums[g][n] = self.sums[g].get(n, 0.0) + v * dt
                        self.dts[g][n] = self.dts[g].get(n, 0.0) + dt
                if self.first[g] is None:
                    self.first[g] = read["starts"][g]
                self.last[g] = read["ends"][g]
                self.limits[g].append(read["limits"][g])
                if "readings" in read:
                    self.traces[g].add_window(read["readings"][g], *read["span"])
                    self.throttle[g] |= THROTTLE.intersection(self.traces[g].reason_s)
                for edge in (read["starts"][g], read["ends"][g]):
                    self.throttle[g] |= THROTTLE.intersection(edge.get("clocks_event_reasons", ()))
                    c = edge.get("sm_clock_mhz")
                    if c is not None:
                        m = self.min_sm_clock[g]
                        self.min_sm_clock[g] = c if m is None else min(m, c)
        self._pending.clear()

    def observer(self) -> str | None:
        """What the watch does around a measured window (a record's `observers`); None when it
        reads nothing (no GPU, no NVML)."""
        if self.absent is not None or not self.handles:
            return None
        gpm = "GPM samples, " if self.gpm else ""
        edges = (f"NVML {gpm}clocks, clock-event reasons, temperature and power limit of GPU(s) "
                 f"{self.indices} read before and after the window")
        if not self.sample_period_s:
            return edges + ", nothing inside it"
        return (edges + f"; clocks and clock-event reasons read by a thread inside it every "
                f"{self.sample_period_s * 1000:.0f} ms (NVML waits with the GIL released)")

    # -- the record's section --------------------------------------------------------------
    def _limit_fields(self, g: int) -> dict[str, Any]:
        """GPU g's power limit: the one every window read, or each window's when it changed."""
        seen = [lim for lim in self.limits[g] if lim]
        if not seen:
            return {}
        if all(lim == seen[0] for lim in seen):
            return {"power_limit_w": seen[0]}
        return {"power_limit_w": seen[-1], "power_limit_changed_w": seen}

    @staticmethod
    def _sampled_fields(gpus: list[dict]) -> dict[str, Any]:
        """The point's view of the sampled clocks and the power limits: the worst GPU's throttle
        fraction (a step waits for its slowest GPU), the SM clock (mean over GPUs of each one's
        time-weighted mean; min and max over all readings), the limits when
        every GPU has the same, else each GPU's."""
        out: dict[str, Any] = {}
        sampled = [d.get("sampled") or {} for d in gpus]
        if all("throttle_fraction" in s for s in sampled):
            out["throttle_fraction"] = _worst([s["throttle_fraction"] for s in sampled])
            names = sorted(set().union(*(s["reason_fractions"] for s in sampled)))
            out["reason_fractions"] = {n: max(s["reason_fractions"].get(n, 0.0) for s in sampled)
                                       for n in names}
        if all("sm_clock_mhz" in s for s in sampled):
            out["sm_clock_mhz"] = {"mean": sum(s["sm_clock_mhz"]["mean"] for s in sampled) / len(sampled),
                                   "min": min(s["sm_clock_mhz"]["min"] for s in sampled),
                                   "max": max(s["sm_clock_mhz"]["max"] for s in sampled)}
        limits = [d.get("power_limit_w") for d in gpus]
        if limits and all(limits) and all(lim == limits[0] for lim in limits):
            out["power_limit_w"] = limits[0]
        if any(d.get("power_limit_changed_w") for d in gpus):
            out["power_limit_changed"] = True
        return out

    def result(self) -> dict[str, Any]:
        self._take_windows()
        if self.absent is not None:
            return {"absent": self.absent}
        if not self.windows:
            return {"absent": "no measured window (the point failed before its timed run)"}
        gpus = []
        for g, i in enumerate(self.indices):
            d: dict[str, Any] = {"index": i}
            for n in self.gpm_ids:
                if self.dts[g].get(n):
                    d[n] = self.sums[g][n] / self.dts[g][n]
            d["start"], d["end"] = self.first[g] or {}, self.last[g] or {}
            if self.min_sm_clock[g] is not None:
                d["min_sm_clock_mhz"] = self.min_sm_clock[g]
            d["throttle_reasons"] = sorted(self.throttle[g])
            if self.traces[g].window_s:
                d["sampled"] = self.traces[g].summary()
            d.update(self._limit_fields(g))
            gpus.append(d)
        out: dict[str, Any] = {"source": "nvml", "gpu_indices": self.indices,
                               "windows": self.windows, "window_s": self.window_s}
        absent: dict[str, str] = {}
        if self.gpm:
            out["gpm"] = {"available": True}
        else:
            out["gpm"] = {"available": False, "reason": self.gpm_reason or "no GPM metric in this pynvml"}
        for n in GPM_METRICS:
            vals = [d[n] for d in gpus if n in d]
            if vals and len(vals) == len(gpus):
                out[n] = sum(vals) / len(vals)
                if len(vals) > 1:
                    out[n.replace("_pct", "_min_gpu_pct")] = min(vals)
            else:
                absent[n] = (self.metric_errors.get(n) or out["gpm"].get("reason")
                             or f"{GPM_METRICS[n]} read on only {len(vals)} of {len(gpus)} GPUs")
        if absent:
            out["absent_metrics"] = absent
        reasons = sorted(set().union(*self.throttle)) if self.throttle else []
        out["throttled"] = bool(reasons)
        out["throttle_reasons"] = reasons
        out.update(self._sampled_fields(gpus))
        if self.edge_errors:
            out["edge_errors"] = sorted(self.edge_errors)
        if self.short_windows:
            out["short_windows"] = self.short_windows
            out["note"] = (f"{self.short_windows} window(s) under {MIN_GPM_WINDOW_S} s: "
                           "NVML's GPM values are unreliable that short")
        out["gpus"] = gpus
        return out


def _worst(values: list) -> Any:
    return max(values) if values and None not in values else None


def throttle_note(counters: dict) -> str | None:
    """The record note for a throttled point (None when it was not)."""
    if counters.get("throttled"):
        return ("throttled: the GPU clocks were held down during the measured window ("
                + ", ".join(counters.get("throttle_reasons", [])) + "); its numbers understate "
                "the hardware")
    return None


class CountedMeter:
    """An energy meter whose every window is also read for hardware counters (outside the
    energy window, as the contention watch is): the workloads need no change."""

    def __init__(self, meter, counters: CounterWatch):
        self._meter = meter
        self.counters = counters

    def __getattr__(self, name):
        return getattr(self._meter, name)

    @contextlib.contextmanager
    def window(self, *args, **kwargs):
        # the closing GPM samples go first at the closing edge, before the energy counter's read
        at_close = kwargs["at_close"] = [*kwargs.get("at_close", ())]
        with self.counters.window(at_close=at_close.append), self._meter.window(*args, **kwargs) as win:
            yield win

    def take(self) -> dict[str, Any]:
        """The counters of the windows since the last take (one point's), then forget them."""
        out = self.counters.result()
        self.counters.reset()
        return out


def attach(rec, counters: dict) -> None:
    """Put a point's counters into its record, and flag a throttled window in its notes."""
    rec.hardware_counters = counters
    note = throttle_note(counters)
    if note and note not in rec.notes:
        rec.notes.append(note)
