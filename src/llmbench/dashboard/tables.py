"""The dashboard's Tables tab: every kind of record, and each request shape of the serving
records, under its own headline metrics (the catalog's: metrics.headline), laid out by the
report's kind tables (report/tables.py), so both show the same numbers. Computed from the
store's current data when the tab is shown."""

from __future__ import annotations

from dash import Input, Output, dcc, html
from dash.exceptions import PreventUpdate

from llmbench.report import tables

KINDS = ("serving", "inference", "perplexity", "training")


def layout() -> html.Div:
    return html.Div([
        html.P("One table per record kind, and per request shape of serving points (text, "
               "structured, tools, embeddings, rerank, lora, ...): each under its own headline "
               "metrics; a pooling shape's points show inputs/s and latency, never an empty TTFT.",
               className="help"),
        dcc.RadioItems(id="tables-source", value="own", inline=True,
                       options=[{"label": " own ", "value": "own"},
                                {"label": " reference ", "value": "reference"},
                                {"label": " estimates", "value": "estimate"}]),
        html.Div(id="tables-content"),
    ], className="findings-tab")


def sections(df, source: str) -> list[tuple[str, list[dict[str, str]], str]]:
    """(title, rows, note) of each kind's and shape's table of one source's records."""
    d = df[df["source"] == source] if not df.empty else df
    if d.empty:
        return []
    return [(title, rows, note) for kind in KINDS for _, title, rows, note in tables.kind_tables(d, kind)]


def content(df, source: str) -> list:
    found = sections(df, source)
    if not found:
        return [html.P(f"No {source} record of a tabled kind in the store.", className="help")]
    out = []
    for title, rows, note in found:
        cols = [c for c in rows[0] if any(r[c] not in ("", "–") for r in rows)]
        out += [html.H4(title, className="side-h"), html.P(note, className="help"),
                html.Div(html.Table([html.Thead(html.Tr([html.Th(c) for c in cols])),
                                     html.Tbody([html.Tr([html.Td(r[c]) for c in cols]) for r in rows])],
                                    className="ranked"), className="tablewrap")]
    return out


def register(app, source) -> None:
    @app.callback(Output("tables-content", "children"), Input("tabs", "value"),
                  Input("tables-source", "value"), Input("version", "data"))
    def _show(tab, src, _v):
        if tab != "tables":
            raise PreventUpdate
        return content(source.data.df, src or "own")
