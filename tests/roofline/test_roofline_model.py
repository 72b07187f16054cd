"""The analytical bound: the issue's check, the physics of each term, and properties."""

import pytest
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.hardware import get
from llmbench.models.catalog import get_arch
from llmbench.models.dtypes import dtype_bytes
from llmbench.roofline.model import Workload, inference_bound, training_bound
from llmbench.roofline.workload import facts

L3 = get_arch("llama-3-8b")
H100 = get("H100")


def fx(arch, hw):
    """The plain facts a bound reads of a catalog model on a catalog device."""
    return facts(arch.name, hw.id)[2]


# LLaMA-3-8B at batch 1: every matrix (output projection included) plus one embedding row
L3_STEP_PARAMS = 8_030_261_248 - 128_256 * 4096 + 4096


def test_issue_check_decode_bound_is_bandwidth_over_bytes_a_step_reads():
    b = inference_bound(fx(L3, H100), Workload(1, 128, 128, "bf16"))
    assert b.weight_bytes == L3.param_count() * 2
    assert b.decode_weight_bytes == 2 * L3_STEP_PARAMS
    assert b.decode_tok_s == pytest.approx(3.35e12 / (2 * L3_STEP_PARAMS), rel=1e-12)
    # the step-by-step bound also reads the KV cache: a little lower, still memory-bound
    assert b.decode_tok_s * 0.99 < b.decode_phase_tok_s < b.decode_tok_s
    assert b.binding_resource == b.decode_binding == "memory"
    assert b.tpot_s == pytest.approx(1 / b.decode_phase_tok_s)
    assert b.batch_latency_s == pytest.approx(b.prefill_s + 127 * b.tpot_s)
    assert b.total_throughput_tok_s == pytest.approx(256 / b.batch_latency_s)


def test_batch_reuses_weights_until_compute_binds():
    one = inference_bound(fx(L3, H100), Workload(1, 128, 128))
    eight = inference_bound(fx(L3, H100), Workload(8, 128, 128))
    # eight embedding rows instead of one: 7 x 4096 x 2 bytes more per step
    assert eight.decode_weight_bytes - one.decode_weight_bytes == 7 * 4096 * 2
    assert eight.decode_tok_s == pytest.approx(8 * one.decode_tok_s, rel=1e-5)
    big = inference_bound(fx(L3, H100), Workload(4096, 128, 128))
    # compute-bound decode: B x 2 x matmul params / peak per step
    assert big.decode_tok_s == pytest.approx(H100.peak_flops("bf16") / big.flops_per_token)
    long = inference_bound(fx(L3, H100), Workload(64, 2048, 16))
    assert long.prefill_binding == "compute"


def test_dtypes_change_bytes_and_peaks():
    fp8 = inference_bound(fx(L3, H100), Workload(1, 128, 128, "fp8"))
    bf16 = inference_bound(fx(L3, H100), Workload(1, 128, 128, "bf16"))
    assert fp8.decode_tok_s == pytest.approx(2 * bf16.decode_tok_s)
    assert fp8.kv_bytes_per_token == bf16.kv_bytes_per_token  # KV stays 16-bit unless asked
    kv8 = inference_bound(fx(L3, H100), Workload(1, 128, 128, "bf16", kv_dtype="fp8"))
    assert kv8.kv_bytes_per_token == bf16.kv_bytes_per_token / 2
    assert dtype_bytes("q4_1") == 0.625 and dtype_bytes("Q8_0") == 34 / 32
    with pytest.raises(ValueError):
        dtype_bytes("fp7")


def test_tensor_parallel_splits_memory_and_pays_the_link():
    one = inference_bound(fx(L3, H100), Workload(1, 128, 128))
    tp2 = inference_bound(fx(L3, H100), Workload(1, 128, 128, tensor_parallel=2))
    assert tp2.decode_tok_s == pytest.approx(2 * one.decode_tok_s)
    assert tp2.devices == 2 and tp2.batch_latency_s < one.batch_latency_s
    # a huge activation all-reduce on a slow link binds on the interconnect
    f = fx(L3, H100)
    slow = replace(f, device=replace(f.device, link_bw=0.01e9))
    assert inference_bound(slow, Workload(64, 2048, 2, tensor_parallel=8)).prefill_binding == "interconnect"
    sn = inference_bound(fx(L3, get("SN40L")), Workload(1, 128, 128, tensor_parallel=8))
    assert any("link bandwidth" in n for n in sn.notes) and any("memory bandwidth" in n for n in sn.notes)
    assert sn.binding_resource == "compute"


def test_pipeline_parallel_does_not_shorten_a_token():
    one = inference_bound(fx(L3, H100), Workload(1, 128, 128))
    pp4 = inference_bound(fx(L3, H100), Workload(1, 128, 128, pipeline_parallel=4))
    assert pp4.decode_tok_s == pytest.approx(one.decode_tok_s)
    # only the KV cache (split across stages) and the FLOPs shrink; here they are small
    assert one.batch_latency_s >= pp4.batch_latency_s >= one.batch_latency_s * 0.99


def test_moe_reads_active_experts_and_no_cache_recomputes():
    mix = get_arch("mixtral-8x7b")
    b = inference_bound(fx(mix, H100), Workload(1, 128, 128, tensor_parallel=4))
    step = mix.active_param_count() - mix.vocab * mix.hidden + mix.hidden
    assert b.decode_tok_s == pytest.approx(4 * 3.35e12 / (2 * step), rel=1e-9)
    with_kv = inference_bound(fx(L3, H100), Workload(16, 512, 256))
    without = inference_bound(fx(L3, H100), Workload(16, 512, 256, kv_cache=False))
    assert without.batch_latency_s > 3 * with_kv.batch_latency_s


def test_lookup_tables_count_rows_read_tied_tables_whole():
    h200 = get("H200")
    # the issue's figure: LLaMA-3-8B bf16 on an H200, batch 1
    b = inference_bound(fx(L3, h200), Workload(1, 128, 128, "bf16"))
    assert b.decode_tok_s == pytest.approx(4.8e12 / (2 * L3_STEP_PARAMS), rel=1e-12)
    assert b.decode_tok_s / (4.8e12 / (2 * 8_030_261_248)) == pytest.approx(1.07, abs=0.005)
    # tied (SmolLM2): the embedding is the output projection, read whole once
    sm = get_arch("smollm2-135m")
    t = inference_bound(fx(sm, h200), Workload(1, 128, 128, "bf16"))
    assert t.decode_weight_bytes == t.weight_bytes == 2 * sm.param_count()
    # GPT-2 (tied wte, learned positions): one position row per token, not the table
    g = get_arch("gpt2-small")
    gb = inference_bound(fx(g, h200), Workload(1, 128, 128, "fp32"))
    assert gb.decode_weight_bytes == 4 * (g.param_count() - 1024 * 768 + 768)
    # prefill of 128 tokens reads at most 128 rows; a batch of more tokens than rows, all of them
    big = inference_bound(fx(L3, h200), Workload(2048, 128, 2, "bf16"))
    assert big.decode_weight_bytes == 2 * (L3_STEP_PARAMS + 2047 * 4096)
    # a GGUF's stored bytes: rows skipped at its mean width per parameter
    q = inference_bound(fx(L3, h200), Workload(1, 128, 128, "q4_0", weight_bytes=4.66e9))
    assert q.decode_weight_bytes == pytest.approx(4.66e9 * L3_STEP_PARAMS / L3.param_count())


def test_capacity_overflow_is_noted():
    b = inference_bound(fx(get_arch("llama-2-7b"), get("A100-SXM4-40GB")), Workload(64, 2048, 2048, "fp16"))
    assert any("exceed" in n for n in b.notes)


def test_training_bound_is_causal_work_over_peak_and_reports_mfu_convention_tflops():
    g = get_arch("genslm-2.5b")
    t = training_bound(fx(g, H100), batch_size=64, seq_len=2048, devices=4)
    n = g.param_count() - g.vocab * g.hidden
    per_token = 6 * n + 6 * g.layers * g.q_dim * 2049           # causal: the work a step does
    model_per_token = 6 * n + 12 * g.layers * g.q_dim * 2048    # MFU convention (PaLM/Megatron)
    assert t.flops_per_step == pytest.approx(64 * 2048 * per_token)
    assert t.model_flops_per_step == pytest.approx(64 * 2048 * model_per_token)
    assert t.binding_resource == "compute"
    assert t.tokens_per_s == pytest.approx(4 * 989.5e12 / per_token)
    assert t.peak_tflops == pytest.approx(4 * 989.5)
    # TFLOP/s in the MFU convention at the bound's pace: above the peak by the causal saving
    assert t.tflops == pytest.approx(t.tokens_per_s * model_per_token / 1e12)
    assert t.tflops > t.peak_tflops
    tiny = training_bound(fx(get_arch("genslm-25m"), H100), batch_size=1, seq_len=16)
    assert tiny.binding_resource == "memory"  # optimizer state traffic dominates tiny steps


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 256), s=st.integers(1, 4096), o=st.integers(1, 2048),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       model=st.sampled_from(["llama-2-7b", "llama-3-70b", "mixtral-8x7b", "qwen2-72b", "smollm2-135m"]),
       hw=st.sampled_from(["H100", "A100", "MI300X", "Gaudi2", "Max1550-stack"]))
def test_bound_properties(b, s, o, tp, pp, model, hw):
    a, h = get_arch(model), get(hw)
    w = Workload(b, s, o, tensor_parallel=tp, pipeline_parallel=pp)
    x = inference_bound(fx(a, h), w)
    assert x.batch_latency_s >= x.prefill_s > 0
    assert x.ttft_s <= x.prefill_s * (1 + 1e-9) or b == 1
    assert x.batch_latency_s == pytest.approx(x.prefill_s + x.decode_s)
    # the per-step bound never beats the weights/matmul roof
    if x.decode_phase_tok_s is not None:
        assert x.decode_phase_tok_s <= x.decode_tok_s * (1 + 1e-9)
    # more output never makes the batch faster
    longer = inference_bound(fx(a, h), Workload(b, s, o + 16, tensor_parallel=tp, pipeline_parallel=pp))
    assert longer.batch_latency_s > x.batch_latency_s
