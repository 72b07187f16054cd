"""Power and energy over a measured window.

NVIDIA: NVML's total-energy counter (mJ, read at both ends of the window) summed over every
device the run used, plus power sampled in a thread (mW -> W) for the profile. CPU: Linux RAPL
package counters when readable. Anywhere else the meter says why it is unavailable; a missing
reading is recorded as absent, never as zero.
"""

from __future__ import annotations

import glob
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class EnergyWindow:
    t_start: float = 0.0
    t_end: float = 0.0
    energy_j: float | None = None
    power_samples_w: list[float] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return self.t_end - self.t_start

    @property
    def avg_power_w(self) -> float | None:
        if self.energy_j is not None and self.duration_s > 0:
            return self.energy_j / self.duration_s
        if self.power_samples_w:
            return sum(self.power_samples_w) / len(self.power_samples_w)
        return None


class EnergyMeter:
    source = "none"
    available = False

    def __init__(self, reason: str = "no power meter on this device"):
        self.reason = reason

    def describe(self) -> dict:
        return {"available": self.available, "source": self.source,
                **({} if self.available else {"reason": self.reason})}

    def _read_j(self) -> float | None:
        return None

    def _power_w(self) -> float | None:
        return None

    @contextmanager
    def window(self, sample_period_s: float = 0.05):
        w = EnergyWindow()
        stop = threading.Event()

        def sample():
            while not stop.wait(sample_period_s):
                p = self._power_w()
                if p is not None:
                    w.power_samples_w.append(p)

        th = None
        if self.available:
            th = threading.Thread(target=sample, daemon=True)
            th.start()
        e0 = self._read_j()
        w.t_start = time.perf_counter()
        try:
            yield w
        finally:
            w.t_end = time.perf_counter()
            e1 = self._read_j()
            if th is not None:
                stop.set()
                th.join()
            if e0 is not None and e1 is not None and e1 >= e0:
                w.energy_j = e1 - e0
            elif w.power_samples_w:
                w.energy_j = sum(w.power_samples_w) / len(w.power_samples_w) * w.duration_s


class NvmlMeter(EnergyMeter):
    source = "nvml"
    available = True

    def __init__(self, indices: list[int]):
        import pynvml

        self._nvml = pynvml
        pynvml.nvmlInit()
        self.indices = indices
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
        self.has_counter = True
        try:
            for h in self.handles:
                pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        except pynvml.NVMLError:
            self.has_counter = False
        self.reason = ""

    def describe(self) -> dict:
        return {"available": True, "source": "nvml",
                "method": "total-energy counter" if self.has_counter else "sampled power",
                "devices": self.indices}

    def _read_j(self) -> float | None:
        if not self.has_counter:
            return None
        return sum(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self.handles) / 1e3

    def _power_w(self) -> float | None:
        try:
            return sum(self._nvml.nvmlDeviceGetPowerUsage(h) for h in self.handles) / 1e3
        except self._nvml.NVMLError:
            return None


class RaplMeter(EnergyMeter):
    source = "rapl"
    available = True

    def __init__(self, files: list[Path]):
        self.files = files
        self.reason = ""
        self._last: tuple[float, float] | None = None

    def describe(self) -> dict:
        return {"available": True, "source": "rapl", "domains": [str(f) for f in self.files]}

    def _read_j(self) -> float | None:
        # Counters wrap at max_energy_range_uj; a window shorter than the wrap time is assumed.
        return sum(int(f.read_text()) for f in self.files) / 1e6


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


def open_meter(device: str, count: int = 1) -> EnergyMeter:
    if device.startswith("cuda"):
        try:
            return NvmlMeter(visible_cuda_indices(device, count))
        except Exception as e:  # no driver, no pynvml
            return EnergyMeter(f"NVML unavailable: {e}")
    files = [Path(p) for p in glob.glob("/sys/class/powercap/intel-rapl:*/energy_uj")
             if p.count(":") == 1]
    readable = []
    for f in files:
        try:
            int(f.read_text())
            readable.append(f)
        except (OSError, ValueError):
            pass
    if readable:
        return RaplMeter(readable)
    return EnergyMeter("no readable power meter for the CPU (RAPL absent or not permitted)")
