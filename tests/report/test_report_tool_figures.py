"""The report shows an imported tool's own headline figures beside llmbench's: guidellm's and
AIPerf's medians, recomputed here from the tools' own per-request fields, beside llmbench's
scheduled-send medians, the difference and why (the other client's dispatch delay)."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

from llmbench.numfmt import fmt  # noqa: E402
from llmbench.report import data as data_mod  # noqa: E402
from llmbench.report.tables import tool_figures_table  # noqa: E402

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


def _store(tmp_path, bunched=False):
    from llmbench.cli import main

    store = tmp_path / "store"
    aiperf_dir = TOOLS / "aiperf"
    if bunched:  # AIPerf read its stream three chunks at a time (zeros between)
        aiperf_dir = tmp_path / "artifacts"
        aiperf_dir.mkdir()
        rows = [json.loads(x) for x in (TOOLS / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
        for r in rows:
            g = r["metrics"]["inter_chunk_latency"]["value"]
            r["metrics"]["inter_chunk_latency"]["value"] = [
                x for i in range(0, len(g), 3) for x in [sum(g[i:i + 3])] + [0.0] * (len(g[i:i + 3]) - 1)]
        (aiperf_dir / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (aiperf_dir / "profile_export_aiperf.json").write_text(
            (TOOLS / "aiperf" / "profile_export_aiperf.json").read_text())
    for path in (TOOLS / "guidellm-benchmarks.json", aiperf_dir):
        assert main(["import", "auto", str(path), "--results", str(store)]) in (0, None)
    return store


def test_tool_figures_table_sets_the_tools_medians_beside_ours(tmp_path):
    rows = tool_figures_table(data_mod.load(_store(tmp_path)).df)
    g = {r["figure"]: r for r in rows if r["tool"] == "guidellm"}
    doc = json.loads((TOOLS / "guidellm-benchmarks.json").read_text())
    req = doc["benchmarks"][0]["requests"]["successful"]
    own = np.array([r["time_to_first_token_ms"] for r in req]) / 1e3
    sched = own + np.array([r["request_dispatch_delay"] for r in req])
    theirs, ours = np.percentile(own, 50, method="inverted_cdf"), np.median(sched)
    assert g["ttft_s"]["tool's median"] == fmt(float(theirs))
    assert g["ttft_s"]["llmbench"] == f"{fmt(float(ours))} (ttft_s)"
    assert g["ttft_s"]["difference"] == fmt(float(ours - theirs))
    assert "dispatch delay" in g["ttft_s"]["what differs"]
    # guidellm holds no gaps: its ITL stands alone
    assert g["itl_s"]["llmbench"] == "–"
    a = {r["figure"]: r for r in rows if r["tool"] == "aiperf"}
    arows = [json.loads(x) for x in (TOOLS / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    a_own = [r["metrics"]["time_to_first_token"]["value"] / 1e3 for r in arows]
    assert a["ttft_s"]["tool's median"] == fmt(float(np.percentile(a_own, 50)))
    assert a["itl_s"]["llmbench"].endswith("(itl_per_chunk_s)")  # not bunched: no mark


def test_bunched_itl_is_marked_and_the_report_has_the_section(tmp_path):
    from llmbench.report.html import write_report

    store = _store(tmp_path, bunched=True)
    a = {r["figure"]: r for r in tool_figures_table(data_mod.load(store).df) if r["tool"] == "aiperf"}
    assert a["itl_s"]["llmbench"] == f"{fmt(0.0)} (itl_per_chunk_s) client-limited"
    arows = [json.loads(x) for x in (TOOLS / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    per_request = [r["metrics"]["inter_token_latency"]["value"] / 1e3 for r in arows]
    assert a["itl_s"]["tool's median"] == fmt(float(np.median(per_request)))
    page = write_report(store, tmp_path / "out", png=False).html.read_text()
    assert "Imported tools: their figures beside llmbench" in page and "client-limited" in page
    assert "dispatch delay" in page
