"""PNG export of the report's figures through Kaleido (Plotly's own exporter), driving the
system's Chromium: Kaleido 1.x needs a Chrome-family browser and never downloads one here.
The browser is found as $LLMBENCH_CHROMIUM, $BROWSER_PATH, or `chromium` / `chromium-browser` /
`google-chrome` on PATH. Plotly.js comes from the installed plotly package and MathJax is off,
so the export works with no network at all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from llmbench.report.figures import Fig



def find_chromium() -> str | None:
    for env in ("LLMBENCH_CHROMIUM", "BROWSER_PATH"):
        p = os.environ.get(env)
        if p and Path(p).exists():
            return p
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if p := shutil.which(name):
            return p
    return None


def write_pngs(figs: dict[str, Fig], out_dir: Path, width: int = 1100,
               scale: float = 1.5) -> tuple[list[Path], str | None]:
    """Write every figure as <name>.png; returns the paths, or [] and the reason none could be
    written."""
    browser = find_chromium()
    if browser is None:
        return [], "no Chromium found (apt-get install chromium, or set LLMBENCH_CHROMIUM)"
    try:
        import kaleido
    except ImportError:
        return [], "kaleido is not installed (pip install 'llmbench[dashboard]')"
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = []
    paths = []
    for name, fig in figs.items():
        p = out_dir / f"{name}.png"
        h = fig.layout.get("height") or 520
        specs.append({"fig": fig.to_dict(), "path": p, "opts": {"format": "png", "width": width,
                                                      "height": h, "scale": scale}})
        paths.append(p)
    # Chromium as root refuses to start without --no-sandbox; kaleido passes it through.
    os.environ.setdefault("BROWSER_PATH", browser)
    try:
        kaleido.write_fig_from_object_sync(
            specs, kopts={"path": browser, "mathjax": False, "n": min(4, max(1, len(specs)))})
    except Exception as e:  # a broken browser must not cost the HTML report
        return [p for p in paths if p.exists()], f"PNG export failed: {type(e).__name__}: {e}"
    return paths, None
