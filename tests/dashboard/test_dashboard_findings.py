"""The findings view in the static report and the live dashboard (report/findings.py,
dashboard/findings.py), over the imported published data plus own records whose throughputs
and counters the test chose."""

import pytest

from tests.analysis.test_findings import REF, needs_ref, rec

pytestmark = needs_ref

# own records: batch scaling at in/out 2048 (counters: 80% beside 73% agree; 30% beside 64% not)
OWN = [dict(b=64, i=2048, o=2048, thr=9828.0, eff=0.73, dram=80.0),
       dict(b=1, i=2048, o=2048, thr=395.0, eff=0.64, dram=30.0)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from llmbench.importers.registry import import_path
    from llmbench.store.store import Store

    root = tmp_path_factory.mktemp("findings-store")
    import_path("llm-inference-bench", REF, root)
    st = Store(root)
    for kw in OWN:
        st.write(rec(**kw))
    return root


def test_report_sections(store):
    from llmbench.analysis.findings import FINDINGS
    from llmbench.report.html import _findings_sections

    (fk, _, fb), (ck, _, cb) = _findings_sections(store)
    assert fk == "findings" and ck == "counters"
    table = fb[0].table
    assert table.count("<tr class=''>") == len(FINDINGS)
    # batch 64 over 1: 24.9x against the data's 15.3x, contradicted; nothing at 1024: no part holds
    assert "Batch 64 vs batch 1 at in/out 2048" in table and "<td>contradicted</td>" in table
    assert "<td>untested</td>" in table        # TP/PP on 4 GPUs
    assert "26.6x at in/out 2048, as the data has it there: CONTRADICTED" in table
    # where the own records come from: rec() writes run "own", both sides in it
    assert "vLLM LLaMA-3-8B, in/out 2048: one run: own (" in table
    counters = cb[1].table
    assert "80%" in counters and "73%" in counters and "they agree" in counters
    assert "30%" in counters and "DISAGREE" in counters
    fig = cb[0].fig
    pts = [t for t in fig.data if t["mode"] == "markers"]  # a figures.Fig: plain dicts
    assert sorted(y for t in pts for y in t["y"]) == [30.0, 80.0]


@pytest.mark.browser
def test_dashboard_tab_renders_findings_and_counters(store):
    from dash_server import serve
    from playwright.sync_api import sync_playwright
    from report_browser import PLOT_DATA_JS, artifact, launch

    from llmbench.analysis.findings import FINDINGS

    with serve(store) as url, sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1600, "height": 1300})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.get_by_text("Findings", exact=True).click()
        page.wait_for_selector("#findings-table", timeout=120_000)
        rows = page.locator("#findings-table tbody tr")
        assert rows.count() == len(FINDINGS)
        verdicts = page.locator("#findings-table td.verdict").all_inner_texts()
        assert "contradicted" in verdicts and "untested" in verdicts
        assert set(verdicts) <= {"holds", "partly holds", "contradicted", "untested"}
        assert page.locator("#findings-table th", has_text="own records from").count() == 1
        page.wait_for_function("(document.querySelector('#counters-graph .js-plotly-plot') || {}).data")
        data = page.evaluate(PLOT_DATA_JS, "#counters-graph .js-plotly-plot")
        ys = sorted(y for t in data if t["name"] == "vllm" for y in t["y"])
        assert ys == [30.0, 80.0]
        page.screenshot(path=str(artifact("dashboard-findings.png")), full_page=True)
        assert errors == []
        browser.close()
