"""A screenshot of one dashboard tab over a store, for the docs (Debian's chromium through
Playwright, as the browser tests run it; nothing downloaded):

    python tests/dashboard/screenshot.py RESULTS TAB_LABEL OUT.png [--width 1500] [--height 1250] [--wait-ms 2500]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "report"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("tab", help="the tab's label, e.g. Predictions")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1500)
    ap.add_argument("--height", type=int, default=1250)
    # a store of thousands of records (the study imported) draws its figure later than 2.5 s
    ap.add_argument("--wait-ms", type=int, default=2500)
    a = ap.parse_args()
    from dash_server import serve
    from playwright.sync_api import sync_playwright
    from report_browser import launch

    with serve(a.results) as url, sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": a.width, "height": a.height})
        page.goto(url)
        page.get_by_text(a.tab, exact=True).click()
        page.wait_for_timeout(1500)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        page.wait_for_timeout(a.wait_ms)   # the callbacks' figure drawn, not the first empty frame
        page.screenshot(path=a.out, full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
