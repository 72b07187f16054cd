"""benchmarks/capacity_crosscheck.py on CPU, from fake result inputs whose answers are worked
out here: its argument checks, the alternating run order, vLLM's per-request details judged by
the steady-window rule, the pooled verdicts with their sampling error and the printed criterion
(agree / agree within sampling error / DISAGREE with what differs)."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import capacity_crosscheck as cc  # noqa: E402

Z = 1.959963984540054


def wilson(k, n):
    p = k / n
    mid = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [mid - half, mid + half]


def test_arguments_need_three_repeats_and_well_formed_slos(capsys):
    a = cc.parse_args(["--rates", "70,76", "--slo", "ttft_s=0.25,tpot_s=0.03"])
    assert a.rate_list == [70.0, 76.0] and a.slo_ms == {"ttft_s": 250.0, "tpot_s": 30.0}
    assert a.repeats == 3 and a.warmup_requests == 2 and a.num_prompts is None
    for bad in (["--repeats", "2"], ["--slo", "ttft=0.25"], ["--rates", "70,x"], ["--slo-fraction", "0"]):
        with pytest.raises(SystemExit) as e:
            cc.parse_args(bad)
        assert e.value.code == 2, bad
    assert "--repeats must be >= 3" in capsys.readouterr().err


def test_the_clients_alternate_and_each_runs_every_repeat():
    order = cc.plan([70.0, 76.0], 3)
    assert order[:6] == [(70.0, 0, "llmbench"), (70.0, 0, "vllm"), (70.0, 1, "vllm"),
                         (70.0, 1, "llmbench"), (70.0, 2, "llmbench"), (70.0, 2, "vllm")]
    for rate in (70.0, 76.0):
        for client in cc.CLIENTS:
            assert sum(1 for r, _, c in order if r == rate and c == client) == 3


def fake_vllm(n=100):
    """Sends every 0.1 s, each 0.5 s long with 11 output tokens (TPOT 40 ms); requests 30-39
    answer their first token after 0.5 s (a TTFT miss), request 50 failed."""
    ttfts = [0.5 if 30 <= i < 40 else 0.1 for i in range(n)]
    errors = ["boom" if i == 50 else "" for i in range(n)]
    return {"ttfts": ttfts, "latencies": [0.5] * n, "output_lens": [11] * n, "errors": errors,
            "start_times": [100 + 0.1 * i for i in range(n)], "p99_ttft_ms": 500.0,
            "p99_tpot_ms": 40.0, "request_throughput": 9.9, "total_input_tokens": 51200}


def test_vllms_requests_are_judged_on_the_steady_window():
    v = cc.vllm_judged(fake_vllm(), {"ttft_s": 250.0, "tpot_s": 50.0}, 100, 0.9)
    # window: requests 20..89 (70); misses: 30..39 and the failed 50 -> 59 met
    assert v["window_requests"] == [20, 90] and v["judged"] == 70 and v["met"] == 59
    assert v["fraction"] == pytest.approx(59 / 70) and v["meets"] is False
    assert v["wilson"] == pytest.approx(wilson(59, 70), abs=1e-12)
    # 10 req/s x 0.5 s: 5 in flight (the failed one ended at once: a little under)
    assert v["in_flight_mean"] == pytest.approx(5.0, abs=0.2)
    assert v["server_prompt_tokens"] == 51200
    tight = cc.vllm_judged(fake_vllm(), {"ttft_s": 250.0, "tpot_s": 30.0}, 100, 0.9)
    assert tight["met"] == 0                                  # TPOT 40 ms misses 30 ms everywhere


def steady(met, judged, growing=False, **kw):
    return {"met": met, "judged": judged, "growing": growing, "meets": met / judged >= 0.9 and not growing,
            **kw}


def runs(rate, ours, theirs):
    return [{"rate": rate, "repeat": k, "client": c, "judged": j}
            for k, (a, b) in enumerate(zip(ours, theirs)) for c, j in (("llmbench", a), ("vllm", b))]


def test_pooled_verdicts_and_the_criterion():
    # 70 req/s: both clearly meet; 76: the 81.5% vs 100% (200 requests, three times);
    # 73: 0.895 vs 0.905 of 864 each, three times -- verdicts differ within sampling error
    data = (runs(70.0, [steady(820, 864)] * 3, [steady(830, 864)] * 3)
            + runs(76.0, [steady(163, 200, ttft_p99_ms=466.5)] * 3, [steady(200, 200, ttft_p99_ms=218.6)] * 3)
            + runs(73.0, [steady(773, 864)] * 3, [steady(782, 864)] * 3))
    rows = {r["rate"]: r for r in cc.summarize(data, 0.9)}
    a = rows[70.0]
    assert a["llmbench"]["fraction"] == pytest.approx(2460 / 2592) and a["criterion"]["how"] == "same verdict"
    b = rows[76.0]
    p1, p2 = 489 / 600, 1.0
    assert b["llmbench"]["wilson"] == pytest.approx(wilson(489, 600), abs=1e-12)
    assert b["llmbench"]["stderr"] == pytest.approx(math.sqrt(p1 * (1 - p1) / 600))
    assert not b["criterion"]["agree"] and b["criterion"]["how"].startswith("DISAGREE")
    assert b["criterion"]["bound"] == pytest.approx(Z * math.sqrt(p1 * (1 - p1) / 600))
    assert "TTFT p99 ms: llmbench 466.5 | vllm 218.6" in b["differences"]
    c = rows[73.0]
    q1, q2 = 2319 / 2592, 2346 / 2592
    bound = Z * math.sqrt(q1 * (1 - q1) / 2592 + q2 * (1 - q2) / 2592)
    assert abs(q1 - q2) < bound and c["llmbench"]["meets"] is False and c["vllm"]["meets"] is True
    assert c["criterion"]["agree"] and "within sampling error" in c["criterion"]["how"]
    text = cc.report(list(rows.values()), 0.9, {"low_req_s": 73.0, "high_req_s": 76.0, "reason": "r"})
    assert "OVERALL: the verdicts DISAGREE" in text
    assert "llmbench: misses -- fraction 0.815 +- 0.016" in text
    assert "vllm    : meets -- fraction 1.000 +- 0.000" in text
    ok = cc.report([rows[70.0], rows[73.0]], 0.9)
    assert "OVERALL: the verdicts agree within the stated sampling error" in ok


def test_a_growing_queue_is_never_agreement_by_sampling_error():
    data = runs(80.0, [steady(780, 864, growing=True)] * 3, [steady(782, 864)] * 3)
    (row,) = cc.summarize(data, 0.9)
    assert row["llmbench"]["meets"] is False and row["vllm"]["meets"] is True
    assert not row["criterion"]["agree"] and "queue grew" in row["criterion"]["how"]


def test_llmbench_records_are_read_for_the_comparison():
    rec = {"serving": {"steady": steady(800, 864), "prompt_tokens": 442368},
           "metrics": {"ttft_s": {"p99": 0.2}, "tpot_s": {"p99": 0.02},
                       "request_throughput_req_s": {"mean": 70.1}}}
    v = cc.llmbench_judged(rec)
    assert (v["met"], v["ttft_p99_ms"], v["tpot_p99_ms"], v["server_prompt_tokens"]) == (800, 200.0, 20.0, 442368)
