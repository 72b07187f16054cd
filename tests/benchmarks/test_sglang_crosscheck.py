"""benchmarks/sglang_crosscheck.py's parsing and ratios, on result files CONSTRUCTED in the format
SGLang 0.5.17 writes (bench_one_batch's JSONL: sglang/benchmark/one_batch.py; bench_serving's
--output-file: sglang/benchmark/serving.py l.1770-1826, as read in the 0.5.17 wheel); no
SGLang run made them. Ratios are computed by hand."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sglang_crosscheck as cc  # noqa: E402

from llmbench.measure.timeline import RequestTimeline


def _one_batch_line(run, bs, total, prefill, decode, il=128, ol=128):
    return json.dumps({"run_name": run, "batch_size": bs, "input_len": il, "output_len": ol,
                       "prefill_latency": prefill, "prefill_throughput": il * bs / prefill,
                       "median_decode_latency": decode, "median_decode_throughput": bs / decode,
                       "total_latency": total, "overall_throughput": (il + ol) * bs / total})


def test_bench_one_batch_lines_are_read_for_their_point_only(tmp_path):
    f = tmp_path / "one_batch.jsonl"
    f.write_text("\n".join([_one_batch_line("b1-r0", 1, 1.0, 0.02, 0.0075),
                            _one_batch_line("b1-r0", 16, 9.0, 0.2, 0.05),       # another batch
                            _one_batch_line("b1-r1", 1, 7.0, 7.0, 7.0),         # another round
                            _one_batch_line("b1-r0", 1, 1.0, 0.02, 0.0075, ol=2048)]) + "\n")
    assert cc.read_one_batch(f, "b1-r0", 1, 128, 128) == {"total_latency": 1.0, "prefill_latency": 0.02,
                                                          "median_decode_latency": 0.0075}
    assert cc.read_one_batch(f, "b1-r9", 1, 128, 128) == {}


def test_offline_ratios_are_medians_inverted_for_times():
    ours = {"batch_latency_s": [0.9, 1.0, 1.1], "ttft_s": [0.03, 0.02, 0.025], "itl_s": [0.008, 0.008, 0.009]}
    theirs = [{"total_latency": 1.0, "prefill_latency": 0.02, "median_decode_latency": 0.0075},
              {"total_latency": 1.2, "prefill_latency": 0.02, "median_decode_latency": 0.0075},
              {"total_latency": 1.1, "prefill_latency": 0.02, "median_decode_latency": 0.0075}]
    r = cc.offline_ratios(ours, theirs)
    assert r["total_latency"] == pytest.approx(1.1 / 1.0)          # llmbench faster
    assert r["prefill_latency"] == pytest.approx(0.02 / 0.025)
    assert r["median_decode_latency"] == pytest.approx(0.0075 / 0.008)
    assert cc.offline_ratios(ours, [{}]) == {}


def _serving_line(c, out_tok_s, ttft_med):
    return json.dumps({"backend": "sglang", "dataset_name": "random-ids", "max_concurrency": c,
                       "random_input_len": 128, "random_output_len": 128, "random_range_ratio": 1.0,
                       "completed": 64, "output_throughput": out_tok_s, "median_ttft_ms": ttft_med,
                       "mean_ttft_ms": ttft_med + 1, "mean_itl_ms": 8.0, "median_tpot_ms": 8.5,
                       "median_itl_ms": 7.9, "p99_itl_ms": 12.0})


def test_bench_serving_output_is_read_at_its_concurrency_and_ratios_taken(tmp_path):
    f = tmp_path / "bs.jsonl"
    f.write_text(_serving_line(1, 50.0, 5.0) + "\n" + _serving_line(16, 90.0, 12.0) + "\n")
    got = cc.read_bench_serving(f, 16)
    assert got == {"output_tok_s": 90.0, "ttft_median_ms": 12.0, "ttft_mean_ms": 13.0, "itl_mean_ms": 8.0,
                   "tpot_median_ms": 8.5, "completed": 64}
    theirs = [got, {**got, "output_tok_s": 80.0, "ttft_median_ms": 11.0},
              {**got, "output_tok_s": 100.0, "ttft_median_ms": 13.0}]
    ours = [{"output_tok_s": 100.0, "ttft_median_ms": 10.0}, {"output_tok_s": 110.0, "ttft_median_ms": 12.0},
            {"output_tok_s": 90.0, "ttft_median_ms": 11.0}]
    r = cc.serve_ratios(ours, theirs)
    assert r == {"output_tok_s": pytest.approx(100 / 90), "ttft_median_ms": pytest.approx(12 / 11)}


def _itls(events):
    tl = RequestTimeline(t_ref=0.0, t_send=0.0)
    for t, k in events:
        tl.add(t, k)
    return tl.itl_s()


def _bench_serving_native_itls(events):
    """sglang/benchmark/serving.py's native rule, written out: the first chunk sets TTFT; each
    later chunk of n new tokens adds n ITLs of gap/n."""
    out = []
    for (t0, _), (t1, n) in zip(events, events[1:]):
        out.extend([(t1 - t0) / n] * n)
    return out


def test_the_chunk_rules_agree_except_for_a_multi_token_first_chunk():
    later = [(0.0, 1), (0.5, 3), (1.0, 1)]          # a 3-token chunk after the first token
    assert _itls(later) == pytest.approx([0.5 / 3] * 3 + [0.5])
    assert _bench_serving_native_itls(later) == pytest.approx([0.5 / 3] * 3 + [0.5])
    first = [(0.0, 2), (0.5, 1)]                     # the first chunk brings 2 tokens
    assert _itls(first) == pytest.approx([0.0, 0.5])
    assert _bench_serving_native_itls(first) == pytest.approx([0.5])
    assert "first chunk" in cc.CHUNK_RULE
