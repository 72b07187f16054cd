"""guidellm 0.8.1's real benchmarks.json (tests/fixtures/tools/README.md) as records."""

import copy
import json
from pathlib import Path

import pytest

from llmbench.importers import guidellm
from llmbench.importers.registry import detect

TOOLS = Path(__file__).parents[1] / "fixtures" / "tools"
FILE = TOOLS / "guidellm-benchmarks.json"


def _parse_doc(tmp_path, doc):
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    return guidellm.parse(p)


def test_real_file_converts_to_our_definitions():
    doc = json.loads(FILE.read_text())
    rows = doc["benchmarks"][0]["requests"]["successful"]
    res = guidellm.parse(FILE)
    assert res.problems == [] and detect(FILE) == "guidellm"
    (rec,) = res.records
    assert rec.kind == "serving" and rec.backend.name == "openai-server"
    assert rec.workload["load"] == "closed" and rec.workload["concurrency"] == 1
    assert rec.workload["input_len"] == 16 and rec.workload["output_len"] == 16
    assert rec.metrics["ttft_s"].n == len(rows) == 8
    # TTFT from the scheduled start: guidellm's TTFT + its dispatch delay, per request
    want = sum(r["time_to_first_token_ms"] / 1e3 + r["request_dispatch_delay"] for r in rows) / 8
    assert rec.metric("ttft_s") == pytest.approx(want)
    # guidellm's per-request ITL is our TPOT; its "time per output token" (TTFT included) is not
    assert rec.metric("tpot_s") == pytest.approx(
        doc["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"]["mean"] / 1e3, rel=1e-6)
    assert rec.metric("tpot_s") < doc["benchmarks"][0]["metrics"]["time_per_output_token_ms"]["successful"]["mean"] / 1e3
    # E2E to the last token: before guidellm's end of response, after its TTFT
    for r, e in zip(rows, rec.metrics["e2e_s"].samples):
        assert r["time_to_first_token_ms"] / 1e3 < e <= r["request_latency"] + r["request_dispatch_delay"] + 1e-9
    assert "itl_s" not in rec.metrics and any("itl_s not imported" in n for n in rec.notes)
    assert rec.metric("requests_completed") == 8 and rec.metric("requests_failed") == 0
    assert rec.source["tool"] == "guidellm" and rec.source["version"] == "0.8.1"
    assert rec.source["benchmark"] == 0   # the file is one line: the index locates it


def test_without_request_rows_uses_summaries_and_flags(tmp_path):
    doc = json.loads(FILE.read_text())
    doc["benchmarks"][0]["requests"]["successful"] = []
    rec = _parse_doc(tmp_path, doc).records[0]
    assert "ttft_s" not in rec.metrics and "ttft_from_send_s" in rec.metrics
    s = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    assert rec.metric("ttft_from_send_s", "p90") == pytest.approx(s["percentiles"]["p90"] / 1e3)
    assert rec.metrics["ttft_from_send_s"].n == 8


def test_open_loop_strategy(tmp_path):
    doc = json.loads(FILE.read_text())
    b = copy.deepcopy(doc["benchmarks"][0])
    b["config"]["strategy"] = {"type_": "poisson", "rate": 2.0}
    doc["benchmarks"].append(b)
    recs = _parse_doc(tmp_path, doc).records
    assert [r.workload["load"] for r in recs] == ["closed", "open"]
    assert recs[1].workload["request_rate"] == 2.0


def test_guidellm_own_figures_are_kept_beside_ours():
    """guidellm's TTFT as guidellm reported it (from the actual start, its nearest-rank
    percentiles), recomputed from its own per-request fields, beside llmbench's."""
    import numpy as np

    doc = json.loads(FILE.read_text())
    rows = doc["benchmarks"][0]["requests"]["successful"]
    (rec,) = guidellm.parse(FILE).records
    own = np.array([r["time_to_first_token_ms"] for r in rows]) / 1e3
    fig = rec.tool_figures["ttft_s"]
    assert fig.median == pytest.approx(float(np.percentile(own, 50, method="inverted_cdf")))
    assert fig.p90 == pytest.approx(float(np.percentile(own, 90, method="inverted_cdf")))
    assert fig.mean == pytest.approx(float(own.mean())) and fig.n == len(rows)
    assert "dispatch delay" in fig.label
    # llmbench's TTFT (scheduled start) exceeds guidellm's by each request's dispatch delay
    ours = np.array(rec.metrics["ttft_s"].samples)
    delay = np.array([r["request_dispatch_delay"] for r in rows])
    assert ours - own == pytest.approx(delay)
    # guidellm's ITL is token-weighted: each request's (latency - TTFT)/(out - 1), out - 1 times
    itl = [r["inter_token_latency_ms"] / 1e3 for r in rows for _ in range(r["output_tokens"] - 1)]
    assert rec.tool_figures["itl_s"].mean == pytest.approx(float(np.mean(itl)))
    assert rec.tool_figures["e2e_s"].median == pytest.approx(
        float(np.percentile([r["request_latency"] for r in rows], 50, method="inverted_cdf")))


def test_output_folder_imports_as_one_unit(tmp_path):
    from llmbench.importers.registry import parse

    d = tmp_path / "guidellm-out"
    d.mkdir()
    (d / "benchmarks.json").write_text(FILE.read_text())
    (rec,) = parse("auto", d).records
    assert rec.source["tool"] == "guidellm" and "ttft_s" in rec.tool_figures
