"""The dashboard's Predictions tab: for a chosen configuration, the stored estimates of
`llmbench predict --save` as a dashed curve against batch size with their 90% interval, beside
the measured points of the same configuration and the ratio predicted / measured (laid out by
report/predictions.py, as in the static report). Computed when the tab is shown."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from llmbench.report import figures
from llmbench.report import predictions as pred

HELP = ("ESTIMATE: predictions stored by `llmbench predict --save` (roofline bound x an efficiency "
        "learned from the study, or anchored on your own records with --anchor; the table says "
        "which; docs/predict.md), never measurements: dashed, their 90% interval shaded. Beside them the measured records of the same model, engine, hardware, dtype and "
        "lengths (own: filled circles; the study's: open squares), and predicted / measured.")


def layout() -> html.Div:
    return html.Div([
        html.P(HELP, className="help"),
        html.Div([
            html.Div(dcc.Dropdown(id="pred-config", clearable=False, placeholder="configuration"),
                     style={"flex": "3"}),
            dcc.RadioItems(id="pred-metric", value=pred.METRICS[0], inline=True,
                           options=[{"label": " " + figures.label(m), "value": m} for m in pred.METRICS]),
        ], className="row2"),
        dcc.Graph(id="pred-graph", style={"height": "520px"}),
        html.Div(id="pred-note", className="status"),
        html.Div(id="pred-table", className="tablewrap"),
    ], className="findings-tab")


def options(df) -> tuple[list[dict], int | None]:
    """The configurations some estimate predicts (those with measurements first), by index."""
    cfgs = pred.configurations(df)
    opts = [{"label": c["label"] + ("" if c["measured"] else " (no measurement)"), "value": i}
            for i, c in enumerate(cfgs)]
    return opts, (opts[0]["value"] if opts else None)


def fill_command(results) -> str:
    """The command that stores estimates into this store (the tab is empty until it ran)."""
    return ("llmbench predict --study ../shared/reference/llm-inference-bench --model llama-3-8b "
            f"--engine vllm --hardware H200 --batch-size 1,64 --save --results {results}")


def content(df, index: int | None, metric: str, results="llmbench-results"
            ) -> tuple[dict, html.Table | html.P, str]:
    cfgs = pred.configurations(df)
    if index is None or not 0 <= index < len(cfgs):
        empty = figures.empty_figure("Predictions", "no estimate records in this store").to_dict()
        return empty, html.P(["No estimates in this store yet. Store some with ",
                              html.Code(fill_command(results), id="pred-fill"),
                              " (your model, engine, hardware and batch sizes; --study is where the "
                              "study's published data lies), then reload."], className="help"), ""
    cfg = cfgs[index]
    cmp = pred.comparison(df, cfg, metric)
    fig = pred.figure(cmp, cfg, metric, height=520)
    rows = pred.table_rows(cmp, metric)
    cols = [c for c in rows[0] if any(r[c] != "–" for r in rows)]   # none of the study's: no column
    table = html.Table([html.Thead(html.Tr([html.Th(c) for c in cols])),
                        html.Tbody([html.Tr([html.Td(r[c]) for c in cols]) for r in rows])],
                       className="ranked")
    n = int(cmp["ratio"].notna().sum())
    note = (f"{int(cmp['predicted'].notna().sum())} ESTIMATE point(s) · {n} with a measurement of the "
            "same configuration" + ("" if n else " (none measured: the curve stands alone)"))
    return fig.to_dict(), table, note


def register(app, source, results="llmbench-results") -> None:
    @app.callback(Output("pred-config", "options"), Output("pred-config", "value"),
                  Input("tabs", "value"), Input("version", "data"), State("pred-config", "value"))
    def _configs(tab, _v, current):
        if tab != "predictions":
            raise PreventUpdate
        opts, first = options(source.data.df)
        keep = current if any(o["value"] == current for o in opts) else first
        return opts, keep

    @app.callback(Output("pred-graph", "figure"), Output("pred-table", "children"),
                  Output("pred-note", "children"), Input("tabs", "value"),
                  Input("pred-config", "value"), Input("pred-metric", "value"),
                  Input("version", "data"))
    def _show(tab, index, metric, _v):
        if tab != "predictions":
            raise PreventUpdate
        return content(source.data.df, index, metric or pred.METRICS[0], results)
