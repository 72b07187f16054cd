"""benchmarks/vllm_crosscheck.py without an engine: the pass criterion, the alternating order,
where llmbench's span goes, and the sizes of the parts one side counts and the other does not,
each against answers worked out by hand."""

import sys
from pathlib import Path

import pytest

from llmbench.measure.timeline import BatchTiming, RequestTimeline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import vllm_crosscheck  # noqa: E402


@pytest.mark.parametrize("ratio,passes", [(1.0, True), (0.971, True), (1.029, True),
                                          (0.968, False), (1.031, False), (0.86, False)])
def test_verdict_passes_within_three_percent(ratio, passes):
    assert vllm_crosscheck.TOLERANCE == 0.03
    assert vllm_crosscheck.verdict(ratio).startswith("PASS" if passes else "FAIL")


def test_order_alternates_each_pair():
    sides = ("a", "b", "c", "d")
    first, second = vllm_crosscheck.round_order(0, sides), vllm_crosscheck.round_order(1, sides)
    assert first == sides and second == ("d", "c", "b", "a")
    for x, y in (("a", "b"), ("b", "c"), ("a", "d")):
        assert (first.index(x) < first.index(y)) != (second.index(x) < second.index(y))


def _batch(t0, sends, firsts, last, ret):
    reqs = []
    for s, f in zip(sends, firsts):
        tl = RequestTimeline(t_ref=t0, t_send=s)
        tl.add(f, 1)
        tl.add(last, 1)
        reqs.append(tl)
    return BatchTiming(t0, last, reqs, t_return=ret)


def test_span_samples_one_per_batch_and_their_medians():
    # batch 1: last add 2 ms after start, first token at 300 ms, return 0.1 ms after the last token
    # batch 2: 4 ms, 320 ms, 0.3 ms; batch 3: 3 ms, 310 ms, 0.2 ms -> medians 3 ms, 310 ms, 0.2 ms
    b = [_batch(10.0, [10.001, 10.002], [10.300, 10.301], 13.9, 13.9001),
         _batch(20.0, [20.004, 20.001], [20.321, 20.320], 23.9, 23.9003),
         _batch(30.0, [30.003, 30.0], [30.310, 30.315], 33.9, 33.9002)]
    span = vllm_crosscheck.span_samples(b)
    assert span["render_add_s"] == pytest.approx([0.002, 0.004, 0.003])
    samples = {k: [4.0] for k, _ in vllm_crosscheck.SIDES}
    p = vllm_crosscheck.summarize_row(4, samples, span)["llmbench_parts_s"]
    assert p["render_add_s"] == pytest.approx(0.003)
    assert p["first_token_s"] == pytest.approx(0.310)
    assert p["after_last_token_s"] == pytest.approx(0.0002)


def test_row_prices_each_part_and_judges_the_greedy_pair():
    samples = {"llmbench_s": [3.94, 3.93, 3.95], "vllm_latency_s": [3.95, 3.96, 3.94],
               "vllm_latency_shipped_s": [3.98, 3.97, 3.99], "llm_generate_s": [3.96, 3.94, 3.95]}
    span = {"render_add_s": [0.001, 0.002, 0.003], "first_token_s": [0.39] * 3,
            "after_last_token_s": [0.0001] * 3}
    row = vllm_crosscheck.summarize_row(4, samples, span)
    assert row["ratio_vs_latency_benchmark"] == pytest.approx(3.95 / 3.94)
    assert row["verdict"].startswith("PASS")
    assert row["temperature_1_cost_s"] == pytest.approx(3.98 - 3.95)
    assert row["ratio_vs_latency_benchmark_as_shipped"] == pytest.approx(3.98 / 3.94)
    assert row["llm_generate_minus_llmbench_s"] == pytest.approx(3.95 - 3.94)
    text = "\n".join(vllm_crosscheck.report(row, 32))
    assert "median   3940.0 ms  (n=3, min 3930.0, max 3950.0)  =    32.5 output tok/s" in text
    assert "render + add_request 2.00 ms" in text and "+30.0 ms a batch" in text
    assert "PASS: throughput ratio llmbench / vLLM's benchmark (both greedy) 1.003" in text


def test_row_of_the_issues_figures_fails():
    # issue 37 item 5a: llmbench 0.816-0.823 s against vLLM's benchmark 0.946-0.952 s
    samples = {"llmbench_s": [0.816, 0.823], "vllm_latency_s": [0.946, 0.952],
               "vllm_latency_shipped_s": [], "llm_generate_s": []}
    row = vllm_crosscheck.summarize_row(4, samples, {"render_add_s": [0.0], "first_token_s": [0.0],
                                                      "after_last_token_s": [0.0]})
    assert row["verdict"].startswith("FAIL") and row["ratio_vs_latency_benchmark"] == pytest.approx(0.949 / 0.8195)
    assert "temperature_1_cost_s" not in row and "ratio_vs_llm_generate" not in row
    vllm_crosscheck.report(row, 32)


def test_greedy_wrapper_forces_temperature_zero_and_keeps_the_rest():
    seen = {}

    def params(*args, **kw):
        seen.update(kw)
        return kw

    vllm_crosscheck.sampling_params_greedy(params)(n=1, temperature=1.0, top_p=1.0, max_tokens=32)
    assert seen == {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 32}


def test_combine_pools_the_calls_samples_and_refuses_different_points():
    def run(llm, tool, span, rounds=3, out=32):
        return {"vllm": "0.32.0", "device": "cpu", "model": "smollm2-135m", "input_len": 32,
                "output_len": out, "per_round": 2, "warmups": 0, "own_engine": None, "rounds": rounds,
                "engine": {"dtype": "bfloat16"},
                "rows": [{"batch_size": 4, "llmbench_s": llm, "vllm_latency_s": tool,
                          "vllm_latency_shipped_s": [], "llm_generate_s": [],
                          **({"llmbench_span_s": span} if span else {})}]}

    span = {"render_add_s": [0.002, 0.004], "first_token_s": [0.3, 0.3], "after_last_token_s": [0.0, 0.0]}
    meta, rows = vllm_crosscheck.combine([run([3.0, 5.0], [4.0, 4.0], span),
                                          run([4.5, 4.0], [4.1, 4.2], None, rounds=2)])
    assert meta["rounds"] == 5 and meta["calls"] == 2
    assert rows[0]["llmbench_s"] == [3.0, 5.0, 4.5, 4.0]
    # medians: llmbench (4.0 + 4.5) / 2 = 4.25, vLLM (4.0 + 4.1) / 2 = 4.05
    assert rows[0]["ratio_vs_latency_benchmark"] == pytest.approx(4.05 / 4.25)
    assert rows[0]["llmbench_parts_s"]["render_add_s"] == pytest.approx(0.003)  # from the first call only
    with pytest.raises(SystemExit, match="output_len"):
        vllm_crosscheck.combine([run([1.0], [1.0], span), run([1.0], [1.0], span, out=64)])
