"""The live dashboard: a Dash app over the store, built from the report's figure library.

Every figure is computed on the server from the in-memory frame and aggregated there (one
point per configuration), so the browser receives at most a few hundred points whatever the
number of records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dash
import pandas as pd
from dash import ALL, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from llmbench.dashboard import compare as compare_view
from llmbench.dashboard import fidelity as fidelity_view
from llmbench.dashboard import findings as findings_view
from llmbench.dashboard import predictions as predictions_view
from llmbench.dashboard import tables as tables_view
from llmbench.dashboard.source import Source
from llmbench.report import best as best_mod
from llmbench.report import figures, views
from llmbench.report.data import Data
from llmbench.store.index import Index

TAB = {"padding": "8px 18px", "border": "none", "background": "#fff", "color": "#5a6478",
       "fontWeight": 500}
TAB_ON = {**TAB, "color": "#1b2a4a", "borderBottom": "3px solid #2f4f8f"}
STATS = ["mean", "p50", "p90", "p99", "min", "max"]
GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _options(values) -> list[dict[str, Any]]:
    return [{"label": _fmt_value(v), "value": v} for v in values]


def filter_options(data: Data, f: str) -> list[dict[str, Any]]:
    col = data.df[f]
    vals = col.dropna().unique().tolist()
    try:
        vals = sorted(vals)
    except TypeError:
        vals = sorted(vals, key=str)
    vals = [v.item() if hasattr(v, "item") else v for v in vals]
    opts = _options(vals)
    if col.isna().any():
        opts.append({"label": views.MISSING, "value": views.MISSING})
    return opts


def _field_options(fields: list[str]) -> list[dict[str, str]]:
    return [{"label": f"{figures.label(f)}", "value": f} for f in fields]


def _control(label: str, child) -> html.Div:
    return html.Div([html.Label(label, className="ctl-label"), child], className="ctl")


# The view each kind of the user's own records opens on (the most common kind wins).
KIND_VIEW = {"inference": "batch", "serving": "serving", "training": "training",
             "perplexity": "perplexity"}


def opening(data: Data) -> tuple[str, str | None]:
    """The view and source the dashboard opens on: the user's own results when the store has
    any that succeeded (the published reference data is beside them, one filter away)."""
    df = data.df
    # a mask, not the rows: a copy of every column of the own rows cost 0.1 s at 100,000
    own = (df["source"] == "own") & (df["status"] == "ok") if not df.empty else None
    if own is None or not own.any():
        return "batch", None
    kind = df.loc[own, "kind"].map(KIND_VIEW).dropna()
    return (kind.value_counts().index[0] if len(kind) else "batch"), "own"


def view_state(data: Data, view_key: str, fields: list[str], source: str | None = None
               ) -> dict[str, Any]:
    """The controls a view opens with: axes, colour, log axes, pinned filters, help line;
    axes and pins chosen for `source`'s rows when one is given."""
    view = views.VIEWS[view_key]
    rows = views.view_rows(data, view)
    if source is not None and not rows.empty:
        rows = rows[rows["source"] == source]
    x, y = views.default_x(data, view, rows), views.default_y(data, view, rows)
    x_opts = views.x_options(data)
    xs = list(dict.fromkeys([x, *x_opts]))
    color, pins = views.default_choice(data, view, x, y, df=rows)
    if "request_shape" in pins:  # pinned to one request shape: its own headline on the y axis
        shape_pin = {"request_shape": pins["request_shape"]}
        one = views.apply_filters(rows, shape_pin)
        y_shape = views.default_y(data, view, one)
        if y_shape != y:
            y = y_shape
            color, pins = views.default_choice(data, view, x, y, df=one)
            pins = {**shape_pin, **pins}
    ys = list(dict.fromkeys([y, *views.y_options(data)]))
    colors = list(dict.fromkeys([color, view.color, "system", "hardware", "engine", "source",
                                 *x_opts]))
    help_ = view.help + (" Pinned to the most measured slice: " +
                         ", ".join(f"{k} = {', '.join(_fmt_value(v) for v in vs)}"
                                   for k, vs in pins.items()) + " (widen in the filters)."
                         if pins else "")
    if source is not None and "source" in fields:
        pins = {"source": [source], **pins}
        help_ += (" Showing your own results; add the published data in the source filter."
                  if source == "own" else f" Showing source = {source}.")
    return {"x_options": _field_options(xs), "x": x, "y_options": _field_options(ys), "y": y,
            "color_options": _field_options(colors), "color": color,
            "log": [a for a, on in (("x", view.log_x), ("y", view.log_y)) if on],
            "filters": [pins.get(f, []) for f in fields], "help": help_}


def figure_state(data: Data, view_key: str, x, y, stat, color, log, filters: dict) -> tuple:
    """The figure (a dict), the status line and the points table for the current controls."""
    log = log or []
    ch = views.Choice(view=view_key, x=x, y=y, stat=stat or "mean", color=color,
                      log_x="x" in log, log_y="y" in log, filters=filters)
    fig, pts = views.build(data, ch, height=600)
    meta = fig.meta
    failed = int((data.df["status"] != "ok").sum()) if not data.df.empty else 0
    status = (f"{meta.get('records', len(pts)):,} records → {meta.get('points', len(pts)):,} points"
              + (f" in {meta['series']} series" if "series" in meta else "")
              + (f" · {failed} failed/skipped record(s) not plotted" if failed else ""))
    return fig.to_dict(), status, _table(_points_rows(pts), "points-table")


def _explore_layout(data: Data) -> html.Div:
    """Built with the first view already computed, so the first render needs no callback."""
    fields = data.filter_fields()
    view_key, source = opening(data)
    st = view_state(data, view_key, fields, source)
    fig, status, _ = figure_state(data, view_key, st["x"], st["y"], "mean", st["color"],
                                  st["log"], {f: v for f, v in zip(fields, st["filters"]) if v})
    filters = [_control(figures.FIELD_LABELS.get(f) or f.replace("_", " "),
                        dcc.Dropdown(id={"type": "filter", "field": f}, multi=True,
                                     options=filter_options(data, f), placeholder="all",
                                     value=v, className="filter"))
               for f, v in zip(fields, st["filters"])]
    side = html.Div([
        _control("View", dcc.Dropdown(id="view", clearable=False, value=view_key,
                                      options=[{"label": v.title, "value": k}
                                               for k, v in views.VIEWS.items()])),
        html.Div([_control("x", dcc.Dropdown(id="x", clearable=False, options=st["x_options"],
                                             value=st["x"])),
                  _control("colour", dcc.Dropdown(id="color", clearable=False,
                                                  options=st["color_options"], value=st["color"]))],
                 className="row2"),
        _control("y", dcc.Dropdown(id="y", clearable=False, options=st["y_options"], value=st["y"])),
        html.Div([_control("statistic", dcc.Dropdown(id="stat", clearable=False, value="mean",
                                                     options=_options(STATS))),
                  _control("axes", dcc.Checklist(id="log", inline=True, value=st["log"], options=[
                      {"label": " log x", "value": "x"}, {"label": " log y", "value": "y"}]))],
                 className="row2"),
        html.H4("Filters", className="side-h"),
        html.Div(filters, id="filters"),
    ], className="side")
    main = html.Div([
        html.Div(st["help"], id="view-help", className="help"),
        dcc.Loading(dcc.Graph(id="graph", figure=fig, config=GRAPH_CONFIG, style={"height": "600px"}),
                    type="dot", delay_show=400),
        html.Div(status, id="status", className="status"),
        html.Details([html.Summary("Points behind the figure"), html.Div(id="points")],
                     id="points-open", className="points"),
    ], className="main")
    return html.Div([side, main], className="explore")


def _best_defaults(data: Data) -> dict[str, Any]:
    df = data.df
    if df.empty or "input_len" not in df:
        return {"model": None, "input_len": None, "output_len": None}
    thr = "total_throughput_tok_s_mean"
    d = df[df[thr].notna()] if thr in df else df.iloc[0:0]
    if (d["source"] == "own").any():  # the user's own workload first
        d = d[d["source"] == "own"]
    if d.empty:
        return {"model": None, "input_len": None, "output_len": None}
    m, i, o = d.groupby(["model", "input_len", "output_len"], dropna=False).size().idxmax()
    return {"model": m, "input_len": None if pd.isna(i) else int(i),
            "output_len": None if pd.isna(o) else int(o)}


def _best_layout(data: Data) -> html.Div:
    dflt = _best_defaults(data)
    models = sorted(data.df["model"].dropna().unique().tolist()) if not data.df.empty else []

    def num(id_, value=None, placeholder="any", step="any"):
        return dcc.Input(id=id_, type="number", value=value, placeholder=placeholder, debounce=True,
                         step=step, className="num")
    form = html.Div([
        _control("Model", dcc.Dropdown(id="b-model", options=_options(models), value=dflt["model"],
                                       placeholder="any model")),
        html.Div([_control("or params ≥ (B)", num("b-minp")), _control("≤ (B)", num("b-maxp"))],
                 className="row2"),
        html.Div([_control("Input tokens", num("b-in", dflt["input_len"], step=1)),
                  _control("Output tokens", num("b-out", dflt["output_len"], step=1))], className="row2"),
        html.Div([_control("TTFT SLO (s)", num("b-ttft")), _control("TPOT SLO (s)", num("b-tpot"))],
                 className="row2"),
        html.Div([_control("Max devices", num("b-dev", step=1)), _control("Max power (W)", num("b-pow"))],
                 className="row2"),
        _control("Rank by", dcc.Dropdown(id="b-rank", clearable=False, value="throughput", options=[
            {"label": "throughput", "value": "throughput"},
            {"label": "throughput per device", "value": "throughput_per_device"},
            {"label": "tokens per joule", "value": "tokens_per_joule"},
            {"label": "energy per token", "value": "energy_per_token"},
            {"label": "latency", "value": "latency"},
            {"label": "efficiency vs roofline", "value": "efficiency"}])),
        _control("Data", dcc.Checklist(id="b-src", value=["own", "reference"], inline=True, options=[
            {"label": " own ", "value": "own"}, {"label": " reference", "value": "reference"},
            # llmbench predict --save: off by default, and marked ESTIMATE when ranked
            {"label": " estimates", "value": "estimate"}])),
        html.P(best_mod.__doc__.split("\n\n")[1].replace("\n", " "), className="help small"),
    ], className="side")
    main = html.Div([
        html.Div(id="b-notes", className="status"),
        dcc.Graph(id="b-graph", config=GRAPH_CONFIG, style={"height": "470px"}),
        dcc.Graph(id="b-energy", config=GRAPH_CONFIG, style={"height": "470px"}),
        html.Div(id="b-table", className="tablewrap"),
    ], className="main")
    return html.Div([form, main], className="explore")


def _table(rows: list[dict[str, str]], cls: str = "ranked") -> html.Table:
    if not rows:
        return html.P("no rows", className="help")
    head = html.Thead(html.Tr([html.Th(c) for c in rows[0]]))
    body = html.Tbody([html.Tr([html.Td(v) for v in r.values()],
                               className="pareto" if r.get("Pareto") else "") for r in rows])
    return html.Table([head, body], className=cls)


def _points_rows(pts: pd.DataFrame, limit: int = 200) -> list[dict[str, str]]:
    if pts.empty or "y" not in pts:
        return []
    cols = [c for c in ("series", "x", "y", "err", "n_records", "n_repeats", "bound", "efficiency")
            if c in pts]
    out = []
    for _, r in pts[cols].head(limit).iterrows():
        out.append({c: ("" if pd.isna(r[c]) else f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]))
                    for c in cols})
    return out


def create_app(results: Path | str, poll_s: float = 10.0, index: Index | None = None,
               reference: Path | str | None = None) -> dash.Dash:
    """The app over the store under `results`; `index`: its index, already loaded;
    `reference`: the study for the Findings tab (default: `results`)."""
    source = Source(results, index=index)
    app = dash.Dash(__name__, title="llmbench dashboard", update_title=None,
                    suppress_callback_exceptions=True, serve_locally=True)
    app.index_string = INDEX.replace("%%CSS%%", CSS)

    def header(data: Data) -> list:
        c = data.counts()
        return [html.Span(f"{c['records']:,} records", className="pill"),
                html.Span(f"{c['own']:,} own", className="pill own"),
                html.Span(f"{c['reference']:,} reference", className="pill ref")]

    built: dict[int, html.Div] = {}  # the page of the store's current version

    def layout():
        # Dash asks for the layout twice on a first visit (to validate it, then to serve it),
        # and every page load asks again: each version of the store is laid out once.
        source.refresh()
        version = source.version
        if version not in built:
            built.clear()
            built[version] = page(source.data)
        return built[version]

    def page(data: Data) -> html.Div:
        return html.Div([
            html.Header([html.Div([html.H1("llmbench"), html.Span(str(Path(results)), className="path")]),
                         html.Div(header(data), id="counts", className="counts")]),
            dcc.Tabs(id="tabs", value="explore", className="tabs", style={"height": "42px"},
                     children=[
                dcc.Tab(label="Explore", value="explore", children=_explore_layout(data),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Best configuration", value="best", children=_best_layout(data),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Compare", value="compare", children=compare_view.layout(results),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Findings", value="findings", children=findings_view.layout(results),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Fidelity", value="fidelity", children=fidelity_view.layout(),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Tables", value="tables", children=tables_view.layout(),
                        style=TAB, selected_style=TAB_ON),
                dcc.Tab(label="Predictions", value="predictions", children=predictions_view.layout(),
                        style=TAB, selected_style=TAB_ON),
            ]),
            dcc.Interval(id="tick", interval=int(poll_s * 1000)),
            dcc.Store(id="version", data=source.version),
        ])

    app.layout = layout
    compare_view.register(app, results)
    findings_view.register(app, results, reference)
    fidelity_view.register(app, source)
    tables_view.register(app, source)
    predictions_view.register(app, source, results)

    @app.callback(Output("version", "data"), Output("counts", "children"),
                  Input("tick", "n_intervals"), prevent_initial_call=True)
    def _poll(_):
        if source.refresh():
            return source.version, header(source.data)
        return dash.no_update, dash.no_update

    @app.callback(Output({"type": "filter", "field": ALL}, "options"), Input("version", "data"),
                  State({"type": "filter", "field": ALL}, "id"), prevent_initial_call=True)
    def _filter_options(_, ids):
        data = source.data
        return [filter_options(data, i["field"]) if i["field"] in data.df else [] for i in ids]

    @app.callback(
        Output("x", "options"), Output("x", "value"), Output("y", "options"), Output("y", "value"),
        Output("color", "options"), Output("color", "value"), Output("log", "value"),
        Output({"type": "filter", "field": ALL}, "value"), Output("view-help", "children"),
        Input("view", "value"), State({"type": "filter", "field": ALL}, "id"),
        State({"type": "filter", "field": ALL}, "value"), prevent_initial_call=True)
    def _on_view(view_key, ids, fvals):
        # A source the user picked (own or reference) stays picked across views.
        src = next((v for i, v in zip(ids, fvals) if i["field"] == "source"), None)
        st = view_state(source.data, view_key, [i["field"] for i in ids],
                        src[0] if src and len(src) == 1 else None)
        return (st["x_options"], st["x"], st["y_options"], st["y"], st["color_options"],
                st["color"], st["log"], st["filters"], st["help"])

    @app.callback(
        Output("graph", "figure"), Output("status", "children"), Output("points", "children"),
        Input("x", "value"), Input("y", "value"), Input("stat", "value"), Input("color", "value"),
        Input("log", "value"), Input({"type": "filter", "field": ALL}, "value"),
        Input("version", "data"), Input("points-open", "open"), State("view", "value"),
        State({"type": "filter", "field": ALL}, "id"), prevent_initial_call=True)
    def _figure(x, y, stat, color, log, fvals, _v, points_open, view_key, ids):
        filters = {i["field"]: v for i, v in zip(ids, fvals) if v}
        fig, status, points = figure_state(source.data, view_key, x, y, stat, color, log, filters)
        # The table is built only while shown: a closed one would still cost a React render.
        return fig, status, points if points_open else None

    @app.callback(
        Output("b-graph", "figure"), Output("b-energy", "figure"), Output("b-table", "children"),
        Output("b-notes", "children"),
        Input("b-model", "value"), Input("b-minp", "value"), Input("b-maxp", "value"),
        Input("b-in", "value"), Input("b-out", "value"), Input("b-ttft", "value"),
        Input("b-tpot", "value"), Input("b-dev", "value"), Input("b-pow", "value"),
        Input("b-rank", "value"), Input("b-src", "value"), Input("version", "data"),
        Input("tabs", "value"))
    def _best(model, minp, maxp, il, ol, ttft, tpot, dev, pw, rank, src, _v, tab):
        if tab != "best":  # computed when shown, not on every page load
            raise PreventUpdate
        try:
            q = best_mod.BestQuery(model=model, min_params_b=minp, max_params_b=maxp,
                                   input_len=il, output_len=ol, ttft_slo_s=ttft, tpot_slo_s=tpot,
                                   max_devices=dev, max_power_w=pw, rank_by=rank,
                                   sources=src or [])
        except Exception as e:  # pydantic's message names the bad field
            empty = figures.empty_figure("Best configuration", "invalid query").to_dict()
            return empty, empty, html.P(str(e), className="help"), ""
        ranked, notes = best_mod.find_best(source.data, q)
        fig = figures.pareto_figure(ranked, height=470)
        n = len(ranked)
        head = f"{n} configuration(s) ranked by {rank.replace('_', ' ')}" if n else ""
        energy = figures.energy_pareto_figure(ranked, height=470)
        return fig.to_dict(), energy.to_dict(), _table(best_mod.table_rows(ranked, top=q.top)), \
            " · ".join([head, *notes]).strip(" ·")

    return app


CSS = """
*{box-sizing:border-box} body{margin:0;font-family:Inter,"Segoe UI",Helvetica,Arial,sans-serif;
background:#f4f6fa;color:#1d2433;font-size:14px}
header{display:flex;justify-content:space-between;align-items:center;padding:12px 24px;
background:linear-gradient(120deg,#1b2a4a,#2f4f8f);color:#fff}
header h1{display:inline;margin:0 14px 0 0;font-size:22px} header .path{opacity:.75;font-size:13px}
.counts .pill{background:rgba(255,255,255,.16);border-radius:12px;padding:4px 10px;margin-left:8px;font-size:12.5px}
.tabs{background:#fff;border-bottom:1px solid #e3e7ef}
.explore{display:flex;gap:16px;padding:14px 18px;align-items:flex-start}
.side{width:320px;flex:none;background:#fff;border-radius:12px;padding:12px 14px;
box-shadow:0 1px 3px rgba(20,30,60,.08);max-height:calc(100vh - 130px);overflow-y:auto}
.main{flex:1;min-width:0;background:#fff;border-radius:12px;padding:10px 14px;
box-shadow:0 1px 3px rgba(20,30,60,.08)}
.ctl{margin-bottom:8px;flex:1;min-width:0} .ctl-label{display:block;font-size:11.5px;color:#5a6478;
text-transform:uppercase;letter-spacing:.04em;margin-bottom:3px}
.row2{display:flex;gap:8px} .side-h{margin:14px 0 6px;font-size:13px;color:#2f4f8f;
border-top:1px solid #eef0f4;padding-top:10px}
.help{color:#5a6478;font-size:12.5px;margin:2px 0 4px} .small{font-size:11.5px;margin-top:12px}
.status{color:#445;font-size:12.5px;padding:4px 2px}
.num{width:100%;padding:6px 8px;border:1px solid #ccd2dd;border-radius:6px;font-size:13px}
table{border-collapse:collapse;font-size:12.5px;width:100%} th{background:#eef1f7;text-align:left;
padding:6px 8px;position:sticky;top:0} td{padding:5px 8px;border-top:1px solid #eef0f4}
tr.pareto td{background:#fff8e1} td{white-space:nowrap} table.ranked td:nth-child(5){white-space:normal;min-width:200px} .tablewrap{max-height:460px;overflow:auto;margin-top:6px}
.findings-tab{padding:14px 18px;background:#fff} table.findings td{white-space:normal;vertical-align:top;
max-width:380px} td.verdict.holds{color:#1b7f3b} td.verdict.partly{color:#b35c00} td.verdict.contradicted{color:#8a1c1c} td.verdict.untested{color:#5a6478}
details.points{margin-top:6px;font-size:12.5px} details.points summary{cursor:pointer;color:#2f4f8f}
"""

INDEX = """<!DOCTYPE html><html><head>{%metas%}<title>{%title%}</title>{%favicon%}{%css%}
<style>%%CSS%%</style></head><body>{%app_entry%}<footer>{%config%}{%scripts%}{%renderer%}</footer>
</body></html>"""
