"""The cross-checks compare like with like: medians of per-repeat samples on both sides, ratios
as throughputs llmbench / tool (> 1 = llmbench faster), the A/B order alternating. Known
answers from the H200 run's recorded samples (benchmarks/h200/outputs/llamacpp-crosscheck.json,
copied here, and llmbench's committed record of the same point), medians picked by hand."""

import json
import math
import statistics
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


def _llama_bench_json():
    row = {"build_commit": "unknown", "backends": "CUDA", "gpu_info": "NVIDIA H200"}
    return json.dumps([{**row, "n_prompt": 128, "n_gen": 0, "avg_ts": 12286.159733, "samples_ts": PP_TS},
                       {**row, "n_prompt": 0, "n_gen": 128, "avg_ts": 207.586259, "samples_ts": TG_TS}])


# llmbench's record of the same point in the same H200 session (in 128 / out 129): llama.cpp's
# own counters in its run, the quantity llama-bench times (issue 37 item 4)
CROSSCHECK_RECORD = Path(__file__).resolve().parents[2] / "results" / "h200" / "20261201T211303Z-a4557a" / \
    "inference-efb085a434d8f007-d7de42684ed58c5c.json"


def test_llamacpp_compares_llamas_own_counters_with_llama_bench():
    theirs = {k: v["samples_ts"] for k, v in llamacpp_crosscheck.parse_llama_bench(_llama_bench_json()).items()}
    rec = json.loads(CROSSCHECK_RECORD.read_text())
    ours = llamacpp_crosscheck.llmbench_rates(rec)
    # by hand from the record: prefill 0.011373, 0.011343, 0.011456, 0.012007, 0.01183 s for 128
    # tokens, median 0.011456 s -> 11,173.2 tok/s; decode 128 steps, median 0.61848 s
    assert ours["pp128"] == pytest.approx([128 / x for x in (0.011373, 0.011343, 0.011456, 0.012007, 0.01183)])
    r = llamacpp_crosscheck.ratios(ours, theirs)
    assert r["pp128"] == pytest.approx((128 / 0.011456) / 14023.9, rel=1e-12)   # 0.797
    assert r["tg128"] == pytest.approx((128 / 0.61848) / 206.833, rel=1e-12)    # 1.001
    assert round(128 / 0.011456) == 11173  # the figure the issue quotes
    # the user-facing rates stay beside it, not compared: 128 / TTFT was the old pp128 (0.755)
    user = llamacpp_crosscheck.llmbench_user_rates(rec)
    ttft = rec["metrics"]["ttft_s"]["samples"]
    assert user["128/TTFT"] == pytest.approx([128 / t for t in ttft])
    text = llamacpp_crosscheck.report(ours, theirs, user)
    assert "pp128: llama.cpp in llmbench's run  11173.2 tok/s" in text and "ratio 0.797" in text


def test_llamacpp_refuses_counters_of_another_point():
    rec = json.loads(CROSSCHECK_RECORD.read_text())
    rec["metrics"]["engine_prefill_tokens"]["samples"][2] = 64.0
    with pytest.raises(ValueError, match="not 128 per repeat"):
        llamacpp_crosscheck.llmbench_rates(rec)


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


# -- intervals and the CPU gate (issue 37 item 5) -------------------------------------------------
def _welch_by_hand(base, new):
    """(change %, CI low %, CI high %) of the mean, 95% Welch, from scipy's t quantile."""
    from scipy import stats

    mb, mn = statistics.fmean(base), statistics.fmean(new)
    vb, vn = statistics.variance(base) / len(base), statistics.variance(new) / len(new)
    df = (vb + vn) ** 2 / (vb ** 2 / (len(base) - 1) + vn ** 2 / (len(new) - 1))
    h = stats.t.ppf(0.975, df) * math.sqrt(vb + vn)
    return 100 * (mn - mb) / mb, 100 * (mn - mb - h) / mb, 100 * (mn - mb + h) / mb


def test_welch_change_is_compares_interval():
    # the CPU figures: vLLM's benchmark 0.946-0.952 s, llmbench 0.816-0.823 s
    tool, ours = [0.946, 0.952, 0.949, 0.950], [0.816, 0.823, 0.819, 0.821]
    ch = crosscheck_stats.welch_change(tool, ours)
    pct, lo, hi = _welch_by_hand(tool, ours)
    assert ch["pct"] == pytest.approx(pct) and ch["ci_pct"] == pytest.approx([lo, hi])
    assert ch["significant"] and ch["n"] == [4, 4]
    assert crosscheck_stats.describe_change("x", ch).startswith(f"x: 949.2 -> 819.8 ms, {pct:+.1f}%")


def test_the_cpu_gate_compares_each_side_with_the_baseline_run():
    import vllm_crosscheck

    base = {"vllm": "0.32.0", "model": "smollm2-135m", "input_len": 32, "output_len": 32,
            "rows": [{"batch_size": 4, "llmbench_s": [0.82, 0.83, 0.81], "vllm_latency_s": [0.95, 0.94, 0.96],
                      "llm_generate_s": [0.90, 0.91, 0.89]}]}
    rows = [{"batch_size": 4, "llmbench_s": [0.86, 0.87, 0.85], "vllm_latency_s": [0.95, 0.945, 0.955],
             "llm_generate_s": [0.90, 0.905, 0.895]},
            {"batch_size": 8, "llmbench_s": [1.0, 1.1], "vllm_latency_s": [1.2, 1.3], "llm_generate_s": [1.1, 1.2]}]
    text = vllm_crosscheck.gate_report(base, rows, "base.json")
    pct, lo, hi = _welch_by_hand([0.82, 0.83, 0.81], [0.86, 0.87, 0.85])
    line = next(x for x in text.splitlines() if "llmbench batch_latency_s" in x)
    assert f"820.0 -> 860.0 ms, {pct:+.1f}% [{lo:+.1f}%, {hi:+.1f}%]" in line and "; significant)" in line
    tool = next(x for x in text.splitlines() if "vllm.benchmarks.latency" in x)
    assert "no significant change" in tool
    assert " batch 8: not in the baseline" in text


def test_paired_ratio_is_the_student_t_interval():
    stats = pytest.importorskip("scipy.stats")
    ours, theirs = [110.0, 120.0, 100.0], [100.0, 100.0, 100.0]
    r = crosscheck_stats.paired_ratio(ours, theirs)
    assert r["ratios"] == [1.1, 1.2, 1.0]
    lo, hi = stats.t.interval(0.95, 2, loc=1.1, scale=stats.sem([1.1, 1.2, 1.0]))
    assert r["mean"] == pytest.approx(1.1) and r["ci95"] == pytest.approx([lo, hi])
    assert r["median_ratio"] == pytest.approx(110 / 100)
