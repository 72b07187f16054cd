"""The live dashboard in a real headless Chromium: loads, filters, finds the best configuration."""

import json

import pytest
from dash_server import serve
from report_browser import PLOT_DATA_JS, artifact, launch

pytestmark = pytest.mark.browser

def _filter_button(page, field):
    return page.locator(f"[id='{json.dumps({'field': field, 'type': 'filter'}, separators=(',', ':'))}']")


def _status(page):
    return page.locator("#status").inner_text()


def _wait_idle(page):
    page.wait_for_function("!document.querySelector('[data-dash-is-loading=\"true\"]')")


def choose(page, field, value):
    """Open a filter's dropdown and tick one value (Dash 4's listbox)."""
    _filter_button(page, field).click()
    page.locator("[role=listbox] [role=option]", has_text=value).first.click()
    page.keyboard.press("Escape")


@pytest.fixture(scope="module")
def page(fixture_store):
    from playwright.sync_api import sync_playwright

    with serve(fixture_store) as url, sync_playwright() as pw:
        browser = launch(pw)
        pg = browser.new_page(viewport={"width": 1440, "height": 950})
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(url)
        pg.wait_for_function("(document.querySelector('#graph .js-plotly-plot') || {}).data")
        pg.wait_for_function("(document.querySelector('#status') || {innerText: ''}).innerText.includes('points')")
        pg.errors = errors
        yield pg
        browser.close()


def test_loads_with_reference_and_own_data(page):
    counts = page.locator("#counts").inner_text()
    assert "reference" in counts and "own" in counts
    data = page.evaluate(PLOT_DATA_JS, "#graph .js-plotly-plot")
    measured = [t for t in data if t["x"] and "bound" not in (t["name"] or "")]
    # Opens on the user's own results (two engines, batch 1..8), not the published data.
    assert len(measured) >= 2 and all(len(t["x"]) == 4 for t in measured)
    assert all(t["name"].startswith("cpu-2core") for t in measured)
    assert "points" in _status(page)
    page.screenshot(path=str(artifact("dashboard-explore.png")))
    assert page.errors == []


def test_filter_changes_plotted_data(page):
    before = page.evaluate(PLOT_DATA_JS, "#graph .js-plotly-plot")
    status = _status(page)
    choose(page, "source", "reference")  # beside the own results it opened on
    page.wait_for_function(f"document.querySelector('#status').innerText != {json.dumps(status)}")
    _wait_idle(page)
    status = _status(page)
    choose(page, "hardware", "H100-SXM")
    page.wait_for_function(f"document.querySelector('#status').innerText != {json.dumps(status)}")
    _wait_idle(page)
    after = page.evaluate(PLOT_DATA_JS, "#graph .js-plotly-plot")
    names = {t["name"] for t in after if t["x"] and t["name"]} - {"roofline bound (dotted; click to toggle)"}
    assert names and all(n.startswith("H100-SXM") for n in names if not n.endswith("bound"))
    assert after != before
    page.screenshot(path=str(artifact("dashboard-filtered.png")))


def test_view_change_and_log_axis(page):
    page.locator("#view").click()
    page.locator("[role=listbox] [role=option]", has_text="Efficiency against the roofline").click()
    page.wait_for_function("document.querySelector('#graph .js-plotly-plot').data.some(t => t.type == 'box')")
    _wait_idle(page)
    layout = page.evaluate("document.querySelector('#graph .js-plotly-plot').layout.yaxis.type")
    assert layout == "log"
    boxes = page.evaluate("document.querySelector('#graph .js-plotly-plot').data.map(t => t.name)")
    assert any(b.endswith("(own)") for b in boxes) and "vllm" in boxes
    page.screenshot(path=str(artifact("dashboard-efficiency.png")))


def test_best_configuration_finder_ranks(page):
    page.get_by_text("Best configuration", exact=True).click()
    page.wait_for_selector("#b-table table tbody tr")
    rows = page.locator("#b-table table tbody tr")
    assert rows.count() >= 5
    first = rows.nth(0).locator("td").all_inner_texts()
    second = rows.nth(1).locator("td").all_inner_texts()
    assert first[0] == "1" and second[0] == "2"
    thr = [float(r.split("±")[0].replace(",", "")) for r in
           page.locator("#b-table tbody tr td:nth-child(6)").all_inner_texts()]
    assert thr == sorted(thr, reverse=True)
    assert page.locator("#b-table tbody tr.pareto").count() >= 1
    # An SLO narrows the table.
    n = rows.count()
    page.locator("#b-ttft").fill("0.1")
    page.locator("#b-ttft").press("Enter")
    page.wait_for_function(f"document.querySelectorAll('#b-table tbody tr').length != {n}")
    assert 1 <= page.locator("#b-table tbody tr").count() < n
    page.locator("#b-ttft").fill("")
    page.locator("#b-ttft").press("Enter")
    page.wait_for_function(f"document.querySelectorAll('#b-table tbody tr').length == {n}")
    page.screenshot(path=str(artifact("dashboard-best.png")), full_page=True)
    assert page.errors == []
