"""The GPU's clocks, clock-event (throttle) reasons and power limit through a measured window.

Read at a window's edges alone, a power cap that held the clocks down for the middle of the
window and let go before its end is missed (issue 37: an H200 ran a dense bf16 matmul at 732
TFLOP/s for its first burst and 676-681 sustained at ~1590 MHz and 691 W under its 700 W
limit). A ClockSampler reads SM clock, memory clock and the clock-event reason mask of every
GPU of the point on a thread every SAMPLE_PERIOD_S through the window; each reading holds until
the next (sample-and-hold), so a reason's fraction is the share of the window's time its bit
was set in the reading in force, and a clock's mean is weighted by the time each reading held.
The power limit (enforced and default) is read once per window, at its opening.

The reads are ctypes calls into NVML (the GIL is released while they wait); a wake holds the GIL
for the Python around three reads per GPU, every SAMPLE_PERIOD_S.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# clock-event reason bits (nvmlClocksEventReason*) -> name. The ones in THROTTLE slow the clocks
# down against the workload's will: a window that saw one is flagged like a contended one. Idle,
# application clocks, sync boost and display clocks are not throttling.
REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
THROTTLE = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                      "hw_power_brake_slowdown"})
SAMPLE_PERIOD_S = 0.1


def reason_names(mask: int) -> list[str]:
    names = [n for bit, n in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return names + ([f"unknown_0x{rest:x}"] if rest else [])


@dataclass
class Reading:
    t_s: float
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    mask: int | None = None


def read_state(nv, h, t_s: float) -> Reading:
    """One reading of a GPU's clocks and reason mask; a field NVML refuses is None."""
    reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    r = Reading(t_s)
    for key, read in (("sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                      ("mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                      ("mask", (lambda: reasons(h)) if reasons else None)):
        if read is None:
            continue
        try:
            setattr(r, key, int(read()))
        except Exception:  # left None: the trace counts only the time it knows
            pass
    return r


def power_limits_w(nv, h) -> dict[str, float]:
    """{"enforced": W, "default": W} as NVML gives them (mW there); a refused one left out."""
    out = {}
    for key, fn in (("enforced", "nvmlDeviceGetEnforcedPowerLimit"),
                    ("default", "nvmlDeviceGetPowerManagementDefaultLimit")):
        try:
            out[key] = getattr(nv, fn)(h) / 1e3
        except Exception:
            pass
    return out


@dataclass
class ClockTrace:
    """One GPU's readings over the windows of a point, summed as time-weighted totals."""
    known_s: dict[str, float] = field(default_factory=dict)   # field -> seconds it was read
    sums: dict[str, float] = field(default_factory=dict)      # clock field -> sum(MHz x s)
    mins: dict[str, int] = field(default_factory=dict)
    maxs: dict[str, int] = field(default_factory=dict)
    reason_s: dict[str, float] = field(default_factory=dict)  # reason -> seconds active
    window_s: float = 0.0
    samples: int = 0
    max_gap_s: float = 0.0  # the longest a reading held inside a window: the fractions' resolution

    def add_window(self, readings: Sequence[Reading], a: float, b: float) -> None:
        """Readings taken over [a, b] (sorted by time): each holds from its time (or a) until the
        next reading (or b); one taken before a stands for the window's start."""
        if b <= a:
            return
        self.window_s += b - a
        pts = sorted(readings, key=lambda r: r.t_s)
        inside = [r.t_s for r in pts if a < r.t_s < b]
        self.samples += len(inside)
        edges = [a, *inside, b]
        self.max_gap_s = max(self.max_gap_s, *(y - x for x, y in zip(edges, edges[1:])))
        for i, r in enumerate(pts):
            lo = max(r.t_s, a)
            hi = min(pts[i + 1].t_s if i + 1 < len(pts) else b, b)
            if hi <= lo:
                continue
            dt = hi - lo
            for key in ("sm_clock_mhz", "mem_clock_mhz"):
                v = getattr(r, key)
                if v is None:
                    continue
                self.known_s[key] = self.known_s.get(key, 0.0) + dt
                self.sums[key] = self.sums.get(key, 0.0) + v * dt
                self.mins[key] = min(self.mins.get(key, v), v)
                self.maxs[key] = max(self.maxs.get(key, v), v)
            if r.mask is not None:
                self.known_s["mask"] = self.known_s.get("mask", 0.0) + dt
                for name in reason_names(r.mask):
                    self.reason_s[name] = self.reason_s.get(name, 0.0) + dt

    def reason_fractions(self) -> dict[str, float]:
        """reason -> the fraction of the time the mask was read during which it was active."""
        known = self.known_s.get("mask")
        return {n: s / known for n, s in sorted(self.reason_s.items())} if known else {}

    def throttle_fraction(self) -> float | None:
        """The largest fraction of a THROTTLE reason (reasons overlap; the time under any of them
        is at least this)."""
        fr = self.reason_fractions()
        if not self.known_s.get("mask"):
            return None
        return max((v for n, v in fr.items() if n in THROTTLE), default=0.0)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"samples": self.samples, "window_s": self.window_s,
                               "max_gap_s": self.max_gap_s}
        for key in ("sm_clock_mhz", "mem_clock_mhz"):
            if self.known_s.get(key):
                out[key] = {"mean": self.sums[key] / self.known_s[key], "min": self.mins[key],
                            "max": self.maxs[key]}
        if self.known_s.get("mask"):
            out["reason_fractions"] = self.reason_fractions()
            out["throttle_fraction"] = self.throttle_fraction()
        return out


class ClockSampler:
    """Reads every handle's clocks and reason mask on a thread every `period_s` between start()
    and stop(); stop() returns each handle's readings (the start and stop reads included)."""

    def __init__(self, nv, handles: Sequence, period_s: float = SAMPLE_PERIOD_S,
                 clock: Callable[[], float] = time.perf_counter):
        self.nv, self.handles, self.period_s, self.clock = nv, list(handles), period_s, clock
        self.readings: list[list[Reading]] = [[] for _ in self.handles]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read_all(self) -> None:
        for g, h in enumerate(self.handles):
            self.readings[g].append(read_state(self.nv, h, self.clock()))

    def start(self) -> None:
        self._read_all()

        def loop() -> None:
            while not self._stop.wait(self.period_s):
                self._read_all()

        self._thread = threading.Thread(target=loop, daemon=True, name="llmbench-clocks")
        self._thread.start()

    def halt(self) -> None:
        """Stop reading (cheap: the window's closing edge calls it; stop() collects later)."""
        self._stop.set()

    def stop(self) -> list[list[Reading]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read_all()
        return self.readings
