"""Power and energy over a measured window.

NVIDIA: NVML's total-energy counter (mJ, read at both ends of the window) summed over every
device the run used, plus power sampled in a thread (mW -> W): every 50 ms when the counter is
missing, every second as a backup while it works (EnergyMeter.sampling). CPU: Linux RAPL
package counters when readable (a counter that wrapped inside the window is unwrapped with its
max_energy_range_uj). Anywhere else the meter says why it is unavailable; a missing reading is
recorded as absent, never as zero.

An NVML counter read cost 1.5-4.4 ms on H200s (ctypes: the GIL is released while it runs), so
an NvmlMeter reads both ends of a window on the aside thread (measure/aside.py): the point's
other bookkeeping runs meanwhile and the window's energy is settled when it is first asked for.
The energy then spans the two reads' midpoints (`counter_span_s`), a queue hand-over after the
window's edges, far inside the counter's own update granularity: its value changes every 100 ms
on an H200 (benchmarks/nvml_read_cost.py), hence MIN_RELIABLE_WINDOW_S.

Each window says how its energy was obtained (`method`): the counter, or, when the counter is
missing or unusable for that window, the mean sampled power x the window's duration. The meter
counts the methods its windows used and `describe()` (what a record's `power` holds) names
them, so a record never claims the counter for a window that fell back to samples.
NVML's counter updates too coarsely for windows under MIN_RELIABLE_WINDOW_S (seen on an H200:
397-450 J for three ~0.8 s batches of near-identical latency); workloads lengthen their window
to at least that or flag the energy.

Finer and cheaper where the driver keeps it: NVML's buffer of power samples
(`nvmlDeviceGetSamples(TOTAL_POWER_SAMPLES)`; on an H200 a sample every ~20 ms, the last
~2.4 s kept, 0.44-0.48 ms a read against the counter's 3.0-3.9 ms; benchmarks/nvml_read_cost.py).
When the buffer's samples reach back past a window's start, the window's energy is their
integral over exactly the window (BUFFER: linear between samples, the last one held to the end)
and the counter's closing read is not taken; otherwise (a window longer than the buffer keeps,
a driver without it) the counter's, as before. On an H200 the two agreed within 0.6% idle and
1.1% under a load switching every 150/100 ms.
"""

from __future__ import annotations

import glob
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from llmbench.measure.aside import aside

PowerSampling = Literal["auto", "dense", "off"]  # EnergyMeter.SAMPLING; a sweep spec's field
MIN_RELIABLE_WINDOW_S = 2.0  # the counter's; the buffer's samples need far less (below)
BUFFER_SAMPLES_MIN = 10      # a window of fewer buffered samples than this is flagged short
COUNTER, SAMPLED = "total-energy counter", "sampled power x time"
BUFFER = "driver's power samples, integrated"
HOLD_MAX_S = 0.1  # the newest buffered sample may be this much older than the window's end


def min_reliable_window_s(methods, sample_gap_s: float | None = None) -> float:
    """The shortest window whose energy is reliable, for windows that used `methods`: the
    counter's MIN_RELIABLE_WINDOW_S, unless every window integrated the driver's samples
    (then BUFFER_SAMPLES_MIN of their spacing, 20 ms on an H200 when it is not known)."""
    methods = set(methods)
    if methods and methods <= {BUFFER}:
        return BUFFER_SAMPLES_MIN * (sample_gap_s or 0.02)
    return MIN_RELIABLE_WINDOW_S


def reliable_window_s(power: dict) -> float:
    """min_reliable_window_s for a record's `power` (EnergyMeter.describe())."""
    return min_reliable_window_s(power.get("windows_by_method") or (), power.get("sample_gap_s"))


def integrate_j(samples: Sequence[tuple[float, float]], a: float, b: float) -> float | None:
    """Joules over [a, b] from (time s, power W) samples sorted by time: linear between two
    samples, the newest held after it; None unless a sample is at or before `a` and the newest
    is at most HOLD_MAX_S before `b`."""
    if not samples or samples[0][0] > a or samples[-1][0] < b - HOLD_MAX_S or b < a:
        return None
    j = 0.0
    for (t0, p0), (t1, p1) in zip(samples, samples[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi <= lo:
            continue
        slope = (p1 - p0) / (t1 - t0)
        j += (hi - lo) * (p0 + slope * (lo - t0) + p0 + slope * (hi - t0)) / 2
    t_last, p_last = samples[-1]
    if b > t_last:
        j += (b - max(a, t_last)) * p_last
    return j


@dataclass
class EnergyWindow:
    t_start: float = 0.0
    t_end: float = 0.0
    power_samples_w: list[float] = field(default_factory=list)
    t_read0: float | None = None  # midpoints of the counter's two reads (perf_counter)
    t_read1: float | None = None
    wall_start: float = 0.0  # the edges on the wall clock (time.time()): the driver's samples'
    wall_end: float = 0.0
    buffer_j: float | None = None  # integrated from the driver's samples (None: not covered)
    buffer_gap_s: float | None = None  # their median spacing
    _energy_j: float | None = None
    _method: str | None = None
    _settle: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def energy_j(self) -> float | None:
        self.settle()
        return self._energy_j

    @property
    def method(self) -> str | None:  # BUFFER, COUNTER or SAMPLED; None: no energy obtained
        self.settle()
        return self._method

    def settle(self) -> None:
        """Wait for the closing read, if it is still out on the aside thread, and take its energy."""
        if self._settle is not None:
            done, self._settle = self._settle, None
            done()

    @property
    def duration_s(self) -> float:
        return self.t_end - self.t_start

    @property
    def counter_span_s(self) -> float:
        """The time the energy covers: between the counter's reads, else the window's."""
        if self.t_read0 is not None and self.t_read1 is not None:
            return self.t_read1 - self.t_read0
        return self.duration_s

    @property
    def avg_power_w(self) -> float | None:
        span = self.counter_span_s if self.method == COUNTER else self.duration_s  # BUFFER: exact
        if self.energy_j is not None and span > 0:
            return self.energy_j / span
        if self.power_samples_w:
            return sum(self.power_samples_w) / len(self.power_samples_w)
        return None


class EnergyMeter:
    source = "none"
    available = False
    reads_power = False  # has an instantaneous power reading (_power_w) to sample
    reads_aside = False  # reads the counter on the aside thread (a slow read: NVML's)

    # The sampling thread wakes inside the measured window and takes the GIL from the engine's
    # Python loop. Its samples only matter when the counter gives no energy, so it samples
    # densely only then ("auto"); while the counter works it takes a sparse backup, in case the
    # counter's closing read fails. "dense" samples every window densely, "off" never.
    SAMPLE_PERIOD_S = 0.05   # dense: the window's energy comes from these samples
    BACKUP_PERIOD_S = 1.0    # auto, counter working: a few samples for a failed closing read
    SAMPLING = get_args(PowerSampling)

    def __init__(self, reason: str = "no power meter on this device", sampling: str = "auto"):
        if sampling not in self.SAMPLING:
            raise ValueError(f"sampling {sampling!r} is not one of {self.SAMPLING}")
        self.reason = reason
        self.sampling = sampling
        self.used: Counter[str] = Counter()  # windows per method actually used
        self.sampled: Counter[float] = Counter()  # windows per sampling period (s) used
        self._unsettled: list[EnergyWindow] = []  # windows whose aside reads may still be out
        self.sample_gaps_s: list[float] = []  # the driver's samples' spacing, per BUFFER window

    def observer(self) -> str | None:
        """What this meter did while its windows were measured (a record's `observers`);
        None when it did nothing there."""
        if not self.available:
            return None
        self.settle()
        counter = "energy counter read at both ends of the window"
        if self.reads_aside:  # the thread waits in NVML with the GIL released
            counter += " by a reader thread beside it"
        if n_buf := self.used.get(BUFFER):
            rest = sum(self.used.values()) - n_buf
            counter = (f"the driver's power samples read as the window closed, by a reader thread "
                       f"beside it, and integrated over it ({n_buf} window(s)); energy counter read "
                       + (f"at both ends in {rest} other window(s)" if rest else
                          "at the window's opening only, in case the samples fell short"))
        if not self.sampled:
            none = "no power sampling" if self.reads_aside else "no sampling thread"
            return f"{self.source}: {counter}; {none} (sampling={self.sampling})"
        periods = ", ".join(f"every {period * 1000:.0f} ms in {n} window(s)"
                            for period, n in sorted(self.sampled.items()))
        return f"{self.source}: {counter}; power sampled by a thread inside it {periods} " \
               f"(sampling={self.sampling})"

    def reset(self) -> None:
        """Forget the windows so far (a serving session measures many points)."""
        self.settle()
        self.used.clear()
        self.sampled.clear()
        self.sample_gaps_s.clear()

    def describe(self) -> dict:
        return {"available": self.available, "source": self.source,
                **({} if self.available else {"reason": self.reason}), **self._methods()}

    def _methods(self) -> dict:
        """The method the windows so far actually used (absent before any window read)."""
        self.settle()
        if not self.used:
            return {}
        method = next(iter(self.used)) if len(self.used) == 1 else \
            ", ".join(f"{m} ({n} windows)" for m, n in sorted(self.used.items()))
        gap = {"sample_gap_s": round(statistics.median(self.sample_gaps_s), 4)} if self.sample_gaps_s else {}
        return {"method": method, "windows_by_method": dict(self.used), **gap}

    def _read(self):
        """A counter reading (opaque to the window), or None when there is none."""
        return self._read_j()

    def _delta_j(self, r0, r1) -> float | None:
        """Joules between two readings; None when they cannot be compared."""
        return r1 - r0 if r1 >= r0 else None

    def _read_j(self) -> float | None:
        return None

    def _power_w(self) -> float | None:
        return None

    def _take_buffer(self, w: EnergyWindow) -> bool:
        """Set w.buffer_j from the driver's power samples when they cover the window."""
        return False

    def sample_period_s(self, opening_read, dense_s: float | None = None) -> float | None:
        """The sampling thread's period for a window whose counter read `opening_read` at its
        start; None: no thread."""
        if not (self.available and self.reads_power) or self.sampling == "off":
            return None
        dense_s = dense_s or self.SAMPLE_PERIOD_S
        if self.sampling == "dense" or opening_read is None:
            return dense_s
        return max(self.BACKUP_PERIOD_S, dense_s)

    def settle(self) -> None:
        """Settle every window whose reads may still be out on the aside thread."""
        while self._unsettled:
            self._unsettled.pop(0).settle()

    @contextmanager
    def window(self, sample_period_s: float | None = None,
               inside: Sequence[Callable[[], None]] = (), at_close: Sequence[Callable[[], None]] = ()):
        """sample_period_s: the dense sampling period (SAMPLE_PERIOD_S unless given). inside:
        more reads to take on the aside thread inside the window, right after the counter's
        opening read (e.g. the contention watch's GPU list), so they leave the closing edge.
        at_close: reads to take on the aside thread as the window closes, before the counter's
        closing read (e.g. the closing GPM samples), so that waiting for them is not waiting
        for the counter. Both are read when the window opens and closes: a list may grow."""
        w = EnergyWindow()
        stop = threading.Event()
        ends: list = []  # the counter's opening and closing readings

        def read(at: str) -> None:
            t0 = time.perf_counter()
            ends.append(self._read())
            setattr(w, at, (t0 + time.perf_counter()) / 2)

        periods: list[float] = []  # counted in self.sampled when settled, on the caller's thread

        def opening() -> float | None:
            read("t_read0")
            period = self.sample_period_s(ends[0], sample_period_s)
            if period is not None:
                periods.append(period)
            return period

        def sample(period: float) -> None:
            while not stop.wait(period):
                p = self._power_w()
                if p is not None:
                    w.power_samples_w.append(p)

        def reads() -> None:  # on the aside thread: both reads, and the samples between them
            period = None
            try:
                period = opening()
            finally:  # whatever failed, the hooks run and the window closes with a read
                for fn in inside:
                    fn()
                try:
                    if period is None:
                        stop.wait()
                    else:
                        sample(period)
                finally:
                    stop.wait()
                    for fn in at_close:
                        fn()
                    if not self._take_buffer(w):
                        read("t_read1")

        th = job = None
        if self.reads_aside:  # queued behind the previous window's closing reads
            job = aside(reads)
        else:
            period = opening()
            for fn in inside:
                aside(fn)
            if period is not None:
                th = threading.Thread(target=sample, args=(period,), daemon=True)
                th.start()
        w.t_start, w.wall_start = time.perf_counter(), time.time()
        try:
            yield w
        finally:
            w.t_end, w.wall_end = time.perf_counter(), time.time()
            stop.set()
            if not self.reads_aside:
                for fn in at_close:
                    aside(fn)
                if not self._take_buffer(w):
                    read("t_read1")

            def settle() -> None:
                if job is not None:
                    job.result()
                if th is not None:
                    th.join()
                e0, e1 = (*ends, None, None)[:2]  # no closing read where the buffer covered
                delta = self._delta_j(e0, e1) if e0 is not None and e1 is not None else None
                if w.buffer_j is not None:
                    w._energy_j, w._method = w.buffer_j, BUFFER
                    if w.buffer_gap_s:
                        self.sample_gaps_s.append(w.buffer_gap_s)
                elif delta is not None:
                    w._energy_j, w._method = delta, COUNTER
                elif w.power_samples_w:
                    w._energy_j = sum(w.power_samples_w) / len(w.power_samples_w) * w.duration_s
                    w._method = SAMPLED
                if w._method:
                    self.used[w._method] += 1
                self.sampled.update(periods)

            w._settle = settle
            if self.reads_aside:
                self._unsettled.append(w)
            else:
                w.settle()


# NVML indices -> whether their energy counters (and power sample buffers) read: a property of
# the devices and driver, so each process probes once, not once per point (a meter per point).
_HAS_COUNTER: dict[tuple[int, ...], bool] = {}
_HAS_BUFFER: dict[tuple[int, ...], bool] = {}
# nvmlValueType_t -> the nvmlValue_t member holding it
_VALUE_FIELD = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}


class NvmlMeter(EnergyMeter):
    source = "nvml"
    available = True
    reads_power = True
    reads_aside = True  # ~4 ms a read on an H200

    def __init__(self, indices: list[int], sampling: str = "auto"):
        import pynvml

        self._nvml = pynvml
        pynvml.nvmlInit()
        super().__init__("", sampling)
        self.indices = indices
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
        key = tuple(indices)
        if key not in _HAS_COUNTER:  # a read costs ~3.9 ms on an H200: probed once a process
            try:
                for h in self.handles:
                    pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
                _HAS_COUNTER[key] = True
            except pynvml.NVMLError:
                _HAS_COUNTER[key] = False
        self.has_counter = _HAS_COUNTER[key]
        if key not in _HAS_BUFFER:
            try:
                for h in self.handles:
                    pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, 0)
                _HAS_BUFFER[key] = True
            except (pynvml.NVMLError, AttributeError):  # no samples yet, or an old pynvml
                _HAS_BUFFER[key] = False
        self.has_buffer = _HAS_BUFFER[key]

    def describe(self) -> dict:
        # before any window: the method it will try; after: the ones it used (_methods)
        planned = BUFFER if self.has_buffer else COUNTER if self.has_counter else SAMPLED
        return {"available": True, "source": "nvml", "method": planned,
                "devices": self.indices, "sampling": self.sampling, **self._methods()}

    def _read_j(self) -> float | None:
        if not self.has_counter:
            return None
        try:
            return sum(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h)
                       for h in self.handles) / 1e3
        except self._nvml.NVMLError:  # this window falls back to sampled power
            return None

    def _power_w(self) -> float | None:
        try:
            return sum(self._nvml.nvmlDeviceGetPowerUsage(h) for h in self.handles) / 1e3
        except self._nvml.NVMLError:
            return None

    def _take_buffer(self, w: EnergyWindow) -> bool:
        if not self.has_buffer:
            return False
        nv, total, gaps = self._nvml, 0.0, []
        since_us = int((w.wall_start - 2 * HOLD_MAX_S) * 1e6)  # samples after it come back
        for h in self.handles:
            try:
                kind, got = nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, since_us)
            except nv.NVMLError:
                return False
            member = _VALUE_FIELD.get(kind, "uiVal")
            pts = sorted((x.timeStamp / 1e6, getattr(x.sampleValue, member) / 1e3) for x in got)
            if (j := integrate_j(pts, w.wall_start, w.wall_end)) is None:
                return False  # the buffer no longer reaches the window's start: the counter's
            total += j
            gaps += [b[0] - a[0] for a, b in zip(pts, pts[1:])]
        w.buffer_j, w.buffer_gap_s = total, statistics.median(gaps) if gaps else None
        return True


class RaplMeter(EnergyMeter):
    source = "rapl"
    available = True

    def __init__(self, files: list[Path], sampling: str = "auto"):
        super().__init__("", sampling)
        self.files = files
        self.ranges_uj = [_int_or_none(f.with_name("max_energy_range_uj")) for f in files]

    def describe(self) -> dict:
        return {"available": True, "source": "rapl", "domains": [str(f) for f in self.files],
                **self._methods()}

    def _read(self) -> list[int] | None:
        values = [_int_or_none(f) for f in self.files]
        return None if None in values else values

    def _delta_j(self, r0, r1) -> float | None:
        total_uj = 0
        for a, b, span in zip(r0, r1, self.ranges_uj):
            if b < a:  # wrapped once (a window shorter than the wrap time, minutes, is assumed)
                if span is None:
                    return None
                b += span + 1
            total_uj += b - a
        return total_uj / 1e6

    def _read_j(self) -> float | None:
        r = self._read()
        return None if r is None else sum(r) / 1e6


def _int_or_none(f: Path) -> int | None:
    try:
        return int(f.read_text())
    except (OSError, ValueError):
        return None


def visible_cuda_indices(device: str, count: int = 1) -> list[int]:
    """NVML indices of the devices a run uses (honours CUDA_VISIBLE_DEVICES)."""
    import os

    first = int(device.split(":")[1]) if ":" in device else 0
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    logical = list(range(first, first + count))
    if vis:
        ids = [v.strip() for v in vis.split(",") if v.strip()]
        if all(i.isdigit() for i in ids):
            return [int(ids[i]) for i in logical if i < len(ids)]
    return logical


def open_meter(device: str, count: int = 1, powercap: Path = Path("/sys/class/powercap"),
               sampling: str = "auto") -> EnergyMeter:
    """The device's meter; `sampling` as EnergyMeter.SAMPLING (the power-sampling thread)."""
    if device.startswith("cuda"):
        try:
            return NvmlMeter(visible_cuda_indices(device, count), sampling)
        except Exception as e:  # no driver, no pynvml
            return EnergyMeter(f"NVML unavailable: {e}")
    # package domains only (intel-rapl:N); sub-domains (intel-rapl:N:M) are inside them
    files = sorted(Path(p) for p in glob.glob(str(powercap / "intel-rapl:*" / "energy_uj"))
                   if Path(p).parent.name.count(":") == 1)
    readable = [f for f in files if _int_or_none(f) is not None]
    if readable:
        return RaplMeter(readable, sampling)
    return EnergyMeter("no readable power meter for the CPU (RAPL absent or not permitted)")
