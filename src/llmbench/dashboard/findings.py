"""The dashboard's Findings tab: the study's findings re-tested on the own hardware, and the GPU's
counters beside the roofline (laid out by report/findings.py, as in the static report). Computed
when the tab is opened (a few seconds over the whole store), never on page load."""

from __future__ import annotations

from pathlib import Path

from dash import Input, Output, dcc, html
from dash.exceptions import PreventUpdate

from llmbench.report import findings as fv


def layout(results: Path | str) -> html.Div:
    return html.Div([
        html.P("Each finding of LLM-Inference-Bench: the published figure, the same quantity from the "
               "study's data and from your records (each against its own hardware's roofline), each "
               "part of the claim with its outcome, the verdict that follows from the parts (holds, partly "
               "holds, contradicted, untested), and the run(s) your records come from. Below: every GPU record's roofline efficiency beside the DRAM utilisation the "
               "GPU itself measured (NVML GPM).", className="help"),
        dcc.Loading(html.Div(id="findings-out", children=html.P("open this tab to compute", className="help"))),
    ], className="findings-tab")


def _verdict_cell(v: str) -> html.Td:
    return html.Td(html.B(v), className=f"verdict {fv.VERDICT_CLASS.get(v, '')}")


def content(results: Path | str, reference: Path | str | None = None) -> list:
    fs, why = fv.compute(results, reference)
    out: list = []
    if fs is None:
        out.append(html.P(why, className="help", id="findings-empty"))
    else:
        rows = fv.findings_rows(fs)
        cols = list(rows[0]) if rows else []
        out.append(html.Table([html.Thead(html.Tr([html.Th(c) for c in cols])),
                               html.Tbody([html.Tr([_verdict_cell(v) if c == "verdict" else html.Td(v)
                                                    for c, v in r.items()]) for r in rows])],
                              className="ranked findings", id="findings-table"))
    rows = fv.own_counter_rows(results)
    c_rows = fv.counter_rows(rows)
    out.append(html.H3("Hardware counters beside the roofline"))
    out.append(dcc.Graph(id="counters-graph", figure=fv.counters_figure(rows).to_dict()))
    if c_rows:
        cols = list(c_rows[0])
        # in a scrolling box: its last column ran past the card's edge at 1500 px (issue 54)
        out.append(html.Div(html.Table([html.Thead(html.Tr([html.Th(c) for c in cols])),
                                        html.Tbody([html.Tr([html.Td(v) for v in r.values()])
                                                    for r in c_rows])],
                                       className="ranked counters"),
                            className="tablewrap", id="counters-table"))
    else:
        out.append(html.P("No own GPU record carries hardware counters yet.", className="help"))
    return out


def register(app, results: Path | str, reference: Path | str | None = None) -> None:
    @app.callback(Output("findings-out", "children"), Input("tabs", "value"), Input("version", "data"))
    def _show(tab, _v):
        if tab != "findings":
            raise PreventUpdate
        return content(results, reference)
