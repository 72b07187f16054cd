"""The dashboard's Fidelity tab: speed-up against fidelity to the fp32 reference, one marker per
configuration, and the table beside it (laid out by report/fidelity.py, as in the static report).
Computed from the store's current data when the tab is shown."""

from __future__ import annotations

from dash import Input, Output, dcc, html
from dash.exceptions import PreventUpdate

from llmbench.report import fidelity as fid


def layout() -> html.Div:
    return html.Div([
        html.P("Each configuration measured with `llmbench run --fidelity N`: its output throughput "
               "relative to transformers fp32 on the same hardware, model and shape (or to the "
               "fastest where the store has no such record), against how often its greedy tokens "
               "match the fp32 reference's, or its mean KL divergence from it (docs/fidelity.md).",
               className="help"),
        dcc.RadioItems(id="fidelity-y", value="match", inline=True,
                       options=[{"label": " tokens matching", "value": "match"},
                                {"label": " KL divergence", "value": "kl"}]),
        dcc.Graph(id="fidelity-graph"),
        html.Div(id="fidelity-table", className="tablewrap"),
    ], className="findings-tab")


def content(df, y: str) -> tuple[dict, html.Table | html.P]:
    rows = fid.fidelity_rows(df)
    fig = fid.speedup_fidelity_figure(rows, y=y, height=470).to_dict()
    trs = fid.table_rows(rows) if not rows.empty else []
    if not trs:
        return fig, html.P("No record carries fidelity metrics yet.", className="help")
    cols = list(trs[0])
    return fig, html.Table([html.Thead(html.Tr([html.Th(c) for c in cols])),
                            html.Tbody([html.Tr([html.Td(v) for v in r.values()]) for r in trs])],
                           className="ranked")


def register(app, source) -> None:
    @app.callback(Output("fidelity-graph", "figure"), Output("fidelity-table", "children"),
                  Input("tabs", "value"), Input("fidelity-y", "value"), Input("version", "data"))
    def _show(tab, y, _v):
        if tab != "fidelity":
            raise PreventUpdate
        return content(source.data.df, y or "match")
