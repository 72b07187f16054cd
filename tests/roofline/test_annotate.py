"""annotate(record): bounds and efficiencies filled in place for records the catalogs know."""

import json

import pytest
from typer.testing import CliRunner

from llmbench import roofline
from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record


def rec(kind="inference", hw="NVIDIA H100 80GB HBM3", model="llama-3-8b", backend="vllm",
        metrics=None, **workload):
    w = {"batch_size": 1, "input_len": 128, "output_len": 128, "tensor_parallel": 1,
         "pipeline_parallel": 1, "weight_dtype": "auto", "kv_cache_dtype": None, **workload}
    return Record(run_id="t", kind=kind, backend=BackendInfo(name=backend),
                  model=ModelInfo(name=model), hardware=HardwareInfo(name=hw), workload=w,
                  metrics={k: summarize(v, "x") for k, v in (metrics or {}).items()})


def test_inference_efficiency_keys_match_metric_names():
    r = rec(metrics={"batch_latency_s": [1.2, 1.3], "output_throughput_tok_s": [100.0],
                     "total_throughput_tok_s": [200.0], "tpot_s": [0.009], "ttft_s": [0.02],
                     "itl_s": [0.0095]})
    assert roofline.annotate(r) is True
    rf = r.roofline
    assert rf.binding_resource == "memory" and rf.hardware_id == "H100-SXM"
    assert set(rf.efficiency) == {"batch_latency_s", "output_throughput_tok_s",
                                  "total_throughput_tok_s", "tpot_s", "ttft_s", "itl_s"}
    assert rf.efficiency["output_throughput_tok_s"] == pytest.approx(100 / rf.bound["output_throughput_tok_s"])
    assert rf.efficiency["batch_latency_s"] == pytest.approx(rf.bound["batch_latency_s"] / 1.25)
    assert rf.efficiency["tpot_s"] == pytest.approx(rf.bound["tpot_s"] / 0.009)
    assert all(0 < v < 1 for v in rf.efficiency.values())
    assert any("auto" in n for n in rf.notes)  # 'auto' weight dtype taken as bf16, said so


def test_faster_than_the_bound_is_noted():
    r = rec(metrics={"output_throughput_tok_s": [10_000.0]})
    roofline.annotate(r)
    assert r.roofline.efficiency["output_throughput_tok_s"] > 1
    assert any("above 1" in n for n in r.roofline.notes)
    assert not any("--remeasure" in n for n in r.roofline.notes)   # a datasheet peak: no hint


def test_faster_than_a_measured_cpu_says_how_to_remeasure(monkeypatch):
    # the local CPU's peaks are measured (hardware/cpu.py) and read low on a busy machine
    monkeypatch.setattr("llmbench.hardware.cpu.local_cpu", lambda: _fake_cpu())
    r = rec(hw="cpu", model="smollm2-135m", backend="llamacpp", metrics={"output_throughput_tok_s": [1e6]})
    r.model.weight_bytes = 96_576_768
    roofline.annotate(r)
    assert r.roofline.efficiency["output_throughput_tok_s"] > 1
    assert any("above 1" in n and "--remeasure" in n for n in r.roofline.notes)


def test_unknown_hardware_or_model_or_failed_record_is_left_alone():
    for r in (rec(hw="NVIDIA GeForce RTX 4090"), rec(model="/some/dir/model"),
              rec(metrics={"batch_latency_s": [1.0]}).model_copy(update={"status": "failed"})):
        assert roofline.annotate(r) is False and r.roofline.bound is None


def test_llamacpp_auto_uses_gguf_bytes_or_q4_1(monkeypatch):
    r = rec(hw="cpu", model="smollm2-135m", backend="llamacpp")
    r.model.weight_bytes = 96_576_768
    monkeypatch.setattr("llmbench.hardware.cpu.local_cpu", lambda: _fake_cpu())
    roofline.annotate(r)
    bw = 20e9
    assert r.roofline.bound["decode_tok_s"] == pytest.approx(bw / 96_576_768)
    monkeypatch.setattr("llmbench.backends.llamacpp._bundled_gguf_bytes", lambda: None)
    q = rec(hw="cpu", model="smollm2-135m", backend="llamacpp")
    roofline.annotate(q)
    assert q.roofline.bound["decode_tok_s"] == pytest.approx(bw / (134_515_008 * 0.625))
    assert any("Q4_1" in n for n in q.roofline.notes)


def _fake_cpu():
    from llmbench.hardware import Hardware

    return Hardware(id="cpu", name="test cpu", vendor="cpu", mem_bw_gbs=20.0,
                    peak_tflops={"fp32": 0.1, "tf32": None, "bf16": 0.1, "fp16": 0.1,
                                 "int8": 0.4, "fp8": None}, source="measured", measured=True)


def test_serving_bounds_ttft_and_tpot_at_one_request():
    s = rec(kind="serving", concurrency=32, batch_size=None, metrics={"ttft_s": [0.05], "tpot_s": [0.02]})
    roofline.annotate(s)
    one = rec(batch_size=1)
    roofline.annotate(one)
    assert s.roofline.bound["ttft_s"] == pytest.approx(one.roofline.bound["ttft_s"])
    assert s.roofline.bound["tpot_s"] == pytest.approx(one.roofline.bound["tpot_s"])
    assert s.roofline.bound["output_throughput_tok_s"] > 10 * one.roofline.bound["output_throughput_tok_s"]
    assert "batch_latency_s" not in s.roofline.bound


def test_training_record():
    t = rec(kind="training", model="genslm-250m", seq_len=1024, micro_batch=8, grad_accum=1,
            nproc=1, precision="bf16", tokens_per_step=8192,
            metrics={"tokens_per_s": [100_000.0], "tflops": [200.0], "step_time_s": [0.08]})
    assert roofline.annotate(t)
    assert set(t.roofline.efficiency) == {"tokens_per_s", "tflops", "step_time_s"}
    assert t.roofline.bound["peak_tflops"] == pytest.approx(989.5)


def test_training_efficiency_same_by_tflops_and_by_tokens():
    """A record's `tflops` is tokens/s x its own FLOPs per token (full-attention MFU
    convention): measured against the bound, both say the same (0.503 vs 0.479 before)."""
    from llmbench.roofline.flops import flops_per_token

    fpt = flops_per_token(1_000_000_000, 24, 2048, 2048)  # the record's N, not the catalog's
    tps = 40_000.0
    t = rec(kind="training", model="genslm-2.5b", seq_len=2048, micro_batch=8, grad_accum=1,
            nproc=1, precision="bf16", tokens_per_step=16384, flops_per_token=fpt,
            metrics={"tokens_per_s": [tps, tps * 1.02], "tflops": [tps * fpt / 1e12,
                                                               tps * 1.02 * fpt / 1e12],
                     "step_time_s": [16384 / tps, 16384 / (tps * 1.02)]})
    assert roofline.annotate(t)
    e = t.roofline.efficiency
    assert e["tflops"] == pytest.approx(e["tokens_per_s"], rel=1e-12)
    assert 0 < e["tokens_per_s"] < 1


def test_cli_json_carries_decode_tok_s():
    from llmbench.cli import app

    r = CliRunner().invoke(app, ["roofline", "--model", "llama-3-8b", "--hardware", "H100",
                                 "--batch-size", "1", "--input-len", "128", "--output-len", "128",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    step = 8_030_261_248 - 128_256 * 4096 + 4096   # one embedding row, not the table
    assert doc["decode_tok_s"] == pytest.approx(3.35e12 / (2 * step), rel=1e-12)
    assert doc["hardware"] == "H100-SXM" and doc["binding_resource"] == "memory"
    table = CliRunner().invoke(app, ["roofline", "--model", "genslm-25b", "--hardware", "MI300X",
                                     "--training", "--batch-size", "8", "--input-len", "2048"])
    assert table.exit_code == 0 and "tokens_per_s" in table.output
    bad = CliRunner().invoke(app, ["roofline", "--model", "nope", "--hardware", "H100"])
    assert bad.exit_code != 0


def test_open_loop_serving_bound_uses_requests_in_flight():
    """Open-loop records have no batch_size/concurrency: the bound must not fall back to one
    request (an efficiency above 1 that meant nothing), but use the measured load."""
    s = rec(kind="serving", concurrency=None, batch_size=None, max_concurrency=None, load="open",
            metrics={"inflight_mean": [6.0], "output_throughput_tok_s": [1000.0]})
    assert roofline.annotate(s)
    six = rec(batch_size=6)
    roofline.annotate(six)
    assert s.roofline.concurrency == 6.0 and s.roofline.concurrency_source == "inflight_mean"
    assert s.roofline.bound["output_throughput_tok_s"] == pytest.approx(
        six.roofline.bound["output_throughput_tok_s"])
    assert s.roofline.efficiency["output_throughput_tok_s"] < 1  # 1000 tok/s at 6 in flight
    assert any("6.00 requests in flight" in n for n in s.roofline.notes)
    # nothing recorded at all: batch 1, and the record says so
    bare = rec(kind="serving", concurrency=None, batch_size=None, metrics={"ttft_s": [0.05]})
    roofline.annotate(bare)
    assert bare.roofline.concurrency == 1.0 and "none recorded" in bare.roofline.concurrency_source


# -- llama.cpp's compute roof: the arithmetic its kernels run for the GGUF type ------------------
# LLaMA-3-8B by hand from its config (hidden 4096, 32 layers, 32 heads of 128, 8 KV heads,
# MLP 14336, vocab 128256, untied): every parameter but the input embedding multiplies.
_L, _H, _KV, _FF, _V = 32, 4096, 1024, 14336, 128256
_MATMUL_PARAMS = (_L * (2 * _H * _H + 2 * _H * _KV + 3 * _H * _FF + 2 * _H)  # + 2 RMS norms
                  + _H + _H * _V)                                             # final norm, lm_head
_B, _S = 64, 128
_PREFILL_FLOPS = _B * (2 * _MATMUL_PARAMS * _S + 4 * _L * _H * _S * (_S + 1) / 2)  # causal


def _h200_point(backend, **workload):
    r = rec(hw="NVIDIA H200", backend=backend, batch_size=_B, input_len=_S, output_len=128, **workload)
    if backend == "llamacpp":
        r.model.weight_bytes = 16_060_522_496
    return r


def test_llamacpp_f16_prefill_bound_is_the_16_bit_one():
    bf16_peak = 989.5e12   # H200 SXM dense bf16/fp16 tensor peak (catalog, NVIDIA datasheet)
    want = _PREFILL_FLOPS / bf16_peak      # 124.5 ms; memory (16 GB / 4.8 TB/s) is 3.3 ms
    f16 = _h200_point("llamacpp", gguf_type="f16")
    vllm = _h200_point("vllm")
    for r in (f16, vllm):
        b, _, _ = roofline.bound_for(r)
        assert b.prefill_s == pytest.approx(want, rel=1e-9)
    assert want == pytest.approx(0.1245, abs=1e-4)
    # a synthetic model asked for F16 and not yet described by llama.cpp: the same
    syn = rec(hw="NVIDIA H200", backend="llamacpp", batch_size=_B, input_len=_S, output_len=128)
    syn.model.synthetic_weights = True
    assert roofline.bound_for(syn)[0].prefill_s == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("gguf_type", ["q4_0", "q8_0"])
def test_llamacpp_quantised_prefill_runs_mmq_at_the_int8_peak(gguf_type):
    # 8192 prefill tokens > MMVQ's 8 on Hopper: ggml_cuda_should_use_mmq is true (Turing mma
    # available), int8 tensor-core mma on q8_1 activations
    b, _, _ = roofline.bound_for(_h200_point("llamacpp", gguf_type=gguf_type))
    assert b.prefill_s == pytest.approx(_PREFILL_FLOPS / 1979e12, rel=1e-9)


def test_llamacpp_f16_on_a_cpu_multiplies_in_fp32(monkeypatch):
    monkeypatch.setattr("llmbench.hardware.cpu.local_cpu", lambda: _fake_cpu_fast_fp16())
    r = rec(hw="cpu", model="smollm2-135m", backend="llamacpp", batch_size=4, input_len=64,
            output_len=2, gguf_type="f16")
    r.model.weight_bytes = 269e6
    b, _, notes = roofline.bound_for(r)
    # SmolLM2-135M: 30 layers, hidden 576, 9 heads (q_dim 576), tied: every parameter multiplies
    flops = 4 * (2 * 134_515_008 * 64 + 4 * 30 * 576 * 64 * 65 / 2)
    assert b.prefill_s == pytest.approx(flops / 0.1e12, rel=1e-9)   # fp32 0.1, not fp16 0.2
    assert any("fp32" in n for n in notes)
    q = r.model_copy(deep=True)
    q.workload["gguf_type"] = "q8_0"
    assert roofline.bound_for(q)[0].prefill_s == pytest.approx(flops / 0.4e12, rel=1e-9)


def _fake_cpu_fast_fp16():
    from llmbench.hardware import Hardware

    return Hardware(id="cpu", name="test cpu", vendor="cpu", mem_bw_gbs=1000.0,
                    peak_tflops={"fp32": 0.1, "tf32": None, "bf16": 0.2, "fp16": 0.2,
                                 "int8": 0.4, "fp8": None}, source="measured", measured=True)
