"""The dashboard over the real published data, imported by `llmbench import llm-inference-bench`."""

import subprocess
import sys
from pathlib import Path

import pytest
from dash_server import serve
from report_browser import PLOT_DATA_JS, artifact, launch

pytestmark = pytest.mark.browser

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "llm-inference-bench"
if not REF.is_dir():
    REF = Path("/work/shared/reference/llm-inference-bench")


@pytest.mark.slow
def test_dashboard_over_the_imported_published_data(tmp_path):
    if not REF.is_dir():
        pytest.skip(f"the published LLM-Inference-Bench data is not at {REF}")
    r = subprocess.run([sys.executable, "-m", "llmbench", "import", "llm-inference-bench", str(REF),
                        "--results", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from playwright.sync_api import sync_playwright

    with serve(tmp_path) as url, sync_playwright() as pw:
        browser = launch(pw)
        pg = browser.new_page(viewport={"width": 1440, "height": 950})
        pg.goto(url)
        pg.wait_for_function("(document.querySelector('#status') || {innerText: ''}).innerText.includes('points')")
        pg.wait_for_function("(document.querySelector('#graph .js-plotly-plot') || {}).data")
        data = pg.evaluate(PLOT_DATA_JS, "#graph .js-plotly-plot")
        assert sum(len(t["x"]) for t in data if t["x"]) >= 10
        assert "reference" in pg.locator("#counts").inner_text()
        pg.screenshot(path=str(artifact("dashboard-published-data.png")))
        pg.get_by_text("Best configuration", exact=True).click()
        pg.wait_for_selector("#b-table table tbody tr")
        assert pg.locator("#b-table tbody tr").count() >= 10
        pg.screenshot(path=str(artifact("dashboard-published-best.png")), full_page=True)
        browser.close()
