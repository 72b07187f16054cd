"""analysis/predict_genz.py: how GenZ is called (a stand-in GenZ records the calls: Bb=1, the
mean context, its model and system names, ms -> s) and the baseline's fit (planted multipliers
recovered), without GenZ installed."""

import sys
import types

import numpy as np
import pandas as pd
import pytest

from llmbench.analysis import predict_genz as G


@pytest.fixture
def fake_genz(monkeypatch):
    calls = []

    def prefill_moddeling(**kw):
        calls.append(("prefill", kw))
        return {"Latency": 2.0 * kw["batch_size"] * kw["input_tokens"] / 128}   # ms

    def decode_moddeling(**kw):
        calls.append(("decode", kw))
        if kw["batch_size"] > 32:
            raise ValueError("All params would not fit on chip")
        return {"Latency": 4.0 + kw["input_tokens"] / 1000 + kw["output_tokens"] / 1000}

    pkg = types.ModuleType("GenZ")
    sub = types.ModuleType("GenZ.LLM_inference")
    sub.prefill_moddeling, sub.decode_moddeling = prefill_moddeling, decode_moddeling
    pkg.LLM_inference = sub
    monkeypatch.setitem(sys.modules, "GenZ", pkg)
    monkeypatch.setitem(sys.modules, "GenZ.LLM_inference", sub)
    return calls


def _rows():
    base = {"engine": "vllm", "devices": 1, "dtype": "fp16", "vendor": "nvidia", "input_len": 128}
    return pd.DataFrame([{**base, "model": "llama-3-8b", "hardware": "H100-SXM", "batch": 16, "output_len": 256},
                         {**base, "model": "mixtral-8x7b", "hardware": "MI300X", "batch": 64, "output_len": 128},
                         {**base, "model": "qwen2-7b", "hardware": "H100-SXM", "batch": 1, "output_len": 128},
                         {**base, "model": "llama-3-8b", "hardware": "Max1550", "batch": 1, "output_len": 128},
                         {**base, "model": "llama-3-8b", "hardware": "H100-SXM", "batch": 1, "output_len": 128,
                          "devices": 2}])


def test_genz_is_called_with_one_beam_at_the_mean_context(fake_genz):
    assert G.available(None)
    got = G.genz_frame(_rows())
    # only the first two rows are GenZ's (qwen2, Max1550 and two devices are not)
    assert got.index.tolist() == [0, 1]
    pre = [kw for k, kw in fake_genz if k == "prefill"]
    dec = [kw for k, kw in fake_genz if k == "decode"]
    assert {kw["model"] for kw in pre} == {"meta-llama/meta-llama-3.1-8b", "mistralai/mixtral-8x7b"}
    assert {kw["system_name"] for kw in dec} == {"H100_GPU", "MI300X"}
    assert all(kw["Bb"] == 1 and kw["bits"] == "bf16" and "ceff" not in kw for kw in dec)
    assert dec[0]["output_tokens"] == 128 and dec[0]["input_tokens"] == 128   # 256 / 2
    # prefill 2 x 16 ms = 32 ms; a step 4 + 0.128 + 0.128 ms; 255 steps
    assert got.loc[0, "genz_prefill_s"] == pytest.approx(0.032)
    assert got.loc[0, "genz_s"] == pytest.approx(0.032 + 255 * 0.004256)
    assert np.isnan(got.loc[1, "genz_s"])      # refused: left out, not guessed


def test_the_fitted_baseline_recovers_planted_multipliers():
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"hardware": rng.choice(["A", "B", "C"], n), "vendor": "nvidia", "model": "m",
                          "batch": rng.choice([1, 16, 64], n), "output_len": rng.choice([128, 2048], n),
                          "engine": "vllm"})
    genz = pd.DataFrame({"genz_prefill_s": rng.uniform(0.01, 1.0, n),
                         "genz_decode_step_s": rng.uniform(0.005, 0.02, n)}, index=frame.index)
    steps = frame["output_len"] - 1
    genz["genz_s"] = genz["genz_prefill_s"] + steps * genz["genz_decode_step_s"]
    # measured: prefill 3x GenZ's, decode steps 1.5x
    frame["measured_batch_latency_s"] = 3.0 * genz["genz_prefill_s"] + 1.5 * steps * genz["genz_decode_step_s"]
    frame["measured_output_throughput_tok_s"] = frame["batch"] * frame["output_len"] / frame["measured_batch_latency_s"]
    mult = G.fit_multipliers(frame, genz)
    assert mult["all"] == pytest.approx((3.0, 1.5), rel=1e-4)
    held = G.validate(frame, genz, "accelerator")
    assert held["genz_fitted_s"].to_numpy() == pytest.approx(held["measured_s"].to_numpy(), rel=1e-4)
    # as shipped: off by the multipliers
    assert (held["genz_s"] < held["measured_s"]).all()
