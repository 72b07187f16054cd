"""The scenarios' truth against hand-worked arithmetic, and their validation."""

import pytest
from pydantic import ValidationError

from llmbench.conformance.scenarios import SCENARIOS, Scenario, Workload, queue, truth


def test_steady_truth_by_hand():
    # 16 tokens: the first 40 ms after receipt, then one every 10 ms -> the last at 190 ms
    t = truth(SCENARIOS["steady"])
    assert t["ttft_s"] == pytest.approx(0.040)
    assert t["itl_s"] == pytest.approx(0.010)
    assert t["tpot_s"] == pytest.approx(0.150 / 15)
    assert t["e2e_s"] == pytest.approx(0.190)
    assert (t["output_tokens"], t["input_tokens"]) == (16, 32)


def test_chunked_truth_counts_k_gaps_per_chunk():
    # 4 events of 4 tokens at 40, 80, 120, 160 ms: 12 per-token gaps of 10 ms, last token at
    # 160 ms, so TPOT = 120 ms / 15 = 8 ms (not 10: the first event's 4 tokens come at once)
    for name in ("chunks", "merged"):
        t = truth(SCENARIOS[name])
        assert t["itl_s"] == pytest.approx(0.010)
        assert t["e2e_s"] == pytest.approx(0.160)
        assert t["tpot_s"] == pytest.approx(0.120 / 15)


def test_parity_counts_the_template():
    assert truth(SCENARIOS["parity"])["input_tokens"] == 37


def test_warm_up_scenario_judges_the_mean_without_the_warm_up():
    sc = SCENARIOS["warm-up"]
    assert sc.stats["ttft_s"] == "mean"
    assert truth(sc)["ttft_s"] == pytest.approx(0.040)


def test_capacity_queue_by_hand():
    # 2 slots, 4 clients, 8 requests, each answer holds its slot 40 + 15 x 10 = 190 ms:
    # requests 0-1 start at 0; 2-3 wait for them (190 ms); 4-5 are sent at 190 and start at
    # 380; 6-7 sent at 380 start at 570; the last finishes at 760 ms.
    sc = SCENARIOS["capacity"]
    assert sc.hold_s() == pytest.approx(0.190)
    per = queue(sc)
    assert [round(s, 3) for _, s in per] == [0, 0, 0.19, 0.19, 0.38, 0.38, 0.57, 0.57]
    assert [round(s - q, 3) for q, s in per] == [0, 0, 0.19, 0.19, 0.19, 0.19, 0.19, 0.19]
    t = truth(sc)
    assert t["request_throughput_req_s"] == pytest.approx(8 / 0.760)
    assert t["output_throughput_tok_s"] == pytest.approx(8 * 16 / 0.760)
    assert t["ttft_s"] == pytest.approx(0.190 + 0.040)   # 6 of 8 waited one answer


def test_every_scenario_has_a_truth_for_the_base_metrics():
    for sc in SCENARIOS.values():
        assert {"ttft_s", "itl_s", "tpot_s", "e2e_s", "output_tokens", "input_tokens"} <= set(truth(sc))


@pytest.mark.parametrize("kw, field", [
    (dict(tokens_per_event=3), "multiple"),
    (dict(reasoning_tokens=4), "chat"),
    (dict(workload=Workload(api="chat"), reasoning_tokens=16), "answer tokens"),
    (dict(tokens_per_event=2, events_per_write=2), "one packing"),
    (dict(ttft_s=0), "ttft_s"),
    (dict(usage="sometimes"), "usage"),
])
def test_invalid_scenarios_name_the_problem(kw, field):
    with pytest.raises(ValidationError, match=field):
        Scenario(name="x", what="x", **kw)
