"""Offline timing and energy windows (issue 12, items 5 and 7), with a fake backend and meter.

The fake backend stamps its tokens like a real one, then keeps working after the last token
(as llama.cpp reads its perf counters and frees its batch) before generate() returns.
"""

import time

import pytest

from llmbench.backends.base import Backend
from llmbench.measure.power import COUNTER, EnergyMeter
from llmbench.measure.timeline import RequestTimeline
from llmbench.models.sources import ModelRef
from llmbench.kinds.inference.spec import Point
from llmbench.kinds.inference.offline import run_offline

TOKEN_GAP_S = 0.002
TAIL_S = 0.05   # work after the last token, inside generate()


class SlowReturn(Backend):
    name = "fake"
    package = extra = "none"

    def __init__(self, point):
        super().__init__(point.engine_call(), ModelRef(name="fake", source="synthetic"))
        self.calls = 0

    def load(self):
        pass

    def version(self):
        return "0"

    def tokenize(self, text):
        return [1] * len(text.split())

    @property
    def vocab_size(self):
        return 1000

    def generate(self, prompts, output_len, t_ref):
        self.calls += 1
        tls = [RequestTimeline(t_ref=t_ref, t_send=t_ref) for _ in prompts]
        for _ in range(output_len):
            time.sleep(TOKEN_GAP_S)
            t = time.perf_counter()
            for tl in tls:
                tl.add(t)
        time.sleep(TAIL_S)   # after the last token: not part of the batch
        return tls

    def engine_timings(self):
        return {"calls": float(self.calls)}


class WattMeter(EnergyMeter):
    """A counter that reads exactly 100 W x perf_counter time."""
    source, available = "fake", True
    POWER_W = 100.0

    def __init__(self):
        super().__init__("")

    def _read_j(self):
        return self.POWER_W * time.perf_counter()


def point(**kw):
    return Point(backend="fake", model="fake", batch_size=2, input_len=4, output_len=5,
                 warmups=0, **kw)


def test_batch_latency_ends_at_the_last_token_not_at_generate_return():
    p = point(repeats=2)
    m, _ = run_offline(SlowReturn(p), p, EnergyMeter())
    lat = m["batch_latency_s"]
    # the batch ends at its last token, which is its latest request's e2e: definitions agree
    assert lat.max == pytest.approx(m["e2e_s"].max, abs=1e-9)
    assert lat.min >= 5 * TOKEN_GAP_S
    # the work after the last token is in generate_return_s only (per repeat)
    ret = m["generate_return_s"]
    assert lat.n == ret.n == 2
    assert all(r - b >= TAIL_S * 0.99 for b, r in zip(lat.samples, ret.samples))
    # throughput is tokens over the batch latency (to the last token)
    assert m["output_throughput_tok_s"].samples == pytest.approx([10 / x for x in lat.samples])


def test_energy_window_is_lengthened_and_divided_but_latency_repeats_are_not():
    p = point(repeats=2, energy_min_window_s=0.3)
    be = SlowReturn(p)
    meter = WattMeter()
    m, notes = run_offline(be, p, meter)
    n = m["energy_batches_per_window"]
    assert n.min > 1                          # a ~60 ms batch alone is under 0.3 s
    assert m["energy_window_s"].min >= 0.3
    # per-batch energy = window energy / batches (k >= 2: a missing division is off by >= 2x);
    # power = window energy / window time. Tolerance: a preempted read at a window edge
    for e, w, k in zip(m["energy_j"].samples, m["energy_window_s"].samples, n.samples):
        assert e == pytest.approx(WattMeter.POWER_W * w / k, rel=0.1)
    assert m["avg_power_w"].mean == pytest.approx(WattMeter.POWER_W, rel=0.1)
    # two timed batches, whatever the number run for energy
    assert m["batch_latency_s"].n == 2 and be.calls == 2 * n.mean
    # engine timings come from the timed batch, not the last energy batch
    assert m["engine_calls"].samples == [1.0, 1.0 + n.samples[0]]
    assert meter.describe()["method"] == COUNTER
    # windows shorter than NVML's 2 s are flagged, whatever was configured
    assert any("energy unreliable" in x for x in notes)  # 0.3 s < 2 s
    p2 = point(repeats=1, energy_min_window_s=0)
    m2, notes2 = run_offline(SlowReturn(p2), p2, WattMeter())
    assert m2["energy_batches_per_window"].mean == 1
    assert any("energy unreliable" in x and "energy_min_window_s=0" in x for x in notes2)


def test_no_meter_runs_one_batch_per_repeat():
    p = point(repeats=3, energy_min_window_s=5)
    be = SlowReturn(p)
    m, _ = run_offline(be, p, EnergyMeter())
    assert be.calls == 3 and "energy_j" not in m and "energy_window_s" not in m


def test_energy_window_setting_does_not_change_the_point_key():
    assert point(energy_min_window_s=0).key == point().key != point(repeats=7).key


def test_power_sampling_reaches_the_meter_and_leaves_the_point_key(monkeypatch):
    from llmbench.kinds.inference import kind as runner
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    asked = []
    monkeypatch.setattr(runner, "open_meter",
                        lambda device, count=1, sampling="auto": asked.append(sampling) or WattMeter())
    p = point(repeats=1, energy_min_window_s=0, power_sampling="off")
    assert p.key == point(repeats=1).key  # how a point is metered is not what it measures
    rec = Record(run_id="t", kind="inference", backend=BackendInfo(name="fake"),
                 model=ModelInfo(name="fake"), hardware=HardwareInfo(name="cpu"))
    runner.run_point(SlowReturn(p), p, rec)
    assert asked == ["off"]


def test_record_power_names_the_method_its_windows_used(monkeypatch):
    from llmbench.kinds.inference import kind as runner
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    monkeypatch.setattr(runner, "open_meter", lambda device, count=1, sampling="auto": WattMeter())
    p = point(repeats=2, energy_min_window_s=0)
    rec = Record(run_id="t", kind="inference", backend=BackendInfo(name="fake"),
                 model=ModelInfo(name="fake"), hardware=HardwareInfo(name="cpu"))
    runner.run_point(SlowReturn(p), p, rec)
    assert rec.power["method"] == COUNTER and rec.power["windows_by_method"] == {COUNTER: 2}
    assert rec.metrics["energy_j"].n == 2


def test_record_names_the_observers_that_ran(monkeypatch):
    from llmbench.kinds.inference import kind as runner
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    def rec():
        return Record(run_id="t", kind="inference", backend=BackendInfo(name="fake"),
                      model=ModelInfo(name="fake"), hardware=HardwareInfo(name="cpu"))

    p = point(repeats=1, energy_min_window_s=0)
    monkeypatch.setattr(runner, "open_meter", lambda device, count=1, sampling="auto": WattMeter())
    with_meter = runner.run_point(SlowReturn(p), p, rec())
    assert set(with_meter.observers) == {"energy", "contention", "timelines"}
    # a counter without a power reading: read at the window's ends, no thread inside it
    assert with_meter.observers["energy"] == (f"{WattMeter.source}: energy counter read at both "
                                              "ends of the window; no sampling thread (sampling=auto)")
    assert "nothing inside it" in with_meter.observers["contention"]
    monkeypatch.setattr(runner, "open_meter", lambda device, count=1, sampling="auto": EnergyMeter("none here"))
    without = runner.run_point(SlowReturn(p), p, rec(), on_repeat=lambda: None)
    # no meter: no sampler thread ran; a progress callback was told between repeats
    assert set(without.observers) == {"contention", "timelines", "progress"}
    assert Record.model_validate_json(with_meter.model_dump_json()).observers == with_meter.observers
