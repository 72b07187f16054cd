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
    from llmbench.roofline.model import matmul_params, training_bound
    from llmbench.roofline.workload import facts

    g, _, f = facts("gpt2-xl", "H200")
    t = training_bound(f, batch_size=16, seq_len=1024)
    n = g.param_count() - g.max_position * g.hidden  # tied wte is the head; wpe a lookup table
    assert matmul_params(f.shape) == n
    tokens = 16 * 1024
    assert t.flops_per_step == tokens * flops_per_token(n, 48, 1600, 1024, causal_attention=True)
    assert t.model_flops_per_step == tokens * flops_per_token(n, 48, 1600, 1024)


def test_mfu_over_the_measured_peak_carries_the_peaks_spread():
    """Five windows of 760..800 TFLOP/s: the peak is their median, 780; 390 TFLOP/s per device
    is 0.5 of it, and between 390/800 and 390/760 of the fastest and slowest window."""
    from llmbench.kinds.training.peaks import spread
    from llmbench.kinds.training.record import measured_peak_metrics

    w = [800e12, 760e12, 780e12, 790e12, 770e12]
    assert spread(w) == pytest.approx(20 / 780, rel=1e-12)
    m = measured_peak_metrics({"flops": 780e12, "windows_flops": w, "spread": spread(w)}, [390.0])
    mfu = m["mfu_measured_peak"]
    assert mfu.mean == pytest.approx(0.5, rel=1e-12)
    assert mfu.peak_tflops == {"median": 780.0, "min": 760.0, "max": 800.0, "windows": 5,
                               "spread": pytest.approx(20 / 780)}
    assert mfu.range_over_peak_windows == pytest.approx([390 / 800, 390 / 760], rel=1e-12)
    pk = m["matmul_peak_tflops"]
    assert (pk.n, pk.median, pk.min, pk.max) == (5, 780.0, 760.0, 800.0)
    # a record of one window (before windows): that window, no spread known
    one = measured_peak_metrics({"flops": 787e12}, [450.6])
    assert one["matmul_peak_tflops"].n == 1 and one["mfu_measured_peak"].peak_tflops["spread"] is None
    assert one["mfu_measured_peak"].mean == pytest.approx(450.6 / 787, rel=1e-12)
