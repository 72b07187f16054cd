"""MFU's denominator: the hardware catalog's dense datasheet peak, the one place it is kept."""

from llmbench.kinds.training.peaks import hardware_peak


def test_the_peak_is_the_datasheets_dense_number_for_the_precision():
    # NVIDIA H100/H200 SXM datasheet, dense: 989.5 TFLOP/s bf16, 67 TFLOP/s fp32 (no TF32)
    assert hardware_peak("NVIDIA H200", "bf16") == (989.5e12, "llmbench.hardware")
    assert hardware_peak("NVIDIA H100 80GB HBM3", "fp32") == (67e12, "llmbench.hardware")
    # A100 SXM4: 19.5 TFLOP/s fp32
    assert hardware_peak("NVIDIA A100-SXM4-40GB", "fp32")[0] == 19.5e12


def test_an_unknown_device_has_no_peak_and_says_so():
    peak, source = hardware_peak("Some Accelerator 9000", "bf16")
    assert peak is None and "Some Accelerator 9000" in source


# -- the sustained peak (issue 37 item 6) ------------------------------------------------------
import pytest  # noqa: E402

from llmbench.kinds.training import peaks  # noqa: E402
from llmbench.kinds.training.record import measured_peak_metrics, power_state_note  # noqa: E402


def test_windows_go_on_until_the_last_five_settle_within_two_percent():
    # an H200-like start: a burst at 732 TFLOP/s, then the power limit pulls the clocks down
    seq = iter([732, 725, 700, 683, 680, 679, 681, 680, 678, 990])
    got = peaks.sustained_windows(lambda: next(seq), windows=5, goal=0.02, max_s=60)
    # by hand: [700, 683, 680, 679, 681] deviates 19/681 = 2.8% from its median; the next five,
    # [683, 680, 679, 681, 680], 3/680 = 0.44%: eight windows taken
    assert got == [732, 725, 700, 683, 680, 679, 681, 680]
    assert peaks.settled(got) and not peaks.settled(got[:7])


def test_windows_stop_at_the_time_limit_unsettled():
    t = iter(range(100))
    vals = iter([700, 600] * 50)
    got = peaks.sustained_windows(lambda: next(vals), windows=3, goal=0.02, max_s=5.5,
                                  clock=lambda: float(next(t)))
    # the clock reads 0 at the start and is asked again only once 3 windows are in, before each
    # further one: it reads 1, 2, 3, 4, 5 (< 5.5: five more windows), then 6: 3 + 5 windows
    assert len(got) == 8 and not peaks.settled(got, 3)


def test_the_peak_is_measured_again_when_the_enforced_power_limit_changes(monkeypatch):
    limits = iter([700.0, 700.0, 450.0])
    calls = []
    monkeypatch.setattr(peaks, "power_state",
                        lambda device: {"power_limit_w": {"enforced": next(limits)}})
    monkeypatch.setattr(peaks, "_measured_peak",
                        lambda *a: calls.append(a) or {"limit": a[2]})
    assert [peaks.measured_matmul_peak("cuda:0", "bf16")["limit"] for _ in range(3)] == [700, 700, 450]
    # the limit is part of _measured_peak's key (functools.cache): a new limit, a new measurement
    assert [c[2] for c in calls] == [700.0, 700.0, 450.0]


def test_the_cpu_peak_settles_or_says_not_and_carries_no_power_state():
    pytest.importorskip("torch")
    r = peaks.measured_matmul_peak("cpu", "fp32", 3, 0.02, 0.01)
    assert r["power_state"] == {"absent": "cpu: no power limit read (NVML reads NVIDIA GPUs only)"}
    assert len(r["windows_flops"]) == 3 and r["windows_taken"] >= 3
    assert r["settled"] == peaks.settled(r["windows_flops"], 3)
    assert r["flops"] == sorted(r["windows_flops"])[1]


def test_the_record_says_which_peak_and_under_which_power_state():
    state = {"power_limit_w": {"enforced": 700.0, "default": 700.0}, "throttle_fraction": 0.9,
             "sm_clock_mhz": {"mean": 1590.0, "min": 1500, "max": 1980}, "avg_power_w": 691.0}
    meas = {"flops": 680e12, "windows_flops": [683e12, 680e12, 679e12, 681e12, 680e12],
            "spread": 3 / 680, "settled": True, "burst_flops": 732e12, "windows_taken": 8,
            "power_state": state}
    pk = measured_peak_metrics(meas, [340.0])["mfu_measured_peak"]
    assert pk.mean == pytest.approx(340 / 680)
    assert pk.peak_tflops["burst_tflops"] == pytest.approx(732) and pk.peak_tflops["settled"] is True
    assert pk.peak_tflops["power_limit_w"] == 700.0 and pk.peak_tflops["sm_clock_mhz"] == 1590.0
    assert pk.peak_tflops["avg_power_w"] == 691.0 and pk.peak_tflops["throttle_fraction"] == 0.9
    assert power_state_note(meas, {"power_limit_w": {"enforced": 700.0}}) is None
    note = power_state_note(meas, {"power_limit_w": {"enforced": 450.0}})
    assert "700 W" in note and "450 W" in note
