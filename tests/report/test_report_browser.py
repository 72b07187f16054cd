"""The static report in a real headless Chromium with the network off."""

import re
import subprocess
import sys

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

from report_browser import PLOT_DATA_JS, artifact, launch

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report_dir(fixture_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    r = subprocess.run([sys.executable, "-m", "llmbench", "report", "--results", str(fixture_store),
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("index.html")  # the path is what stdout carries
    return out


def test_report_is_self_contained(report_dir):
    html = (report_dir / "index.html").read_text()
    # No external script, style or image (plotly.js's own source names a CDN for geo maps).
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html)
    assert "Plotly.newPlot" in html and len(html) > 3_000_000  # plotly.js inlined


def test_report_pngs_come_from_the_same_figures(report_dir):
    pngs = sorted((report_dir / "figures").glob("*.png"))
    names = {p.stem for p in pngs}
    assert {"best-own", "best-reference", "own-batch", "reference-batch", "efficiency"} <= names
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_report_renders_offline(report_dir):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        ctx = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
        requests, errors = [], []
        ctx.route("**/*", lambda route: (requests.append(route.request.url), route.abort())
                  if not route.request.url.startswith("file:") else route.continue_())
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((report_dir / "index.html").as_uri())
        n_fig = page.locator("div.fig").count()
        page.wait_for_function(f"document.querySelectorAll('.fig.js-plotly-plot .main-svg').length >= {n_fig}")
        assert n_fig >= 10
        data = page.evaluate(PLOT_DATA_JS, "#fig-reference-batch")
        assert data and sum(len(t["x"]) for t in data) >= 8
        assert page.locator("#best-reference table tbody tr").count() >= 5
        page.screenshot(path=str(artifact("report-top.png")))
        page.locator("#reference-batch").screenshot(path=str(artifact("report-reference-batch.png")))
        page.screenshot(path=str(artifact("report-full.png")), full_page=True)
        browser.close()
    assert requests == [] and errors == []
