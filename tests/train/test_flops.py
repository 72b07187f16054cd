import pytest

from llmbench.train.flops import attention_flops_per_token, flops_per_token


def test_gpt2_small_training_flops_by_hand():
    # N = 124,439,808 (all) - 1024*768 (wpe) = 123,653,376; 6N = 741,920,256
    # 12*L*h*s = 12*12*768*128 = 14,155,776
    assert flops_per_token(123_653_376, 12, 768, 128) == 741_920_256 + 14_155_776


def test_block_h4096_s2048():
    n = 12 * 4096**2 + 13 * 4096   # qkv 3h^2+3h, proj h^2+h, mlp 8h^2+5h, 2 LayerNorms 4h
    assert flops_per_token(n, 1, 4096, 2048) == 6 * n + 12 * 4096 * 2048
    assert flops_per_token(n, 1, 4096, 2048, causal_attention=True) == 6 * n + 6 * 4096 * 2048
    assert flops_per_token(n, 1, 4096, 2048, backward=False) == 2 * n + 4 * 4096 * 2048


def test_attention_term_scales_with_layers_and_seq():
    assert attention_flops_per_token(48, 1600, 1024) == 12 * 48 * 1600 * 1024
    assert attention_flops_per_token(2, 8, 4, causal_attention=True) == pytest.approx(6 * 2 * 8 * 4)
