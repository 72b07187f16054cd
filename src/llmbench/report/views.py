"""Named views (what the paper's figures show) and the functions that turn data + choices into
a figure. The dashboard and the static report both go through `build`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from llmbench.metrics import FIGURE_Y
from llmbench.report import figures, shapes
from llmbench.report.aggregate import aggregate, rows_where, value_column, varying_within
from llmbench.report.data import Data, samples

MISSING = "(none)"  # the filter option for 'field not set'
MAX_SAMPLE_FILES = 200


@dataclass(frozen=True)
class View:
    key: str
    title: str
    x: tuple[str, ...]            # preferences: the first present is the default
    y: tuple[str, ...]
    color: str = "system"
    plot: Literal["xy", "ecdf", "strip"] = "xy"
    log_x: bool = False
    log_y: bool = False
    kinds: tuple[str, ...] = ()   # restrict to these record kinds (empty: all)
    pin: bool = True              # pin other varying fields to their most common value
    ideal_scaling: bool = False
    help: str = ""
    also: tuple[str, ...] = ()    # further y metrics the report draws when they have data
    pair_own: bool = False        # default slice: one the user's own records are in


THROUGHPUT = FIGURE_Y["throughput"]
EFFICIENCY = FIGURE_Y["efficiency"]
VIEWS: dict[str, View] = {v.key: v for v in [
    View("batch", "Throughput vs batch size", ("batch_size", "concurrency"), THROUGHPUT,
         log_x=True, log_y=True, help="Dotted: the roofline bound of the same hardware and model."),
    View("latency", "Latency vs batch size", ("batch_size", "concurrency"),
         ("batch_latency_s", "e2e_s", "ttft_s"), log_x=True, log_y=True),
    View("length", "Throughput vs input/output length", ("input_len", "output_len"), THROUGHPUT,
         log_x=True, log_y=True),
    View("serving", "Serving: latency against load", ("request_rate", "concurrency"),
         ("ttft_s", "tpot_s", "e2e_s", "goodput_req_s", "output_throughput_tok_s"),
         kinds=("serving",), log_y=True, also=("tpot_s", "goodput_req_s", "output_throughput_tok_s"),
         help="Open-loop runs against their request rate, closed-loop runs against concurrency."),
    View("kv_block", "Throughput vs KV-cache block size", ("kv_block_size",), THROUGHPUT, log_x=True),
    View("dtype", "Throughput vs weight / KV-cache dtype", ("dtype",), THROUGHPUT),
    View("parallelism", "Throughput vs parallelism (TP / PP / EP)", ("parallelism",), THROUGHPUT),
    View("power", "Power vs batch size", ("batch_size",), ("avg_power_w",), log_x=True),
    View("energy", "Tokens per joule vs batch size", ("batch_size",),
         ("total_tokens_per_joule", "tokens_per_joule"), log_x=True, log_y=True),
    View("perplexity", "Perplexity by model", ("model",), ("perplexity",)),
    View("distributions", "TTFT / ITL / E2E distributions", ("system",),
         ("ttft_s", "itl_s", "e2e_s", "tpot_s"), plot="ecdf", log_x=True,
         kinds=("serving", "inference", "reference"), also=("itl_s", "e2e_s")),
    View("training", "Training TFLOP/s, MFU and scaling", ("hardware_count", "seq_len", "micro_batch"),
         ("tflops", "mfu", "tokens_per_s", "scaling_efficiency"), color="model",
         kinds=("training",), ideal_scaling=True,
         also=("mfu", "tokens_per_s", "scaling_efficiency")),
    View("study", "Beside the study: one point on every hardware, each against its own roofline",
         ("hardware",), ("roofline_efficiency_total_throughput_tok_s", "total_throughput_tok_s"),
         color="engine", plot="strip", kinds=("inference", "reference"),
         help="Your records and LLM-Inference-Bench's of the same engine, model, batch and lengths "
              "(pinned to the slice that spans the most hardware; change them in the filters). "
              "100% is each hardware's own bound: an H200 is compared with an H100 by how close "
              "each comes to its limit. docs/h200-vs-study.md reads the H200 campaign this way.",
         also=("total_throughput_tok_s",), pair_own=True),
    View("efficiency", "Efficiency against the roofline", ("hardware",), EFFICIENCY, color="engine",
         plot="strip", pin=False, log_y=True,
         help="One dot per configuration, coloured by engine ('(own)': llmbench's measurements); "
              "100% is the analytical bound of that hardware, model and workload."),
]}


@dataclass
class Choice:
    """What a user picked on a view (the dashboard's controls; the report's defaults)."""

    view: str
    x: str | None = None
    y: str | None = None
    stat: str = "mean"
    color: str | None = None
    log_x: bool | None = None
    log_y: bool | None = None
    filters: dict[str, list[Any]] = field(default_factory=dict)


def y_options(data: Data) -> list[str]:
    eff = sorted(c for c in data.df.columns if c.startswith("roofline_efficiency_"))
    return list(data.metrics) + eff


def x_options(data: Data) -> list[str]:
    return [c for c in data.config_fields if data.df[c].nunique() > 0]


def default_x(data: Data, view: View, df: pd.DataFrame | None = None) -> str | None:
    df = data.df if df is None else df
    for c in view.x:
        if c in df.columns and df[c].notna().any():
            return c
    return view.x[0]


def default_y(data: Data, view: View, df: pd.DataFrame | None = None) -> str | None:
    """The first of the view's y metrics the rows have; for serving rows of one request shape
    with a headline of its own (an embeddings point has no TTFT), the first of its headline."""
    df = data.df if df is None else df
    for m in _shape_headline(df) + list(view.y):
        c = value_column(df, m, "mean")
        if c in df.columns and df[c].notna().any():
            return m
    return view.y[0]


def _shape_headline(df: pd.DataFrame) -> list[str]:
    """The headline metrics of the rows' one request shape when the catalog gives it its own
    (report/shapes.py), else none."""
    if df.empty or "kind" not in df or set(df["kind"].dropna()) != {"serving"}:
        return []
    found = shapes.shapes_in(df)
    if len(found) != 1 or not shapes.own_headline(found[0]):
        return []
    return shapes.headline_metrics("serving", found[0])


def shape_filter(shape: str) -> dict[str, list]:
    """The filter (apply_filters) that keeps one request shape's rows; a record naming no shape
    is plain text."""
    return {shapes.FIELD: [MISSING, shapes.DEFAULT] if shape == shapes.DEFAULT else [shape]}


def view_rows(data: Data, view: View) -> pd.DataFrame:
    df = data.df
    if df.empty:
        return df
    df = rows_where(df, df["status"] == "ok") if "status" in df else df
    if view.kinds:
        df = rows_where(df, df["kind"].isin(view.kinds))
    return df


def apply_filters(df: pd.DataFrame, filters: dict[str, list[Any]]) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for f, vals in filters.items():
        if not vals or f not in df.columns:
            continue
        col = df[f]
        real = [v for v in vals if v != MISSING]
        m = col.isin(real).to_numpy().copy()
        if MISSING in vals:
            m |= col.isna().to_numpy()
        mask &= m
    return rows_where(df, mask)


MAX_DEFAULT_SERIES = 10
PARALLEL_X = ("hardware_count", "parallelism", "tensor_parallel", "pipeline_parallel",
              "expert_parallel")
PARTS = {"system": ("hardware", "hardware_count", "backend"),
         "engine": ("backend",),
         "dtype": ("weight_dtype", "weight_quant", "kv_cache_dtype"),
         "parallelism": ("tensor_parallel", "pipeline_parallel", "expert_parallel")}


def _best_value(d: pd.DataFrame, c: str, x: str):
    """The value of c whose slice varies most along x (then: has most records)."""
    codes = d[c].astype(object).where(d[c].notna(), MISSING)
    g = d.assign(_c=codes).groupby("_c", dropna=False)
    score = pd.DataFrame({"nx": g[x].nunique(), "n": g.size()})
    top = score.sort_values(["nx", "n"], ascending=False).index[0]
    return top if top == MISSING else _py(top)


def default_pins(data: Data, view: View, x: str, metric: str, color: str,
                 df: pd.DataFrame | None = None) -> dict[str, list[Any]]:
    """A readable default slice: every field that would otherwise split the lines (varies
    inside an (x, colour) group) is pinned to the value whose slice spans the most x values
    (then: has the most records), most important fields first. The user can widen any pin
    in the filters."""
    if not view.pin:
        return {}
    df = view_rows(data, view) if df is None else df
    ycol = value_column(df, metric, "mean")
    if ycol not in df.columns or x not in df.columns:
        return {}
    d = rows_where(df, df[ycol].notna() & df[x].notna())
    if view.pair_own and "source" in d.columns and (d["source"] == "own").any():
        # only the configurations the user measured: their records beside the same points
        same = [c for c in ("model", "batch_size", "input_len", "output_len") if c in d.columns]
        mine = d.loc[d["source"] == "own", same].drop_duplicates()
        d = d.merge(mine, on=same, how="inner") if same else d
    keys = [k for k in (x, color, "source") if k in d.columns]
    skip = set(keys) | {p for k in keys for p in PARTS.get(k, ())}
    order = ["model", "input_len", "output_len", "hardware_count"]
    cands = [c for c in order if c in data.config_fields] + \
            [c for c in data.config_fields if c not in order]
    if view.pair_own:  # the point itself, not how each side ran it (bf16 vs fp16, compile ...)
        cands = [c for c in (*order, "batch_size") if c in data.config_fields]
    pins: dict[str, list[Any]] = {}
    if "hardware_count" in d.columns and x not in PARALLEL_X and color == "system" \
            and d["hardware_count"].nunique() > 1:
        # Single-device results by default: multi-device systems are the parallelism view's.
        top = _best_value(d, "hardware_count", x)
        pins["hardware_count"] = [top]
        d = apply_filters(d, pins)
    for c in cands:
        if c in skip or c in pins or c in DERIVED_ONLY or d.empty:
            continue
        if c in varying_within(d, keys, [c]):
            top = _best_value(d, c, x)
            pins[c] = [top]
            d = apply_filters(d, {c: [top]})
    return pins


def default_choice(data: Data, view: View, x: str, metric: str,
                   df: pd.DataFrame | None = None) -> tuple[str, dict[str, list[Any]]]:
    """The view's colour and pins; when colouring by hardware · engine would draw more than
    MAX_DEFAULT_SERIES lines, colour by hardware for the engine with the widest slice."""
    df = view_rows(data, view) if df is None else df
    pins = default_pins(data, view, x, metric, view.color, df)
    if view.color != "system" or not view.pin:
        return view.color, pins
    d = apply_filters(df, pins)
    ycol = value_column(d, metric, "mean")
    if ycol in d.columns:
        d = rows_where(d, d[ycol].notna())
    if d["system"].nunique() <= MAX_DEFAULT_SERIES or "backend" not in d.columns or d.empty:
        return view.color, pins
    eng = _best_value(d, "backend", x)
    pins = default_pins(data, view, x, metric, "hardware", apply_filters(df, {"backend": [eng]}))
    return "hardware", {"backend": [eng], **pins}


DERIVED_ONLY = {"parallelism", "dtype", "system", "engine"}


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def resolve(data: Data, choice: Choice) -> tuple[View, str, str, str, bool, bool]:
    view = VIEWS[choice.view]
    rows = view_rows(data, view)
    x = choice.x or default_x(data, view, rows)
    y = choice.y or default_y(data, view, rows)
    color = choice.color or view.color
    log_x = view.log_x if choice.log_x is None else choice.log_x
    log_y = view.log_y if choice.log_y is None else choice.log_y
    return view, x, y, color, log_x, log_y


def build(data: Data, choice: Choice, height: int = 520, title: str | None = None
          ) -> tuple[figures.Fig, pd.DataFrame]:
    """The figure for a choice, and the aggregated points behind it (for tables/tests)."""
    view, x, y, color, log_x, log_y = resolve(data, choice)
    df = apply_filters(view_rows(data, view), choice.filters)
    title = title or view.title
    if view.plot == "ecdf":
        return distribution(data, df, y, color, log_x, title, height)
    if view.plot == "strip":
        pts = config_points(data, df, y, choice.stat, x, color)
        return figures.strip_figure(pts, x, y, color=color, title=title, height=height,
                                    log_y=log_y), pts
    if x not in df.columns:
        return figures.empty_figure(title, f"no record has the field {x!r}"), pd.DataFrame()
    numeric_x = pd.api.types.is_numeric_dtype(df[x])
    agg = aggregate(df, x, y, choice.stat, [color], data.config_fields,
                    log_x=log_x and numeric_x, log_y=log_y)
    fig = figures.xy_figure(agg, x, y, choice.stat, title=title, log_x=log_x and numeric_x,
                            log_y=log_y, height=height,
                            ideal_scaling=view.ideal_scaling and x == "hardware_count"
                            and y == "tokens_per_s")
    return fig, agg.points


def config_points(data: Data, df: pd.DataFrame, metric: str, stat: str, x: str,
                  color: str) -> pd.DataFrame:
    """One row per configuration (duplicate records merged by mean), with a hover text."""
    ycol = value_column(df, metric, stat)
    if ycol not in df.columns or df.empty:
        return pd.DataFrame(columns=[x, color, "y"])
    d = rows_where(df, df[ycol].notna())
    keys = [c for c in data.config_fields if c in d.columns and d[c].nunique(dropna=False) > 1]
    keys = list(dict.fromkeys([x, color, *keys]))
    g = d.assign(y=pd.to_numeric(d[ycol], errors="coerce")).groupby(keys, dropna=False)
    pts = g["y"].mean().reset_index()
    pts["n_records"] = g.size().to_numpy()
    show = [k for k in keys if k not in (x, color, "system")][:8]
    hover = pts[x].astype(str)
    for k in show:
        hover = hover + "<br>" + k + ": " + pts[k].astype(str)
    pts["hover"] = hover
    return pts


def distribution(data: Data, df: pd.DataFrame, metric: str, color: str, log_x: bool,
                 title: str, height: int, max_series: int = 12) -> tuple[figures.Fig, pd.DataFrame]:
    """ECDF per configuration from the records' raw samples; imported rows (no samples) drawn
    at their summary quantiles."""
    has = [c for c in (f"{metric}_mean", f"{metric}_p50") if c in df.columns]
    if not has:
        return figures.ecdf_figure({}, metric, log_x, title, height), pd.DataFrame()
    d = df[df[has[0]].notna()]
    keys = [color] + varying_within(d, [color], [c for c in data.config_fields if c != color]) \
        if color in d.columns else []
    if not keys or d.empty:
        return figures.ecdf_figure({}, metric, log_x, title, height), pd.DataFrame()
    groups = sorted(d.groupby(keys, dropna=False), key=lambda kv: -len(kv[1]))[:max_series]
    series: dict[str, list[float]] = {}
    summary: dict[str, dict[str, float]] = {}
    rows = []
    for k, g in groups:
        k = k if isinstance(k, tuple) else (k,)
        name = " | ".join([str(k[0])] + [f"{c}={v}" for c, v in zip(keys[1:], k[1:])])
        used = g
        if len(g) > MAX_SAMPLE_FILES:  # raw samples live in the record files: read the newest
            used = g.sort_values("created_at").tail(MAX_SAMPLE_FILES)
            name += f" (newest {MAX_SAMPLE_FILES} of {len(g)} records)"
        s = samples(used, metric) if "path" in g.columns else []
        if s:
            series[name] = s
        else:
            summary[name] = {st: float(g[f"{metric}_{st}"].mean()) for st in
                             ("p50", "p90", "p95", "p99", "mean") if f"{metric}_{st}" in g.columns}
            summary[name]["n"] = float(g[f"{metric}_n"].max()) if f"{metric}_n" in g.columns else 1.0
        rows.append({"series": name, "records": len(g), "samples": len(s)})
    fig = figures.ecdf_figure(series, metric, log_x, title, height, summary=summary)
    return fig, pd.DataFrame(rows)
