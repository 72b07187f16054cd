"""The cross-checks compare like with like: medians of per-repeat samples on both sides, ratios
as throughputs llmbench / tool (> 1 = llmbench faster), the A/B order alternating. Known
answers from the H200 run's recorded samples (benchmarks/h200/outputs/llamacpp-crosscheck.json,
copied here), medians picked by hand."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import crosscheck_stats  # noqa: E402
import llamacpp_crosscheck  # noqa: E402
import vllm_serve_crosscheck  # noqa: E402

# llama-bench on the H200, LLaMA-3-8B F16, 5 repeats each (its JSON: samples_ts per repeat)
PP_TS = [5392.06, 13752.2, 14119.2, 14023.9, 14143.5]          # mean 12286.2 (a cold first repeat)
TG_TS = [206.833, 208.98, 209.113, 206.585, 206.42]
# llmbench on the same point: 128 / TTFT and 128 / (last - first token), per repeat
OUR_PP = [10582.891614831735, 10799.837664940087, 10603.908318842798, 9976.534100513112,
          10201.189777456466]
OUR_TG = [201.7536245357482, 203.39700585493105, 200.1813151645505, 203.87874079978758,
          203.56725630033907]


def _llama_bench_json():
    row = {"build_commit": "unknown", "backends": "CUDA", "gpu_info": "NVIDIA H200"}
    return json.dumps([{**row, "n_prompt": 128, "n_gen": 0, "avg_ts": 12286.159733, "samples_ts": PP_TS},
                       {**row, "n_prompt": 0, "n_gen": 128, "avg_ts": 207.586259, "samples_ts": TG_TS}])


def _our_record():
    ttft = [128 / x for x in OUR_PP]
    e2e = [t + 128 / x for t, x in zip(ttft, OUR_TG)]
    return {"metrics": {"ttft_s": {"samples": ttft}, "e2e_s": {"samples": e2e}}}


def test_llamacpp_ratio_is_median_to_median_throughput():
    theirs = {k: v["samples_ts"] for k, v in llamacpp_crosscheck.parse_llama_bench(_llama_bench_json()).items()}
    ours = llamacpp_crosscheck.llmbench_rates(_our_record())
    assert ours["pp128"] == pytest.approx(OUR_PP) and ours["tg128"] == pytest.approx(OUR_TG)
    r = llamacpp_crosscheck.ratios(ours, theirs)
    # sorted middles: pp 10582.89 / 14023.9; tg 203.397 / 206.833
    assert r["pp128"] == pytest.approx(10582.891614831735 / 14023.9, rel=1e-12)   # 0.755
    assert r["tg128"] == pytest.approx(203.39700585493105 / 206.833, rel=1e-12)   # 0.983
    assert round(r["pp128"], 3) == 0.755   # median to llama-bench's mean was 0.861


def test_times_are_inverted_so_above_one_is_llmbench_faster():
    # llmbench's batch latencies median 0.6 s, the tool's 0.9 s: llmbench is 1.5x as fast
    assert crosscheck_stats.speed_ratio([0.7, 0.5, 0.6], [1.2, 0.6, 0.9], time=True) == pytest.approx(1.5)
    assert crosscheck_stats.speed_ratio([300.0, 100.0, 200.0], [400.0, 50.0, 100.0]) == pytest.approx(2.0)
    # even counts: the mean of the two middles (statistics.median), the same on both sides
    assert crosscheck_stats.speed_ratio([1.0, 3.0], [2.0, 2.0, 6.0, 10.0], time=True) == pytest.approx(2.0)


def test_order_alternates_over_rounds():
    assert [crosscheck_stats.order(r) for r in range(4)] == [
        ("llmbench", "tool"), ("tool", "llmbench"), ("llmbench", "tool"), ("tool", "llmbench")]


def test_serve_rounds_combine_to_medians_and_time_ratios_point_the_same_way(tmp_path, capsys):
    ours = [{"output_tok_s": 200.0, "ttft_median_ms": 20.0, "ttft_mean_ms": 21.0, "itl_mean_ms": 5.0,
             "tpot_median_ms": 5.0, "completed": 24},
            {"output_tok_s": 190.0, "ttft_median_ms": 22.0, "ttft_mean_ms": 23.0, "itl_mean_ms": 5.2,
             "tpot_median_ms": 5.1, "completed": 24},
            {"output_tok_s": 210.0, "ttft_median_ms": 30.0, "ttft_mean_ms": 31.0, "itl_mean_ms": 4.8,
             "tpot_median_ms": 4.9, "completed": 24}]
    c = vllm_serve_crosscheck.combine(ours)
    assert c == {"output_tok_s": 200.0, "ttft_median_ms": 22.0, "ttft_mean_ms": 23.0,
                 "itl_mean_ms": 5.0, "tpot_median_ms": 5.0, "completed": 72}
    theirs = {"output_tok_s": 250.0, "ttft_median_ms": 11.0, "ttft_mean_ms": 23.0, "itl_mean_ms": 4.0,
              "tpot_median_ms": 4.0, "completed": 72}

    class A:
        model, device, input_len, output_len, rounds, warmups = "m", "cpu", 8, 8, 3, 2

    rows = [{"concurrency": 1, "requests": 24, "llmbench": c, "vllm_bench_serve": theirs}]
    vllm_serve_crosscheck.report(A, "0.0", rows, tmp_path)
    got = json.loads((tmp_path / "serve-crosscheck.json").read_text())[0]["ratios"]
    assert got["output_tok_s"] == pytest.approx(200 / 250)     # llmbench slower: < 1
    assert got["ttft_median_ms"] == pytest.approx(11 / 22)     # llmbench's TTFT twice: 0.5
    assert got["ttft_mean_ms"] == pytest.approx(1.0)
    assert got["tpot_median_ms"] == pytest.approx(4 / 5)
    assert "> 1 = llmbench faster" in capsys.readouterr().out
