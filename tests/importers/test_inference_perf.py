"""inference-perf 0.7.0's real reports (tests/fixtures/tools/README.md) as records."""

import json
import shutil
from pathlib import Path

import pytest

from llmbench.importers import inference_perf
from llmbench.importers.inference_perf import _gaps
from llmbench.importers.registry import detect

DIR = Path(__file__).parents[1] / "fixtures" / "tools" / "inference-perf"
ROWS = DIR / "per_request_lifecycle_metrics.json"
SUMMARY = DIR / "summary_lifecycle_metrics.json"


def test_per_request_report_converts_exactly():
    rows = json.loads(ROWS.read_text())
    summ = json.loads(SUMMARY.read_text())["successes"]["latency"]
    res = inference_perf.parse(ROWS)
    assert res.problems == [] and detect(ROWS) == "inference-perf"
    (rec,) = res.records
    assert rec.model.name == "smollm2-135m" and rec.workload["load"] == "closed"
    assert rec.workload["concurrency"] == 1 and rec.workload["input_len"] == 16
    # same rows, same TTFT definition (closed loop: actual send = due) -> its own summary
    assert rec.metric("ttft_s") == pytest.approx(summ["time_to_first_token"]["mean"], rel=1e-9)
    times = [r["info"]["response_metrics"]["output_token_times"] for r in rows]
    assert rec.metric("e2e_s", "max") == pytest.approx(max(t[-1] - r["start_time"] for t, r in zip(times, rows)))
    assert rec.metrics["itl_s"].n == sum(len(t) - 1 for t in times)
    assert rec.metric("e2e_s") < summ["request_latency"]["mean"]   # ours ends at the last token


def test_chunk_of_k_tokens_splits_its_gap():
    assert _gaps([0.0, 1.0, 1.0, 1.0, 1.5]) == [pytest.approx(1 / 3)] * 3 + [0.5]
    assert sum(_gaps([2.0, 2.4, 3.0, 3.0])) == pytest.approx(1.0)


def test_summary_and_open_loop_are_flagged(tmp_path):
    (rec,) = inference_perf.parse(SUMMARY).records
    assert "e2e_s" not in rec.metrics and "request_latency_s" in rec.metrics and rec.notes
    for f in (ROWS, DIR / "config.yaml"):
        shutil.copy(f, tmp_path / f.name)
    cfg = (tmp_path / "config.yaml").read_text()
    assert cfg.count("type: concurrent") == 1   # the load type; its stage has rate: 8.0
    (tmp_path / "config.yaml").write_text(cfg.replace("type: concurrent", "type: constant"))
    (rec,) = inference_perf.parse(tmp_path / ROWS.name).records
    assert rec.workload["load"] == "open" and rec.workload["request_rate"] == 8.0
    assert "ttft_s" not in rec.metrics and "ttft_from_send_s" in rec.metrics


def test_tokens_stamped_at_one_instant_mark_itl_client_limited(tmp_path):
    """inference-perf stamps each token; when a run's tokens arrive in pairs at one instant,
    half the raw gaps are 0: flagged, with the share counted from the raw timestamps."""
    src = DIR
    rows = json.loads((src / "per_request_lifecycle_metrics.json").read_text())
    raw = []
    for r in rows:
        t = r["info"]["response_metrics"]["output_token_times"]
        if t:
            t = [t[j - 1] if j % 2 else t[j] for j in range(len(t))]  # odd tokens at the even's time
            r["info"]["response_metrics"]["output_token_times"] = t
            raw += [b - a for a, b in zip(t, t[1:])] if not r.get("error") else []
    d = tmp_path / "report"
    d.mkdir()
    (d / "per_request_lifecycle_metrics.json").write_text(json.dumps(rows))
    (d / "config.yaml").write_text((src / "config.yaml").read_text())
    (rec,) = inference_perf.parse(d / "per_request_lifecycle_metrics.json").records
    share = sum(g == 0 for g in raw) / len(raw)
    assert share > 0.4
    assert rec.metrics["itl_s"].zero_gap_share == pytest.approx(share)
    assert rec.metrics["itl_s"].client_limited is True
    (real,) = inference_perf.parse(src / "per_request_lifecycle_metrics.json").records
    assert real.metrics["itl_s"].client_limited is False


def test_report_directory_keeps_inference_perf_figures():
    """The report directory as one unit: the per-request conversion, and inference-perf's own
    summary beside it (its TTFT median = numpy's median of first token − start per request)."""
    import numpy as np

    from llmbench.importers.registry import parse

    (rec,) = parse("auto", DIR).records
    rows = json.loads(ROWS.read_text())
    own = [r["info"]["response_metrics"]["output_token_times"][0] - r["start_time"] for r in rows
           if not r.get("error") and r["info"]["response_metrics"].get("output_token_times")]
    assert rec.tool_figures["ttft_s"].median == pytest.approx(float(np.median(own)))
    assert rec.tool_figures["ttft_s"].mean == pytest.approx(float(np.mean(own)))
    assert "end of the response" in rec.tool_figures["e2e_s"].label
    summary = json.loads(SUMMARY.read_text())["successes"]
    assert rec.tool_figures["output_throughput_tok_s"].mean == summary["throughput"]["output_tokens_per_sec"]
