"""AIPerf 0.13's real profile exports (tests/fixtures/tools/README.md) as records."""

import json
from pathlib import Path

import pytest

from llmbench.importers import aiperf
from llmbench.importers.registry import detect

TOOLS = Path(__file__).parents[1] / "fixtures" / "tools"
ROWS = TOOLS / "aiperf" / "profile_export.jsonl"
AGG = TOOLS / "aiperf" / "profile_export_aiperf.json"


def _rows():
    return [json.loads(x) for x in ROWS.read_text().splitlines() if x.strip()]


def test_per_request_export_converts_exactly():
    rows = _rows()
    res = aiperf.parse(ROWS)
    assert res.problems == [] and detect(ROWS) == "aiperf"
    (rec,) = res.records
    agg = json.loads(AGG.read_text())
    assert rec.kind == "serving" and rec.model.name == "smollm2-135m"
    assert rec.workload["load"] == "closed" and rec.workload["concurrency"] == 1
    assert rec.workload["input_len"] == 16 and rec.source["version"] == "0.13.0"
    # TTFT from when the request was due (credit issued), not from AIPerf's actual start
    want = [(r["metadata"]["request_start_ns"] - r["metadata"]["credit_issued_ns"]) / 1e9
            + r["metrics"]["time_to_first_token"]["value"] / 1e3 for r in rows]
    assert rec.metrics["ttft_s"].samples == pytest.approx(want)
    assert all(w > r["metrics"]["time_to_first_token"]["value"] / 1e3 for w, r in zip(want, rows))
    # same data, same TPOT definition -> AIPerf's own inter_token_latency summary
    assert rec.metric("tpot_s") == pytest.approx(agg["inter_token_latency"]["avg"] / 1e3, rel=1e-9)
    # one request's token count (AIPerf re-tokenises the text) differs from its chunk count
    assert "itl_per_chunk_s" in rec.metrics and "itl_s" not in rec.metrics and rec.notes
    assert rec.metric("requests_completed") == len(rows) == 8
    assert rec.metric("request_throughput_req_s") == pytest.approx(
        agg["request_throughput"]["avg"], rel=1e-3)


def test_aggregate_export_flags_the_reference():
    (rec,) = aiperf.parse(AGG).records
    assert detect(AGG) == "aiperf"
    assert "ttft_s" not in rec.metrics and "ttft_from_send_s" in rec.metrics
    assert rec.metric("ttft_from_send_s", "p90") == pytest.approx(
        json.loads(AGG.read_text())["time_to_first_token"]["p90"] / 1e3)
    assert rec.metrics["ttft_from_send_s"].n == 8 and rec.notes


def test_errors_and_warmup_rows_are_left_out_and_counted(tmp_path):
    rows = _rows()
    rows[0]["error"] = {"code": 500, "message": "boom"}
    rows[1]["metadata"]["benchmark_phase"] = "warmup"
    p = tmp_path / "profile_export.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    res = aiperf.parse(p)
    rec = res.records[0]
    assert rec.metric("requests_completed") == 6 and rec.metric("requests_failed") == 1
    assert any("warm-up" in n for n in rec.notes)
    assert res.problems == [f"{p}:9: not JSON"]
