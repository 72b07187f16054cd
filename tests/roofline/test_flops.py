import pytest

from llmbench.roofline.flops import attention_flops_per_token, flops_per_token


def test_gpt2_small_training_flops_by_hand():
    # N = 124,439,808 (all) - 1024*768 (wpe) = 123,653,376; 6N = 741,920,256
    # 12*L*h*s = 12*12*768*128 = 14,155,776
    assert flops_per_token(123_653_376, 12, 768, 128) == 741_920_256 + 14_155_776


def test_block_h4096_s2048():
    n = 12 * 4096**2 + 13 * 4096   # qkv 3h^2+3h, proj h^2+h, mlp 8h^2+5h, 2 LayerNorms 4h
    assert flops_per_token(n, 1, 4096, 2048) == 6 * n + 12 * 4096 * 2048
    # causal: query i attends to i + 1 keys, (s + 1) / 2 on average
    assert flops_per_token(n, 1, 4096, 2048, causal_attention=True) == 6 * n + 6 * 4096 * 2049
    assert flops_per_token(n, 1, 4096, 2048, backward=False) == 2 * n + 4 * 4096 * 2048


def test_attention_term_scales_with_layers_and_seq():
    assert attention_flops_per_token(48, 1600, 1024) == 12 * 48 * 1600 * 1024
    assert attention_flops_per_token(2, 8, 4, causal_attention=True) == pytest.approx(6 * 2 * 8 * 5)


def test_roofline_training_bound_counts_with_flops_py():
    """One FLOP count: the bound's step time uses flops.py's causal count, its TFLOP/s the MFU
    (full attention) count that `tflops` and `mfu` use."""
    from llmbench.hardware import get
    from llmbench.models.catalog import get_arch
    from llmbench.roofline.model import matmul_params, training_bound

    g = get_arch("gpt2-xl")
    t = training_bound(g, get("H200"), batch_size=16, seq_len=1024)
    n = matmul_params(g)
    tokens = 16 * 1024
    assert t.flops_per_step == tokens * flops_per_token(n, 48, 1600, 1024, causal_attention=True)
    assert t.model_flops_per_step == tokens * flops_per_token(n, 48, 1600, 1024)
