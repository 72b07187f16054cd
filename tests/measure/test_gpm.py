"""Hardware counters (measure/gpm.py) against a fake NVML whose GPM counters are known: each fake
GPU integrates a utilisation the test sets over a fake clock, and NVML's metric between two
samples is that integral over the elapsed time, as the real one is. The expected values are
computed here from the utilisations and durations the test chose."""

import sys
import time
import types

import pytest

from llmbench.measure.gpm import CountedMeter, CounterWatch, attach, reason_names
from llmbench.measure.power import EnergyMeter
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

DRAM, SM, OCC, TENSOR = 10, 2, 3, 5


def fake_nvml(n_gpus=2, supported=True, refuse=(), mask=0, sm_clock=1980, real_time=False):
    nv = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    nv.NVMLError = NVMLError
    nv.NVML_GPM_METRIC_DRAM_BW_UTIL, nv.NVML_GPM_METRIC_SM_UTIL = DRAM, SM
    nv.NVML_GPM_METRIC_SM_OCCUPANCY, nv.NVML_GPM_METRIC_ANY_TENSOR_UTIL = OCC, TENSOR
    nv.NVML_GPM_METRICS_GET_VERSION = 1
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM, nv.NVML_TEMPERATURE_GPU = 1, 2, 0
    st = {"t": 100.0, "integral": {h: {} for h in range(n_gpus)}, "util": {h: {} for h in range(n_gpus)},
          "mask": {h: mask for h in range(n_gpus)}, "temp": {h: 40 for h in range(n_gpus)},
          "sm_clock": {h: sm_clock for h in range(n_gpus)}, "allocs": 0, "frees": 0}
    nv.state = st
    nv.nvmlInit = lambda: None
    nv.nvmlDeviceGetHandleByIndex = lambda i: i
    nv.nvmlGpmQueryDeviceSupport = lambda h: types.SimpleNamespace(isSupportedDevice=int(supported))
    nv.nvmlDeviceGetClockInfo = lambda h, t: st["sm_clock"][h] if t == 1 else 3201
    nv.nvmlDeviceGetTemperature = lambda h, s: st["temp"][h]
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda h: st["mask"][h]

    class Sample:
        snap = None

    def alloc():
        st["allocs"] += 1
        return Sample()

    def get(h, s):
        s.snap = (time.perf_counter() if real_time else st["t"], dict(st["integral"][h]))
        return s

    def free(s):
        st["frees"] += 1

    class Metric:
        def __init__(self):
            self.metricId, self.nvmlReturn, self.value = 0, 0, 0.0

    class MetricsGet:
        def __init__(self):
            self.version = self.numMetrics = 0
            self.sample1 = self.sample2 = None
            self.metrics = [Metric() for _ in range(8)]

    def metrics_get(mg):
        (t1, i1), (t2, i2) = mg.sample1.snap, mg.sample2.snap
        for m in mg.metrics[:mg.numMetrics]:
            if m.metricId in refuse:
                m.nvmlReturn = 3  # NVML_ERROR_NOT_SUPPORTED
            else:
                m.value = (i2.get(m.metricId, 0.0) - i1.get(m.metricId, 0.0)) / (t2 - t1)
        return mg

    nv.nvmlGpmSampleAlloc, nv.nvmlGpmSampleGet, nv.nvmlGpmSampleFree = alloc, get, free
    nv.c_nvmlGpmMetricsGet_t, nv.nvmlGpmMetricsGet = MetricsGet, metrics_get

    def run(dt, **util_by_gpu):
        """The GPUs work for dt fake seconds at the given utilisations: run(2, g0={DRAM: 85.7})."""
        for h in range(n_gpus):
            for mid, pct in util_by_gpu.get(f"g{h}", {}).items():
                st["integral"][h][mid] = st["integral"][h].get(mid, 0.0) + pct * dt
        st["t"] += dt

    nv.run = run
    nv.clock = lambda: st["t"]
    return nv


def watch(nv, n=2):
    return CounterWatch(list(range(n)), nv, clock=nv.clock)


def test_two_gpus_two_windows_duration_weighted():
    nv = fake_nvml(2)
    w = watch(nv)
    with w.window():
        nv.run(2.0, g0={DRAM: 85.7, SM: 96, TENSOR: 10, OCC: 40}, g1={DRAM: 80.0, SM: 90, TENSOR: 12, OCC: 30})
    with w.window():
        nv.run(6.0, g0={DRAM: 20.0, SM: 50, TENSOR: 70, OCC: 20}, g1={DRAM: 30.0, SM: 60, TENSOR: 80, OCC: 10})
    # the closing reads are taken on a thread as the window closes, while the point's
    # bookkeeping leaves the GPU idle: the work after them is never counted
    w.settle()
    nv.run(50.0, g0={DRAM: 99.0}, g1={DRAM: 99.0})
    r = w.result()
    g0 = (2 * 85.7 + 6 * 20) / 8
    g1 = (2 * 80 + 6 * 30) / 8
    assert r["source"] == "nvml" and r["windows"] == 2 and r["window_s"] == pytest.approx(8.0)
    assert r["gpus"][0]["dram_bw_util_pct"] == pytest.approx(g0)
    assert r["gpus"][1]["dram_bw_util_pct"] == pytest.approx(g1)
    assert r["dram_bw_util_pct"] == pytest.approx((g0 + g1) / 2)
    assert r["dram_bw_util_min_gpu_pct"] == pytest.approx(min(g0, g1))
    assert r["tensor_util_pct"] == pytest.approx(((2 * 10 + 6 * 70) / 8 + (2 * 12 + 6 * 80) / 8) / 2)
    assert r["sm_util_pct"] == pytest.approx(((2 * 96 + 6 * 50) / 8 + (2 * 90 + 6 * 60) / 8) / 2)
    assert r["sm_occupancy_pct"] == pytest.approx(((2 * 40 + 6 * 20) / 8 + (2 * 30 + 6 * 10) / 8) / 2)
    assert r["gpm"] == {"available": True} and "absent_metrics" not in r
    assert r["throttled"] is False and r["throttle_reasons"] == []
    assert r["gpus"][0]["start"] == {"sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "temperature_c": 40,
                                     "clocks_event_mask": 0, "clocks_event_reasons": []}
    assert nv.state["allocs"] == nv.state["frees"] == 8  # 2 windows x 2 GPUs x 2 samples


def test_throttle_at_a_window_edge_flags_the_record():
    nv = fake_nvml(1)
    w = watch(nv, 1)
    with w.window():
        nv.run(3.0, g0={DRAM: 60})
        nv.state["mask"][0] = 0x4 | 0x1   # power cap (throttle) + idle (not)
        nv.state["temp"][0] = 83
        nv.state["sm_clock"][0] = 1410
    r = w.result()
    assert r["throttled"] is True and r["throttle_reasons"] == ["sw_power_cap"]
    assert r["gpus"][0]["end"]["clocks_event_reasons"] == ["gpu_idle", "sw_power_cap"]
    assert r["gpus"][0]["end"]["temperature_c"] == 83 and r["gpus"][0]["min_sm_clock_mhz"] == 1410
    rec = Record(run_id="t", kind="inference", backend=BackendInfo(name="x"), model=ModelInfo(name="m"),
                 hardware=HardwareInfo(name="h"))
    attach(rec, r)
    assert rec.hardware_counters["dram_bw_util_pct"] == pytest.approx(60)
    assert any(n.startswith("throttled:") and "sw_power_cap" in n for n in rec.notes)


def test_idle_reason_alone_is_not_throttling():
    nv = fake_nvml(1, mask=0x1)
    w = watch(nv, 1)
    with w.window():
        nv.run(1.0)
    r = w.result()
    assert r["throttled"] is False and r["dram_bw_util_pct"] == 0.0  # a measured zero: idle GPU
    assert reason_names(0x1 | 0x40 | 0x1000) == ["gpu_idle", "hw_thermal_slowdown", "unknown_0x1000"]


def test_gpu_without_gpm_keeps_clocks_and_says_why_metrics_are_absent():
    nv = fake_nvml(1, supported=False)
    w = watch(nv, 1)
    with w.window():
        nv.run(2.0, g0={DRAM: 50})
    r = w.result()
    assert r["gpm"]["available"] is False and "Hopper" in r["gpm"]["reason"]
    for k in ("dram_bw_util_pct", "sm_util_pct", "sm_occupancy_pct", "tensor_util_pct"):
        assert k not in r and "Hopper" in r["absent_metrics"][k]
    assert r["gpus"][0]["start"]["sm_clock_mhz"] == 1980 and nv.state["allocs"] == 0


def test_a_metric_nvml_refuses_is_absent_with_its_reason():
    nv = fake_nvml(1, refuse=(OCC,))
    w = watch(nv, 1)
    with w.window():
        nv.run(2.0, g0={DRAM: 40, OCC: 33})
    r = w.result()
    assert r["dram_bw_util_pct"] == pytest.approx(40) and "sm_occupancy_pct" not in r
    assert "NVML_GPM_METRIC_SM_OCCUPANCY" in r["absent_metrics"]["sm_occupancy_pct"]


def test_no_permission_for_the_support_query():
    nv = fake_nvml(1)

    def refuse(h):
        raise nv.NVMLError("Insufficient Permissions")

    nv.nvmlGpmQueryDeviceSupport = refuse
    w = watch(nv, 1)
    with w.window():
        nv.run(1.0, g0={DRAM: 40})
    r = w.result()
    assert "dram_bw_util_pct" not in r and "Insufficient Permissions" in r["absent_metrics"]["dram_bw_util_pct"]


def test_cpu_and_missing_nvml_are_absent_with_the_reason(monkeypatch):
    assert "no GPU counters" in CounterWatch.for_device("cpu").result()["absent"]
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    r = CounterWatch.for_device("cuda:0").result()
    assert set(r) == {"absent"} and r["absent"].startswith("NVML unavailable")


def test_for_device_reads_every_gpu_of_the_point(monkeypatch):
    nv = fake_nvml(4)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    w = CounterWatch.for_device("cuda", 2)
    w.clock = nv.clock
    with w.window():
        nv.run(2.0, g2={DRAM: 70}, g3={DRAM: 50})
    r = w.result()
    assert r["gpu_indices"] == [2, 3] and r["dram_bw_util_pct"] == pytest.approx(60)


def test_counted_meter_take_is_one_points_windows():
    nv = fake_nvml(1)
    m = CountedMeter(EnergyMeter("none"), watch(nv, 1))
    with m.window():
        nv.run(2.0, g0={DRAM: 10})
    first = m.take()
    with m.window():
        nv.run(2.0, g0={DRAM: 30})
    second = m.take()
    assert first["dram_bw_util_pct"] == pytest.approx(10) and second["dram_bw_util_pct"] == pytest.approx(30)
    assert second["windows"] == 1 and m.take()["absent"].startswith("no measured window")


def test_behind_a_counter_meter_the_closing_gpm_sample_comes_first_and_result_need_not_wait():
    # Behind an energy meter that reads its counter on the aside thread (~4 ms on an H200),
    # the closing GPM sample is taken before that read, so result() waits for the sample only.
    # The fake counter's closing read waits on a gate that opens only after result() returned;
    # were result() waiting for the read, it would block (5 s, then `timed out`).
    import threading

    nv, gate, log = fake_nvml(1), threading.Event(), []
    real_get = nv.nvmlGpmSampleGet

    def logged(h, s):
        log.append("gpm sample")
        return real_get(h, s)

    nv.nvmlGpmSampleGet = logged

    class Counter(EnergyMeter):
        source, available, reads_aside = "fake counter", True, True

        def _read_j(self):
            log.append("energy read")
            if log.count("energy read") == 2 and not gate.wait(5):
                log.append("timed out")
            return float(len(log))

    m = CountedMeter(Counter(""), watch(nv, 1))
    with m.window() as w:
        nv.run(2.0, g0={DRAM: 40.0})
    r = m.take()
    gate.set()
    assert r["dram_bw_util_pct"] == pytest.approx(40.0) and r["windows"] == 1
    w.settle()
    assert log == ["gpm sample", "energy read", "gpm sample", "energy read"]  # no "timed out"


def test_every_inference_record_carries_its_counters(monkeypatch):
    from llmbench.kinds.inference import kind as runner
    from llmbench.store.store import flatten as flat_row
    from tests.kinds.inference.test_offline_windows import SlowReturn, point

    p = point(repeats=3, energy_min_window_s=0)
    rec = Record(run_id="t", kind="inference", backend=BackendInfo(name="fake"),
                 model=ModelInfo(name="fake"), hardware=HardwareInfo(name="cpu"))
    runner.run_point(SlowReturn(p), p, rec)   # on the CPU: absent, with the reason
    assert set(rec.hardware_counters) == {"absent"} and "cpu run" in rec.hardware_counters["absent"]
    assert flat_row(rec.model_dump(mode="json"))["gpu_dram_bw_util_pct"] is None

    nv = fake_nvml(1, mask=0x8, real_time=True)
    monkeypatch.setattr(runner.CounterWatch, "for_device",
                        classmethod(lambda cls, d, c=1: CounterWatch([0], nv)))
    rec2 = rec.model_copy(deep=True)
    rec2.notes = []
    runner.run_point(SlowReturn(p), p, rec2)
    hc = rec2.hardware_counters
    assert hc["windows"] == 3 and hc["throttled"] and hc["throttle_reasons"] == ["hw_slowdown"]
    assert hc["dram_bw_util_pct"] == 0.0  # the fake GPU did no work in these windows
    row = flat_row(rec2.model_dump(mode="json"))
    assert row["throttled"] is True and row["gpu_dram_bw_util_pct"] == 0.0
    assert any(n.startswith("throttled:") for n in rec2.notes)


def test_observer_says_what_is_read_around_the_window():
    assert "GPM samples, clocks" in watch(fake_nvml(2)).observer()
    assert "GPU(s) [0, 1] read before and after the window" in watch(fake_nvml(2)).observer()
    unsupported = watch(fake_nvml(1, supported=False), 1).observer()
    assert unsupported.startswith("NVML clocks,") and "GPM" not in unsupported
    assert CounterWatch.for_device("cpu").observer() is None  # reads nothing: not an observer


def test_the_closing_gpm_sample_is_taken_beside_the_point_and_result_waits_for_it():
    # A GPM sample took ~1.9 ms on an H200: the window's closing sample must not hold up the
    # caller. The fake's closing sample waits on a gate only the caller opens after the window
    # has closed; were it taken on the caller's thread the window could not close (5 s, then
    # `waited`). The opening sample comes before the window, on the caller's thread.
    import threading

    nv = fake_nvml(1)
    gate, real_get, gets = threading.Event(), nv.nvmlGpmSampleGet, []

    def gated(h, s):
        gets.append(threading.current_thread() is threading.main_thread())
        if len(gets) == 2:
            nv.state["waited"] = not gate.wait(5)
        return real_get(h, s)

    nv.nvmlGpmSampleGet = gated
    w = watch(nv, 1)
    with w.window():
        nv.run(4.0, g0={DRAM: 50.0})
    assert gets[0] is True and "waited" not in nv.state  # closed; the closing sample still out
    gate.set()
    r = w.result()
    assert gets == [True, False] and not nv.state["waited"] and r["dram_bw_util_pct"] == pytest.approx(50.0)
    assert r["windows"] == 1 and r["window_s"] == pytest.approx(4.0)
