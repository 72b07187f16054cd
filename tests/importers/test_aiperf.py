"""AIPerf 0.13's real profile exports (tests/fixtures/tools/README.md) as records."""

import json
from pathlib import Path

import numpy as np
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


def _bunched(rows):
    """The real rows as if AIPerf had read the stream three chunks at a time (the issue's
    export: ITL p50 0 ms): each run of three chunk gaps becomes (their sum, 0, 0); the sums
    (so TTFT, E2E, TPOT) are unchanged."""
    out = json.loads(json.dumps(rows))
    for r in out:
        g = r["metrics"]["inter_chunk_latency"]["value"]
        r["metrics"]["inter_chunk_latency"]["value"] = [
            x for i in range(0, len(g), 3) for x in [sum(g[i:i + 3])] + [0.0] * (len(g[i:i + 3]) - 1)]
    return out


def test_bunched_stream_is_client_limited_and_aiperf_itl_kept(tmp_path):
    rows = _bunched(_rows())
    d = tmp_path / "artifacts"
    d.mkdir()
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "profile_export_aiperf.json").write_text(AGG.read_text())
    (rec,) = aiperf.parse(d / "profile_export.jsonl").records
    gaps = np.array([x for r in rows for x in r["metrics"]["inter_chunk_latency"]["value"]]) / 1e3
    zero_share = float((gaps == 0).mean())
    assert zero_share > 0.5                      # the known answer, from the raw rows
    (name,) = [k for k in rec.metrics if k.startswith("itl")]
    itl = rec.metrics[name]
    assert itl.median == pytest.approx(float(np.median(gaps))) == 0.0
    assert itl.zero_gap_share == pytest.approx(zero_share) and itl.client_limited is True
    assert any(n.startswith(f"{name} client-limited") and "tpot_s" in n for n in rec.notes)
    # AIPerf's own ITL (per request (latency - TTFT)/(tokens - 1)) is kept as it printed it,
    # and equals the mean of its per-request values (bunching does not move it)
    own = rec.tool_figures["itl_s"]
    per_request = [r["metrics"]["inter_token_latency"]["value"] / 1e3 for r in rows]
    assert own.mean == pytest.approx(float(np.mean(per_request)))
    assert own.median == pytest.approx(float(np.median(per_request)))
    assert own.median > 0.05 and "tpot_s" in own.label
    assert rec.metric("tpot_s") == pytest.approx(own.mean, rel=1e-9)


def test_real_export_is_not_client_limited():
    rows = _rows()
    (rec,) = aiperf.parse(ROWS).records
    gaps = [x for r in rows for x in r["metrics"]["inter_chunk_latency"]["value"]]
    m = rec.metrics["itl_per_chunk_s"]
    assert m.zero_gap_share == pytest.approx(sum(x == 0 for x in gaps) / len(gaps)) == pytest.approx(1 / 120)
    assert m.client_limited is False and not any("client-limited" in n for n in rec.notes)


def test_artifact_directory_imports_as_one_unit_with_aiperf_figures(tmp_path):
    """`llmbench import auto DIR` on AIPerf's artifact directory: the per-request conversion,
    and AIPerf's own figures (its aggregate printout) beside ours, labelled."""
    from typer.testing import CliRunner

    from llmbench.cli import app
    from llmbench.store.store import Store

    res = tmp_path / "res"
    r = CliRunner().invoke(app, ["import", "auto", str(ROWS.parent), "--results", str(res)])
    assert r.exit_code == 0, r.output
    assert "tool: aiperf" in r.output and "imported: 1 records" in r.output
    (rec,) = Store(res).records()
    rows, agg = _rows(), json.loads(AGG.read_text())
    ttft_own = [x["metrics"]["time_to_first_token"]["value"] / 1e3 for x in rows]
    # AIPerf's TTFT percentiles are numpy's linear ones of its per-request values
    assert rec.tool_figures["ttft_s"].median == pytest.approx(float(np.percentile(ttft_own, 50)))
    assert rec.tool_figures["ttft_s"].p90 == pytest.approx(float(np.percentile(ttft_own, 90)))
    assert rec.tool_figures["ttft_s"].median == pytest.approx(agg["time_to_first_token"]["p50"] / 1e3)
    assert "dispatch delay" in rec.tool_figures["ttft_s"].label
    # ours from when the request was due: later reference, never shorter
    assert rec.metric("ttft_s", "median") >= rec.tool_figures["ttft_s"].median
    assert rec.tool_figures["output_throughput_tok_s"].mean == pytest.approx(agg["output_token_throughput"]["avg"])
    row = Store(res).query().fetchdf().iloc[0]
    assert row["tool_ttft_s_median"] == pytest.approx(rec.tool_figures["ttft_s"].median)
    assert bool(row["itl_per_chunk_s_client_limited"]) is False
