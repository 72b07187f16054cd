"""The dashboard's compare view: two runs (by run id) side by side, per-point change of every
shared metric with its 95% Welch interval and verdict (analysis/compare.py, the same code as
`llmbench compare`). Reads only the store."""

from __future__ import annotations

import os
from pathlib import Path

from dash import Input, Output, dcc, html

from llmbench.analysis.compare import compare
from llmbench.numfmt import fmt
from llmbench.store.store import Store


def run_ids(results: Path | str) -> list[str]:
    """The run directories that hold a record (a name ending in .json, as glob('*.json') sees
    it); listed with scandir, stopping at the first: globbing 1,000 runs cost 0.06 s of a page."""
    root = Path(results)
    if not root.is_dir():
        return []
    with os.scandir(root) as it:
        return sorted(e.name for e in it if e.is_dir() and _has_json(e.path))


def _has_json(d: str) -> bool:
    try:
        with os.scandir(d) as it:
            return any(e.name.endswith(".json") for e in it)
    except OSError:
        return False


def rows(results: Path | str, base: str | None, new: str | None, metric: str | None = None,
         all_metrics: bool = False) -> list[dict[str, str]]:
    """One row per point (its verdict metric, or every shared metric)."""
    if not base or not new:
        return []
    root = Path(results)
    cmp = compare(Store(root / base).records(), Store(root / new).records(), metric=metric)
    out = []
    for p in cmp.points:
        if p.refused:
            out.append({"point": p.label, "metric": "", "change": "", "95% CI": "",
                        "verdict": "not comparable: " + "; ".join(p.refused)})
            continue
        for c in p.changes if all_metrics else [c for c in p.changes if c.metric == p.primary]:
            ci = c.pct_ci
            out.append({"point": p.label, "metric": c.metric,
                        "base": fmt(c.base_mean), "new": fmt(c.new_mean),
                        "change": f"{c.pct:+.1f}%" if c.pct is not None else fmt(c.diff),
                        "95% CI": f"[{ci[0]:+.1f}%, {ci[1]:+.1f}%]" if ci else "",
                        "verdict": p.verdict if c.metric == p.primary else c.verdict})
    out += [{"point": f"only in {side}: {r.kind} {r.backend.name} {r.model.name}", "verdict": ""}
            for side, recs in (("base", cmp.only_base), ("new", cmp.only_new)) for r in recs]
    return out


COLUMNS = ("point", "metric", "base", "new", "change", "95% CI", "verdict")


def table(data: list[dict[str, str]]) -> html.Table:
    return html.Table([html.Thead(html.Tr([html.Th(c) for c in COLUMNS])),
                       html.Tbody([html.Tr([html.Td(r.get(c, "")) for c in COLUMNS]) for r in data])],
                      className="ranked", id="cmp-table")


def layout(results: Path | str) -> html.Div:
    ids = run_ids(results)
    opts = [{"label": i, "value": i} for i in ids]
    return html.Div([
        html.Div([html.Label("base run"), dcc.Dropdown(id="cmp-base", options=opts,
                                                        value=ids[0] if ids else None)]),
        html.Div([html.Label("new run"), dcc.Dropdown(id="cmp-new", options=opts,
                                                       value=ids[-1] if ids else None)]),
        dcc.Checklist(id="cmp-all", options=[{"label": "every shared metric", "value": "all"}], value=[]),
        html.Div(id="cmp-out"),
    ], className="compare")


def register(app, results: Path | str) -> None:
    @app.callback(Output("cmp-out", "children"), Input("cmp-base", "value"),
                  Input("cmp-new", "value"), Input("cmp-all", "value"))
    def _update(base, new, all_metrics):
        try:
            return table(rows(results, base, new, all_metrics="all" in (all_metrics or [])))
        except (OSError, ValueError) as e:
            return html.Div(f"cannot compare: {e}")
