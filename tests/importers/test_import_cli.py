"""`llmbench import llm-inference-bench` end to end on the fixtures: records in the store, the
counts printed, a re-import replacing (not doubling) the records, the claims helper on top."""

import json
from pathlib import Path

from typer.testing import CliRunner

from llmbench.cli import app
from llmbench.store.store import Store

FIX = Path(__file__).parent / "fixtures" / "lib"
TOOLS = Path(__file__).parents[1] / "fixtures" / "tools"


def test_import_writes_records_and_prints_counts(tmp_path):
    res = tmp_path / "res"
    r = CliRunner().invoke(app, ["import", "llm-inference-bench", str(FIX), "--results", str(res)])
    assert r.exit_code == 0, r.output
    assert "rows read: 32" in r.output and "imported: 30 records" in r.output
    assert "flagged:" in r.output and "quant_all_results.csv:4" in r.output
    store = Store(res)
    recs = store.records()
    assert len(recs) == 30 and {x.kind for x in recs} == {"reference"}
    assert sum(x.roofline.bound is not None for x in recs) == 29  # all but the unknown model
    rows = store.query("backend = 'llamacpp'").fetchall()
    assert len(rows) == 1
    # the in_files column exists although the first record lacks most optional fields
    assert store.query("in_files LIKE '%Best%'").fetchall()

    again = CliRunner().invoke(app, ["import", "llm-inference-bench", str(FIX), "--results", str(res)])
    assert again.exit_code == 0 and "replaced 30 records" in again.output
    assert len(Store(res).records()) == 30

    doc = json.loads(next((res / "llm-inference-bench").glob("*.json")).read_text())
    assert doc["run_id"] == "llm-inference-bench" and doc["sources"]


def test_import_rejects_a_dir_without_csv(tmp_path):
    r = CliRunner().invoke(app, ["import", "llm-inference-bench", str(tmp_path)])
    assert r.exit_code != 0


def test_claims_run_on_the_imported_fixtures(tmp_path):
    from llmbench.analysis.claims import CLAIMS, run
    from llmbench.importers.registry import import_path

    import_path("llm-inference-bench", FIX, tmp_path)
    text = run(tmp_path, show_sql=True)
    for c in CLAIMS:
        assert f"### {c.name}:" in text
    above = run(tmp_path, ["above-roofline"])
    assert "llama-7b" in above and "True" in above  # the GH200 context-overflow row
    tp = run(tmp_path, ["tp-pp-hybrid"])
    assert "(0 rows)" in tp  # the fixtures hold no TP row to compare against


def test_results_table_shows_a_client_limited_itl(tmp_path):
    """An imported run whose ITL the tool's client bunched says so in `llmbench results`."""
    rows = [json.loads(x) for x in (TOOLS / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    for r in rows:  # AIPerf read every chunk of the stream at once after the first
        g = r["metrics"]["inter_chunk_latency"]["value"]
        r["metrics"]["inter_chunk_latency"]["value"] = [sum(g)] + [0.0] * (len(g) - 1)
    d = tmp_path / "artifacts"
    d.mkdir()
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = tmp_path / "res"
    assert CliRunner().invoke(app, ["import", "auto", str(d), "--results", str(res)]).exit_code == 0
    r = CliRunner().invoke(app, ["results", "--results", str(res)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "ITL client-limited" in r.output and "true" in r.output
    assert "label" not in r.output  # the tool figures' labels are outcomes, not columns
