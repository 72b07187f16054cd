"""Clocks, clock-event reasons and the power limit through a window (measure/clocks.py, issue 37
item 6), against readings and a fake NVML whose state changes at known times: the fractions and
time-weighted clocks expected are computed here from those times."""

import time
import types

import pytest

from llmbench.measure.clocks import ClockTrace, Reading
from llmbench.measure.gpm import CounterWatch

CAP, IDLE = 0x4, 0x1


def test_sample_and_hold_fractions_and_clock_means_over_the_window():
    # window [0.1, 1.1]: 1980 MHz uncapped until 0.3, capped at 1590 MHz until 0.7, then free
    readings = [Reading(0.0, 1980, 2619, 0), Reading(0.3, 1590, 2619, CAP),
                Reading(0.7, 1980, 2619, 0), Reading(1.2, 1980, 2619, CAP)]  # after the end
    t = ClockTrace()
    t.add_window(readings, 0.1, 1.1)
    s = t.summary()
    assert s["reason_fractions"] == {"sw_power_cap": pytest.approx(0.4 / 1.0)}
    assert s["throttle_fraction"] == pytest.approx(0.4)
    assert s["sm_clock_mhz"] == {"mean": pytest.approx((0.2 * 1980 + 0.4 * 1590 + 0.4 * 1980) / 1.0),
                                 "min": 1590, "max": 1980}
    assert s["mem_clock_mhz"]["mean"] == pytest.approx(2619)
    assert s["samples"] == 2 and s["window_s"] == pytest.approx(1.0) and s["max_gap_s"] == pytest.approx(0.4)
    # a second window of 2 s, capped throughout (its only reading before it): weighted by time
    t.add_window([Reading(1.9, 1500, 2619, CAP | IDLE)], 2.0, 4.0)
    s = t.summary()
    assert s["reason_fractions"]["sw_power_cap"] == pytest.approx((0.4 + 2.0) / 3.0)
    assert s["reason_fractions"]["gpu_idle"] == pytest.approx(2.0 / 3.0)
    assert s["sm_clock_mhz"]["mean"] == pytest.approx((0.2 * 1980 + 0.4 * 1590 + 0.4 * 1980 + 2 * 1500) / 3)


def test_a_refused_mask_is_not_counted_as_unthrottled_time():
    t = ClockTrace()
    t.add_window([Reading(0.0, 1980, None, CAP), Reading(0.5, 1980, None, None)], 0.0, 1.0)
    assert t.reason_fractions() == {"sw_power_cap": 1.0}  # of the 0.5 s the mask was known
    assert "mem_clock_mhz" not in t.summary()


def timed_nvml(cap_from_s, cap_to_s, limit_mw=700_000, default_mw=700_000):
    """A pynvml whose GPU 0 is power-capped (mask 0x4, SM 1590 MHz) between cap_from_s and
    cap_to_s after nv.t0 (perf_counter), free (mask 0, SM 1980 MHz) otherwise."""
    nv = types.ModuleType("pynvml")
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM, nv.NVML_TEMPERATURE_GPU = 1, 2, 0
    nv.t0 = None

    def capped():
        return nv.t0 is not None and cap_from_s <= time.perf_counter() - nv.t0 < cap_to_s

    nv.nvmlDeviceGetHandleByIndex = lambda i: i
    nv.nvmlDeviceGetClockInfo = lambda h, k: (1590 if capped() else 1980) if k == 1 else 2619
    nv.nvmlDeviceGetTemperature = lambda h, s: 50
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda h: CAP if capped() else 0
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda h: limit_mw
    nv.nvmlDeviceGetPowerManagementDefaultLimit = lambda h: default_mw
    return nv


def test_a_cap_inside_the_window_is_seen_though_both_edges_are_free():
    """Before issue 37 only the edges were read: this window, free at both, was not throttled."""
    nv = timed_nvml(0.1, 0.3, limit_mw=500_000)
    w = CounterWatch([0], nv, sample_period_s=0.005)
    with w.window():
        nv.t0 = time.perf_counter()
        while time.perf_counter() - nv.t0 < 0.4:
            time.sleep(0.001)
    r = w.result()
    g = r["gpus"][0]
    assert g["start"]["clocks_event_reasons"] == [] and g["end"]["clocks_event_reasons"] == []
    assert r["throttled"] is True and r["throttle_reasons"] == ["sw_power_cap"]
    # sample-and-hold misplaces each of the two changes by at most the gap between the readings
    # around it: the bound comes from the thread's actual spacing (a shared CPU delays it)
    window_s = r["window_s"]
    frac = r["reason_fractions"]["sw_power_cap"]
    n = g["sampled"]["samples"]
    assert n >= 10
    max_gap_s = g["sampled"]["max_gap_s"]
    assert frac == pytest.approx(0.2 / window_s, abs=2 * max_gap_s / window_s)
    assert r["throttle_fraction"] == frac
    mean = g["sampled"]["sm_clock_mhz"]["mean"]
    assert mean == pytest.approx(1980 - (1980 - 1590) * 0.2 / window_s, abs=390 * 2 * max_gap_s / window_s)
    assert r["power_limit_w"] == g["power_limit_w"] == {"enforced": 500.0, "default": 700.0}
    assert "every 5 ms" in w.observer()


def test_a_power_limit_changed_between_windows_is_recorded():
    nv = timed_nvml(9, 9)
    w = CounterWatch([0], nv, sample_period_s=None)
    with w.window():
        pass
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda h: 450_000
    with w.window():
        pass
    r = w.result()
    assert r["gpus"][0]["power_limit_changed_w"] == [{"enforced": 700.0, "default": 700.0},
                                                     {"enforced": 450.0, "default": 700.0}]
    assert r["power_limit_changed"] is True and r["power_limit_w"] == {"enforced": 450.0, "default": 700.0}
    assert "nothing inside it" in w.observer() and "sampled" not in r["gpus"][0]
