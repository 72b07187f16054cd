"""The local CPU entry: measured once with numpy, cached, found by its /proc/cpuinfo name."""

import json

import pytest

from llmbench.hardware import cpu, find


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    cpu.local_cpu.cache_clear()
    yield tmp_path
    cpu.local_cpu.cache_clear()


def test_measure_caches_and_the_cpu_name_finds_it(fresh_cache):
    m = cpu.measure()
    assert 0.5 < m["mem_bw_gbs"] < 2000 and 0.001 < m["fp32_tflops"] < 100
    path = cpu._cache_path()
    assert path.is_relative_to(fresh_cache) and json.loads(path.read_text()) == m
    # a planted cache is what local_cpu uses: no second measurement
    path.write_text(json.dumps({**m, "mem_bw_gbs": 12.5, "fp32_tflops": 0.25}))
    from llmbench.measure.env import cpu_name

    hw = find(cpu_name())
    assert hw.id == "cpu" and hw.measured and hw.mem_bw_gbs == 12.5
    assert hw.peak_flops("fp32") == pytest.approx(0.25e12)
    assert hw.peak_flops("int8") in (pytest.approx(0.5e12), pytest.approx(1e12))
    assert find("cpu") is hw
    assert find("Some Other CPU Model @ 2GHz") is None


@pytest.mark.slow
def test_remeasure_keeps_the_best(fresh_cache, monkeypatch):
    m = cpu.measure()
    cpu._cache_path().write_text(json.dumps({**m, "mem_bw_gbs": 1e6, "fp32_tflops": 1e-6}))
    again = cpu.measure(force=True)
    assert again["mem_bw_gbs"] == 1e6 and again["fp32_tflops"] > 1e-6
