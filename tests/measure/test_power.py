"""Energy meters on the CPU: NvmlMeter against a fake pynvml module, RaplMeter and open_meter
against a fake powercap directory (issue 12, item 5)."""

import sys
import time
import types

import pytest

from llmbench.measure import power
from llmbench.measure.power import COUNTER, SAMPLED, EnergyMeter, NvmlMeter, RaplMeter, open_meter


def fake_nvml(energy_mj=None, power_mw=250_000, counter_fails_after=None, gate=None,
              buffer_w=None, buffer_keep_s=2.4, buffer_gap_s=0.02):
    """A pynvml with per-handle energy counters (mJ) and power (mW). With `gate` (an Event),
    every read after the probe and a window's opening read waits for it, as a slow NVML read
    would. With `buffer_w` (handle -> W), a driver's power sample buffer: a sample every
    buffer_gap_s of wall time on a fixed grid, the last buffer_keep_s kept, as an H200's."""
    nv = types.ModuleType("pynvml")
    if buffer_w is not None:
        nv.NVML_TOTAL_POWER_SAMPLES = 0

        def samples(h, kind, since_us):
            assert kind == 0
            state["buffer_reads"] = state.get("buffer_reads", 0) + 1
            now = time.time()
            k = int(now / buffer_gap_s)
            got = []
            for i in range(k - int(buffer_keep_s / buffer_gap_s), k + 1):
                t_us = round(i * buffer_gap_s * 1e6)
                if t_us > since_us:
                    got.append(types.SimpleNamespace(
                        timeStamp=t_us, sampleValue=types.SimpleNamespace(uiVal=int(buffer_w[h] * 1000))))
            return 1, got  # NVML_VALUE_TYPE_UNSIGNED_INT: mW

        nv.nvmlDeviceGetSamples = samples

    class NVMLError(Exception):
        pass

    state = {"reads": 0, "energy": dict(energy_mj or {})}
    nv.NVMLError = NVMLError
    nv.nvmlInit = lambda: None
    nv.nvmlDeviceGetHandleByIndex = lambda i: i

    def energy(h):
        state["reads"] += 1
        if gate is not None and state["reads"] > 2:
            state["waited"] = not gate.wait(5)  # True: nobody opened it (a hung test, not a pass)
        if h not in state["energy"]:
            raise NVMLError("Not Supported")
        if counter_fails_after is not None and state["reads"] > counter_fails_after:
            raise NVMLError("GPU is lost")
        state["energy"][h] += 1000  # 1 J more at every read
        return state["energy"][h]

    nv.nvmlDeviceGetTotalEnergyConsumption = energy
    nv.nvmlDeviceGetPowerUsage = lambda h: power_mw
    nv.state = state
    return nv


@pytest.fixture
def nvml(monkeypatch):
    def install(**kw):
        nv = fake_nvml(**kw)
        monkeypatch.setitem(sys.modules, "pynvml", nv)
        monkeypatch.setattr(power, "_HAS_COUNTER", {})  # each fake is other devices
        monkeypatch.setattr(power, "_HAS_BUFFER", {})
        return nv
    return install


def test_the_counter_is_probed_once_a_process_not_once_a_point(nvml):
    # A read costs ~3.9 ms on an H200 and a meter is opened per point: the probe's answer is
    # kept for the devices. Two meters and one window: 1 probe read + 2 window reads.
    nv = nvml(energy_mj={0: 0})
    open_meter("cuda", 1, sampling="off")
    m = open_meter("cuda", 1, sampling="off")
    assert nv.state["reads"] == 1 and m.has_counter
    with m.window() as w:
        pass
    assert w.energy_j == pytest.approx(1.0) and nv.state["reads"] == 3  # settled: both ends read


def test_a_device_without_a_counter_is_remembered_as_such(nvml):
    nv = nvml(energy_mj={})
    assert not open_meter("cuda", 1).has_counter
    assert not open_meter("cuda", 1).has_counter and nv.state["reads"] == 1


def test_nvml_counter_sums_devices_in_joules(nvml, monkeypatch):
    nvml(energy_mj={0: 5_000, 3: 7_000})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    m = open_meter("cuda", 2, sampling="dense")
    assert isinstance(m, NvmlMeter) and m.indices == [0, 3]
    with m.window(sample_period_s=0.01) as w:
        time.sleep(0.2)
    # each device's counter advanced 1 J per read between the two ends: 2 devices x 1 J
    assert w.energy_j == pytest.approx(2.0) and w.method == COUNTER
    assert m.describe()["method"] == COUNTER and m.describe()["windows_by_method"] == {COUNTER: 1}
    assert w.power_samples_w and w.power_samples_w[0] == pytest.approx(500.0)  # 2 x 250 W, mW -> W


def test_nvml_without_counter_says_sampled(nvml):
    nvml(energy_mj={}, power_mw=100_000)
    m = open_meter("cuda:0")
    assert m.describe()["method"] == SAMPLED
    with m.window(sample_period_s=0.01) as w:
        time.sleep(0.2)
    assert w.method == SAMPLED and w.energy_j == pytest.approx(100.0 * w.duration_s)


def test_nvml_counter_failing_mid_run_falls_back_and_the_record_says_so(nvml):
    # the first window reads the counter at both ends (reads 2-3, after the probe at read 1);
    # then the counter fails: the second window must fall back to sampled power and say so
    nvml(energy_mj={0: 0}, power_mw=200_000, counter_fails_after=3)
    m = open_meter("cuda:0")
    with m.window(sample_period_s=0.01) as w1:
        time.sleep(0.02)
    with m.window(sample_period_s=0.01) as w2:
        time.sleep(0.2)
    assert w1.method == COUNTER and w2.method == SAMPLED
    assert w2.energy_j == pytest.approx(200.0 * w2.duration_s)
    d = m.describe()
    assert d["windows_by_method"] == {COUNTER: 1, SAMPLED: 1}
    assert COUNTER in d["method"] and SAMPLED in d["method"]  # not just "total-energy counter"


def test_open_meter_without_pynvml_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    m = open_meter("cuda")
    assert not m.available and "NVML unavailable" in m.describe()["reason"]
    with m.window() as w:
        pass
    assert w.energy_j is None and w.method is None and "method" not in m.describe()


def rapl_dir(tmp_path, domains):
    for name, (uj, rng) in domains.items():
        d = tmp_path / name
        d.mkdir()
        (d / "energy_uj").write_text(f"{uj}\n")
        if rng is not None:
            (d / "max_energy_range_uj").write_text(f"{rng}\n")
    return tmp_path


def test_open_meter_reads_package_domains_only(tmp_path):
    root = rapl_dir(tmp_path, {"intel-rapl:0": (10, 1000), "intel-rapl:1": (20, 1000),
                               "intel-rapl:0:0": (5, 1000)})   # a sub-domain of package 0
    m = open_meter("cpu", powercap=root)
    assert isinstance(m, RaplMeter)
    assert [f.parent.name for f in m.files] == ["intel-rapl:0", "intel-rapl:1"]
    assert m.describe()["source"] == "rapl"


def test_rapl_window_and_wraparound(tmp_path):
    root = rapl_dir(tmp_path, {"intel-rapl:0": (999_000_000, 1_000_000_000),
                               "intel-rapl:1": (1_000_000, 1_000_000_000)})
    m = open_meter("cpu", powercap=root)
    with m.window() as w:
        # package 0 wraps: 999 J -> 0.5 J past its 1000 J range; package 1 adds 2 J
        (root / "intel-rapl:0" / "energy_uj").write_text("500000\n")
        (root / "intel-rapl:1" / "energy_uj").write_text("3000000\n")
    assert w.energy_j == pytest.approx(1.5 + 2.0, rel=1e-6) and w.method == COUNTER
    assert m.describe()["method"] == COUNTER


def test_rapl_wrap_without_range_gives_no_energy_rather_than_a_wrong_one(tmp_path):
    root = rapl_dir(tmp_path, {"intel-rapl:0": (5_000_000, None)})
    m = open_meter("cpu", powercap=root)
    with m.window() as w:
        (root / "intel-rapl:0" / "energy_uj").write_text("1000000\n")
    assert w.energy_j is None and w.method is None


def test_open_meter_without_readable_rapl(tmp_path):
    rapl_dir(tmp_path, {"intel-rapl:0": (0, 1)})
    (tmp_path / "intel-rapl:0" / "energy_uj").write_text("not a number")
    m = open_meter("cpu", powercap=tmp_path)
    assert type(m) is EnergyMeter and not m.available and "RAPL" in m.describe()["reason"]


def test_sampling_period_follows_the_counter(nvml):
    nvml(energy_mj={0: 0})
    auto, dense, off = (open_meter("cuda:0", sampling=s) for s in ("auto", "dense", "off"))
    reading = 12.5
    # the counter works: the profile adds nothing but a backup for a failed closing read
    assert auto.sample_period_s(reading) == EnergyMeter.BACKUP_PERIOD_S == 1.0
    assert auto.sample_period_s(None) == EnergyMeter.SAMPLE_PERIOD_S == 0.05  # no counter
    assert auto.sample_period_s(None, 0.01) == 0.01
    assert dense.sample_period_s(reading) == 0.05 and off.sample_period_s(None) is None
    assert auto.describe()["sampling"] == "auto"
    with pytest.raises(ValueError):
        EnergyMeter(sampling="sometimes")


def test_a_meter_without_a_power_reading_runs_no_thread(tmp_path):
    d = tmp_path / "intel-rapl:0"
    d.mkdir()
    (d / "energy_uj").write_text("1000")
    m = open_meter("cpu", powercap=tmp_path, sampling="dense")
    assert isinstance(m, RaplMeter) and m.sample_period_s(None) is None  # RAPL gives energy only
    with m.window():
        pass
    assert not m.sampled
    assert m.observer() == ("rapl: energy counter read at both ends of the window; no sampling "
                            "thread (sampling=dense)")


def test_observer_names_the_periods_its_windows_sampled_at(nvml):
    # the counter fails after the probe and one window: that window samples as a backup, the
    # next one densely (its energy comes from the samples)
    nvml(energy_mj={0: 0}, counter_fails_after=3)
    m = open_meter("cuda:0")
    with m.window(sample_period_s=0.01):
        pass
    with m.window(sample_period_s=0.01) as w:
        time.sleep(0.05)
    assert w.method == SAMPLED and w.power_samples_w
    m.settle()  # the first window's reader thread is counted once settled
    assert m.sampled == {1.0: 1, 0.01: 1}
    assert m.observer() == ("nvml: energy counter read at both ends of the window by a reader "
                            "thread beside it; power sampled by a thread inside it every 10 ms in "
                            "1 window(s), every 1000 ms in 1 window(s) (sampling=auto)")
    m.reset()
    assert not m.sampled and not m.used
    assert m.observer().endswith("by a reader thread beside it; no power sampling (sampling=auto)")


def test_nvml_reads_the_closing_counter_aside_and_settles_it_when_asked(nvml):
    # The closing read (~4 ms on an H200) must not hold up the caller: it waits on a gate
    # that only the caller opens, after the window has closed. Were the read taken on the
    # caller's thread, the window could not close before the gate opened (5 s, then `waited`).
    import threading

    gate = threading.Event()
    nv = nvml(energy_mj={0: 10_000}, gate=gate)   # probe: read 1; opening: read 2; closing: 3
    m = open_meter("cuda:0", sampling="off")
    with m.window() as w:
        time.sleep(0.01)
    assert w._settle is not None            # the closing read is still out
    gate.set()
    # the counter advanced 1 J at every read: 12 J at the opening read, 13 J at the closing
    assert w.energy_j == pytest.approx(1.0) and w.method == COUNTER
    assert nv.state["reads"] == 3 and not nv.state.get("waited")
    assert w.t_read0 < w.t_read1 and w.t_read1 > w.t_end  # the closing read began after the end
    assert w.avg_power_w == pytest.approx(1.0 / (w.t_read1 - w.t_read0))  # J over their span
    assert m.describe()["windows_by_method"] == {COUNTER: 1}


def test_describe_settles_every_window_still_out(nvml):
    nvml(energy_mj={0: 0})
    m = open_meter("cuda:0", sampling="off")
    wins = []
    for _ in range(3):
        with m.window() as w:
            pass
        wins.append(w)
    assert m.describe()["windows_by_method"] == {COUNTER: 3}  # no window left unsettled
    assert [w._settle for w in wins] == [None] * 3
    # each window: its own two reads, 1 J apart (the probe was read 1)
    assert [w.energy_j for w in wins] == [pytest.approx(1.0)] * 3


def test_an_inline_meter_reads_both_ends_on_the_callers_thread(tmp_path):
    # RAPL's sysfs read is cheap: no reader thread, the window is settled when it closes
    root = rapl_dir(tmp_path, {"intel-rapl:0": (1_000_000, 10**12)})
    m = open_meter("cpu", powercap=root)
    with m.window() as w:
        (root / "intel-rapl:0" / "energy_uj").write_text("4000000\n")
    assert w._settle is None and w.energy_j == pytest.approx(3.0)
    assert w.t_read0 < w.t_start <= w.t_end < w.t_read1


# -- the driver's power sample buffer ---------------------------------------------------------

def test_integrate_j_by_hand():
    # 100 W at t=0 rising linearly to 300 W at t=1, then 300 W; the newest sample held
    pts = [(0.0, 100.0), (1.0, 300.0), (2.0, 300.0)]
    # [0.5, 1]: mean of 200 and 300 W over 0.5 s = 125 J; [1, 2]: 300 J; [2, 2.05] held: 15 J
    assert power.integrate_j(pts, 0.5, 2.05) == pytest.approx(440.0)
    assert power.integrate_j(pts, 0.0, 0.25) == pytest.approx(0.25 * (100 + 150) / 2)
    assert power.integrate_j(pts, 0.6, 0.6) == 0.0
    assert power.integrate_j(pts, -0.01, 1.0) is None           # no sample at or before the start
    assert power.integrate_j(pts, 0.5, 2.0 + power.HOLD_MAX_S + 0.01) is None  # newest too old
    assert power.integrate_j([], 0.0, 1.0) is None


def test_buffer_covers_the_window_and_the_counter_closing_read_is_not_taken(nvml):
    nv = nvml(energy_mj={0: 0, 1: 0}, buffer_w={0: 200.0, 1: 150.0})
    m = NvmlMeter([0, 1], sampling="off")
    assert m.has_buffer and m.describe()["method"] == power.BUFFER
    with m.window() as w:
        time.sleep(0.15)
    # constant 350 W over both devices: the integral is 350 W x the window's wall-clock length
    assert w.method == power.BUFFER
    assert w.energy_j == pytest.approx(350.0 * (w.wall_end - w.wall_start), rel=1e-9)
    assert w.avg_power_w == pytest.approx(350.0 * (w.wall_end - w.wall_start) / w.duration_s)
    # 2 probe reads (one a device) + the opening read's 2; no closing counter read
    assert nv.state["reads"] == 4 and nv.state["buffer_reads"] == 2 + 2
    d = m.describe()
    assert d["windows_by_method"] == {power.BUFFER: 1} and d["sample_gap_s"] == pytest.approx(0.02)
    assert "driver's power samples" in m.observer() and "opening only" in m.observer()
    assert power.reliable_window_s(d) == pytest.approx(0.2)


def test_a_window_longer_than_the_buffer_keeps_takes_the_counter(nvml):
    # the buffer keeps 0.1 s: a 0.25 s window's start is gone, so the counter's closing read
    nv = nvml(energy_mj={0: 0}, buffer_w={0: 300.0}, buffer_keep_s=0.1)
    m = open_meter("cuda:0", sampling="off")
    with m.window() as w1:
        time.sleep(0.25)
    with m.window() as w2:
        time.sleep(0.01)
    assert w1.method == COUNTER and w1.energy_j == pytest.approx(1.0)  # 1 J a counter read
    assert w2.method == power.BUFFER and w2.energy_j == pytest.approx(300.0 * (w2.wall_end - w2.wall_start))
    assert nv.state["reads"] == 1 + 2 + 1  # probe; w1 both ends; w2 its opening only
    d = m.describe()
    assert d["windows_by_method"] == {COUNTER: 1, power.BUFFER: 1}
    assert power.reliable_window_s(d) == power.MIN_RELIABLE_WINDOW_S  # one window was the counter's
    assert "at both ends in 1 other window(s)" in m.observer()


def test_min_reliable_window_follows_the_methods():
    assert power.min_reliable_window_s({power.BUFFER}, 0.03) == pytest.approx(0.3)
    assert power.min_reliable_window_s({power.BUFFER}) == pytest.approx(0.2)
    assert power.min_reliable_window_s({power.BUFFER, COUNTER}, 0.02) == 2.0
    assert power.min_reliable_window_s(set()) == 2.0 and power.min_reliable_window_s({SAMPLED}) == 2.0
