"""Metric definitions checked against hand-made timelines (DESIGN.md)."""

import pytest

from llmbench.measure.timeline import BatchTiming, RequestTimeline
from llmbench.metrics import energy_metrics, offline_metrics


def tl(ref, times, ks=None, prompt=10):
    r = RequestTimeline(t_ref=ref, prompt_tokens=prompt)
    for t, k in zip(times, ks or [1] * len(times)):
        r.add(t, k)
    return r


def test_ttft_tpot_e2e_itl_single_request():
    r = tl(100.0, [100.5, 100.6, 100.8, 101.1])
    assert r.ttft_s() == pytest.approx(0.5)
    assert r.e2e_s() == pytest.approx(1.1)
    assert r.tpot_s() == pytest.approx(0.6 / 3)
    assert r.itl_s() == pytest.approx([0.1, 0.2, 0.3])
    assert r.output_tokens == 4


def test_chunk_of_k_tokens_counts_as_k():
    # Events: 1 token at 1.0, then a 3-token chunk at 1.6: 4 tokens, ITL 3 x 0.2
    r = tl(0.0, [1.0, 1.6], ks=[1, 3])
    assert r.output_tokens == 4
    assert r.itl_s() == pytest.approx([0.2, 0.2, 0.2])
    assert r.tpot_s() == pytest.approx(0.6 / 3)
    assert sum(r.itl_s()) == pytest.approx(r.t_last - r.t_first)


def test_first_event_with_several_tokens_adds_zero_gaps():
    r = tl(0.0, [1.0, 2.0], ks=[2, 1])
    assert r.itl_s() == pytest.approx([0.0, 1.0])
    assert len(r.itl_s()) == r.output_tokens - 1


def test_single_token_has_no_tpot():
    r = tl(0.0, [0.3])
    assert r.tpot_s() is None and r.itl_s() == []


def test_offline_batch_metrics():
    # Two repeats of a batch of 2 requests, 3 output tokens, 10 prompt tokens each.
    b1 = BatchTiming(0.0, 2.0, [tl(0.0, [0.5, 1.0, 1.5]), tl(0.0, [0.5, 1.0, 2.0])])
    b2 = BatchTiming(10.0, 11.0, [tl(10.0, [10.2, 10.6, 11.0]), tl(10.0, [10.2, 10.6, 11.0])])
    m = offline_metrics([b1, b2], input_len=10)
    assert m["batch_latency_s"].samples == pytest.approx([2.0, 1.0])
    assert m["output_throughput_tok_s"].samples == pytest.approx([6 / 2.0, 6 / 1.0])
    assert m["total_throughput_tok_s"].samples == pytest.approx([26 / 2.0, 26 / 1.0])
    assert m["request_throughput_req_s"].samples == pytest.approx([1.0, 2.0])
    assert sorted(m["ttft_s"].samples) == pytest.approx([0.2, 0.2, 0.5, 0.5])
    assert sorted(m["e2e_s"].samples) == pytest.approx([1.0, 1.0, 1.5, 2.0])
    assert m["itl_s"].n == 8
    assert m["tpot_s"].mean == pytest.approx((0.5 + 0.75 + 0.4 + 0.4) / 4)
    assert "energy_j" not in m  # no meter: absent, never zero


def test_energy_metrics_when_metered():
    b = BatchTiming(0.0, 2.0, [tl(0.0, [1.0, 2.0])], energy_j=300.0)
    m = energy_metrics([b])
    assert "energy_j" not in offline_metrics([b], input_len=10)  # timing only
    assert m["avg_power_w"].mean == pytest.approx(150.0)
    assert m["tokens_per_joule"].mean == pytest.approx(2 / 300.0)
