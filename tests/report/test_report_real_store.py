"""The report, findings and results over a store like the committed H200 one (issue 44): GPU
counters, throttling, serving, training, failed records (a handful copied from results/h200)
beside the study imported from ../shared/reference (read there, never copied). Each check is
what a reader needs, its answer computed from the record files themselves."""

from __future__ import annotations

import json
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
from tests.conftest import cli

from llmbench.cli import main

pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")


ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "results" / "h200"
STUDY = ROOT.parent / "shared" / "reference" / "llm-inference-bench"
if not STUDY.is_dir():  # a worktree sits one level deeper than the checkout beside shared/
    STUDY = Path("/work/shared/reference/llm-inference-bench")
# Chosen for what they hold: attention backends efficient vs flash (training, counters,
# throttled), sparsity 2:4 vs none (training), counters and throttling (vLLM), a failed
# inference and a failed training point, transformers points whose compile and short-energy
# flags agree row for row, five serving loads.
PICKED = ["20261202T135531Z-a52dd2", "20261130T085834Z-43015b", "20261202T043415Z-fd0a3d",
          "20261202T044239Z-5d8870", "20261202T135239Z-3bc19b", "20261130T082101Z-cb8f04",
          "20261130T082101Z-e1f539", "20261201T211957Z-601f5e"]


def _docs(store: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(store.rglob("*.json"))]


@pytest.fixture(scope="module")
def own(tmp_path_factory) -> Path:
    """The copied own records only."""
    if not STUDY.is_dir():
        pytest.skip(f"the study's data is not at {STUDY}")
    root = tmp_path_factory.mktemp("own")
    for run in PICKED:
        shutil.copytree(H200 / run, root / run)
    return root


@pytest.fixture(scope="module")
def store(own, tmp_path_factory) -> Path:
    """The own records plus the study, imported by llmbench's importer."""
    root = tmp_path_factory.mktemp("store")
    shutil.copytree(own, root, dirs_exist_ok=True)
    try:
        main(["import", "llm-inference-bench", str(STUDY), "--results", str(root)])
    except SystemExit as e:
        assert e.code in (0, None)
    return root


@pytest.fixture(scope="module")
def report(store, tmp_path_factory):
    from llmbench.report.html import write_report

    return write_report(store, tmp_path_factory.mktemp("rep"), png=False)


def _tables(page: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Each block's table: its headers and cell texts, by the block's anchor."""
    import html

    out = {}
    for anchor, body in re.findall(r"<section class='block' id='([^']+)'>(.*?)</section>", page, re.S):
        if "<table" not in body:
            continue
        head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
        rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
                for tr in re.findall(r"<tr class='[^']*'>(.*?)</tr>", body, re.S)]
        out[anchor] = (head, rows)
    return out


# -- 1. PNGs: every figure of the report is of the one figure type -------------------------------
def test_png_export_takes_the_counters_figure(store, tmp_path, monkeypatch):
    from llmbench.report.figures import Fig
    from llmbench.report.html import write_report

    written = []

    def fake_export(specs, kopts):  # Kaleido's call: one spec per figure, a dict figure each
        for s in specs:
            assert isinstance(s["fig"], dict) and "data" in s["fig"]
            written.append((Path(s["path"]).stem, s["opts"]["height"]))
            Path(s["path"]).write_bytes(b"\x89PNG\r\n\x1a\n")

    monkeypatch.setitem(sys.modules, "kaleido", types.SimpleNamespace(write_fig_from_object_sync=fake_export))
    monkeypatch.setenv("LLMBENCH_CHROMIUM", sys.executable)  # any file: the fake never starts it
    rep = write_report(store, tmp_path / "rep", png=True)
    assert rep.notes == []
    assert all(isinstance(f, Fig) for f in rep.figures.values())
    assert ("counters-fig", 460) in written  # its own height, read from its layout
    assert {p.stem for p in rep.pngs} == set(rep.figures)


# -- 2. report --reference ------------------------------------------------------------------------
def test_report_reads_the_study_from_reference(own, tmp_path, capsys):
    code, text = cli(["report", "--results", str(own), "--reference", str(STUDY), "--no-png",
                      "--out", str(tmp_path / "rep")], capsys)
    assert code == 0, text
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Finding by finding" in page and "no study records" not in page
    code, text = cli(["report", "--results", str(own), "--reference", str(tmp_path / "none"),
                      "--no-png", "--out", str(tmp_path / "rep2")], capsys)
    assert code == 2 and "--reference" in text and "is not a directory" in text


# -- 3. a name that matches nothing says the nearest, exit 2 -------------------------------------
def test_findings_hardware_that_matches_nothing(own, store, capsys):
    hardware = {d["hardware"]["name"] for d in _docs(own)}
    assert hardware == {"NVIDIA H200"}
    code, text = cli(["findings", "--results", str(store), "--hardware", "H200"], capsys)
    assert code == 2
    assert "no records for hardware 'H200'" in text and "did you mean 'NVIDIA H200'" in text
    code, text = cli(["findings", "--results", str(store), "--hardware", "NVIDIA H200"], capsys)
    assert code == 0 and "NVIDIA H200" in text


@pytest.mark.parametrize("argv, said", [
    (["results", "--sort", "batch_sise"], "did you mean batch_size"),
    (["results", "--columns", "modle"], "model?"),
    (["results", "--where", "hardwre = 'x'"], 'did you mean "hardware"'),
    (["compare", "20261202T135531Z-a52dd", "20261130T085834Z-43015b"],
     "did you mean '20261202T135531Z-a52dd2'"),
    (["compare", "20261202T135531Z-a52dd2", "20261202T135531Z-a52dd2", "--metric", "tflop"],
     "did you mean 'tflops'"),
    (["roofline", "--model", "llama-3-8", "--hardware", "H200"], "did you mean 'llama-3-8b'"),
    (["roofline", "--model", "llama-3-8b", "--hardware", "H20"], "did you mean H200"),
])
def test_every_typed_name_gets_did_you_mean(store, capsys, argv, said):
    if argv[0] in ("results", "compare"):
        argv = argv + ["--results", str(store)]
    code, text = cli(argv, capsys)
    assert code == 2 and said in text, text


def test_sort_suggests_a_metrics_mean_and_median_first(store, capsys):
    code, text = cli(["results", "--results", str(store), "--sort=-output_throughput"], capsys)
    assert code == 2
    assert "did you mean output_throughput_tok_s_mean, output_throughput_tok_s_median" in text
    assert "_n," not in text and "_std" not in text


# -- 6. tables that tell their rows apart, numbers by the catalog's units --------------------------
def test_results_never_merges_two_flags_into_one_header(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    code, text = cli(["results", "--results", str(store), "--where", "backend='transformers'"],
                     capsys)
    assert code == 0
    header = next(line for line in text.splitlines() if "compile" in line)
    assert "compile/" not in header and "/energy" not in header


def test_training_table_shows_what_tells_its_rows_apart(report):
    page = report.html.read_text()
    head, rows = _tables(page)["own-table-training"]
    col = {h: i for i, h in enumerate(head)}
    # the two records of one run that differ only in the attention backend
    recs = {d["workload"]["attn_backend"]: d for d in _docs(H200 / "20261202T135531Z-a52dd2")}
    assert set(recs) == {"efficient", "flash"}
    for backend, d in recs.items():
        tflops = d["metrics"]["tflops"]["mean"]
        row = next(r for r in rows if r[col["TFLOP/s"]] == f"{tflops:.3g}")
        assert f"attn backend {backend}" in row[col["settings"]]
        assert row[col["MFU"]] == f"{100 * d['metrics']['mfu']['mean']:.1f}%"
        assert row[col["DRAM %"]] == f"{round(d['hardware_counters']['dram_bw_util_pct'])}%"
        assert "throttled" in row[col["flags"]]
        assert row[col["measured"]] == d["created_at"][:10]
    # sparsity 2:4 against none, one run
    sparse = next(r for r in rows if "sparsity 2:4" in r[col["settings"]])
    assert sparse[col["measured"]] == "2026-11-30"
    # no two rows alike in everything but their numbers
    words = [tuple(r[col[h]] for h in head if h in ("hardware · engine", "model", "settings",
                                                     "flags", "roofline v", "measured")) for r in rows]
    assert len(set(words)) == len(words)
    # no raw float and no counter as a setting
    assert "gpu dram" not in " ".join(head) and not any(
        re.fullmatch(r"\d+\.\d{5,}", c) for r in rows for c in r)


def test_every_table_number_is_formatted_by_its_unit(report):
    from llmbench.metrics import column_header, format_value, shown_first

    header_of = {column_header(c): c for c in shown_first(("inference", "serving", "training",
                                                            "perplexity"))}
    for anchor, (head, rows) in _tables(report.html.read_text()).items():
        for i, h in enumerate(head):
            if h not in header_of:
                continue
            unit_pct = h.endswith("%") or h in ("MFU", "scaling eff.") or h.startswith("efficiency")
            for r in rows:
                v = r[i]
                assert v == "–" or (v.endswith("%") if unit_pct else re.fullmatch(r"[\d,.e+-]+", v)), \
                    (anchor, h, v)
    assert format_value("gpu_dram_bw_util_pct", 30.861868164819207) == "31%"


def test_kind_tables_and_results_take_their_metrics_from_the_catalog(store, monkeypatch):
    from llmbench import metrics
    from llmbench.cli import results as results_cli
    from llmbench.report import data, tables

    assert not hasattr(results_cli, "METRIC_COLUMNS") and not hasattr(tables, "KIND_METRICS")
    df = data.load(store).df
    monkeypatch.setitem(metrics.SHOWN_FIRST, "training", ("step_time_s_mean",))
    rows, _ = tables.kind_table(df, "training")
    shown = [h for h in rows[0] if metrics.column_header(h) or h in ("step s", "TFLOP/s", "MFU")]
    assert "step s" in rows[0] and "TFLOP/s" not in rows[0] and "MFU" not in rows[0], shown


def test_header_counts_flagged_points_instead_of_listing_keys(report):
    page = report.html.read_text()
    header = page[page.index("<header>"):page.index("</header>")]
    assert not re.search(r"\b[0-9a-f]{16}\b", header)
    n = sum(1 for run in PICKED for d in _docs(H200 / run)
            if (d.get("hardware_counters") or {}).get("throttled"))
    assert f"{n} point(s) were measured while the GPU throttled its clocks" in header


def test_counter_checks_agree_with_the_numbers_they_show(report):
    from llmbench.analysis.findings import COUNTER_GAP

    head, rows = _tables(report.html.read_text())["counters-table"]
    col = {h: i for i, h in enumerate(head)}
    assert rows
    for r in rows:
        eff, dram = r[col["roofline efficiency"]], r[col["DRAM util"]]
        if "-" in (eff, dram):
            continue
        gap = float(dram.rstrip("%")) - float(eff.rstrip("%"))
        agree = "they agree" in r[col["check"]]
        # the shown values are rounded to whole percents: a gap within a point of the line is either
        if abs(abs(gap) - 100 * COUNTER_GAP) > 1:
            assert agree == (abs(gap) <= 100 * COUNTER_GAP), r


# -- in a browser: no table wider than its card ---------------------------------------------------
@pytest.mark.browser
def test_no_table_is_wider_than_its_card(report):
    from report_browser import artifact, launch
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(report.html.as_uri())
        page.wait_for_selector("section.block table")
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('section.block'))
            .flatMap(s => [s, ...s.querySelectorAll('.tablewrap')]
              .filter(e => e.scrollWidth > e.clientWidth + 1)
              .map(e => [s.id, e.className, e.scrollWidth, e.clientWidth]))""")
        page.screenshot(path=str(artifact("report-real-store.png")), full_page=True)
        browser.close()
    assert wide == []
