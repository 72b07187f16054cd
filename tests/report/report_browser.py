"""Headless Debian Chromium through Playwright (never a downloaded browser), for the report and
dashboard tests. Skips, with the reason, when chromium or playwright is absent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium chromium-driver)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (pip install 'llmbench[test]')")
    return path


def launch(pw):
    return pw.chromium.launch(executable_path=chromium_path(), args=ARGS)


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


# The plotted data of a dcc.Graph / Plotly div, as JSON-able lists.
PLOT_DATA_JS = """sel => { const gd = document.querySelector(sel);
  if (!gd || !gd.data) return null;
  return gd.data.map(t => ({name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []),
                            visible: t.visible})); }"""
