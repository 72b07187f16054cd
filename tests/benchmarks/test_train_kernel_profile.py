"""The kernel-time breakdown: kernel names sorted into kinds as their libraries name them, and
per-step times and rates recomputed by hand from a made-up kernel list."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import train_kernel_profile as tkp  # noqa: E402


@pytest.mark.parametrize("name, kind", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1", "matmul"),
    ("nvjet_tst_192x128_64x4_1x2_h_bz_coopA_NNT", "matmul"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>", "matmul"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64>>", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64", "attention"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", "optimizer"),
    ("triton_red_fused_native_layer_norm_native_layer_norm_backward_0", "fused reduction"),
    ("triton_per_fused__to_copy_add_native_layer_norm_3", "fused reduction"),
    ("triton_poi_fused__to_copy_gelu_1", "fused pointwise"),
    ("Memcpy DtoD (Device -> Device)", "memory"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "aten elementwise/reduce"),
    ("some_custom_kernel", "other"),
])
def test_kernel_kinds(name, kind):
    assert tkp.kind_of(name) == kind


def test_breakdown_by_hand():
    # two steps of 100 ms wall; per step: matmul 60 ms, attention 10 ms, reductions 15 ms, 15 ms idle
    kernels = [("nvjet_a", 0.050), ("sm90_xmma_gemm_b", 0.070), ("flash_fwd", 0.020),
               ("triton_red_fused_x", 0.030)]
    b = tkp.breakdown(kernels, steps=2, wall_s=0.200, dense_flop=30e12, attn_flop=2e12,
                      model_flop=33e12, datasheet_flop_s=1000e12)
    assert b["step_s"] == pytest.approx(0.100)
    assert b["kernel_s"] == pytest.approx(0.085)
    assert b["idle_s"] == pytest.approx(0.015)
    assert b["by_kind_s"] == pytest.approx({"matmul": 0.060, "fused reduction": 0.015, "attention": 0.010})
    assert list(b["by_kind_s"]) == ["matmul", "fused reduction", "attention"]  # longest first
    assert b["matmul_tflop_s"] == pytest.approx(30e12 / 0.060 / 1e12)     # 500
    assert b["attention_tflop_s"] == pytest.approx(2e12 / 0.010 / 1e12)   # 200
    assert b["mfu"] == pytest.approx(33e12 / 0.100 / 1000e12)             # 0.33
    assert b["mfu_if_only_matmul_and_attention"] == pytest.approx(33e12 / 0.070 / 1000e12)
