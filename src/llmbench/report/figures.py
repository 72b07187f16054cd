"""The one figure library: Plotly figures built from aggregated points. The static report and
the live dashboard both call these functions, so a figure looks the same in both.

Figures are plain Plotly JSON (dicts), built by the small `Fig` below rather than by
plotly.graph_objects: graph_objects validates every property on assignment, which cost ~0.3 s
per figure here, more than the dashboard's whole budget for applying a filter. Plotly.js,
dcc.Graph and Kaleido take the dicts as they are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from llmbench.metrics import ROOFLINE_EFFICIENCY, metric
from llmbench.report.aggregate import Aggregated

PALETTE = ["#1f77b4", "#e45756", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b",
           "#e377c2", "#bcbd22", "#4c78a8", "#72b7b2", "#b279a2", "#f58518", "#54a24b",
           "#9d755d", "#79706e", "#d62728", "#637939", "#393b79", "#843c39"]
MAX_SERIES = 12
MAX_STRIP_POINTS = 3000

# Configuration fields' axis and filter labels; a metric's label is the catalog's (metrics.py).
FIELD_LABELS = {
    "batch_size": "Batch size", "input_len": "Input length (tokens)",
    "output_len": "Output length (tokens)", "kv_block_size": "KV-cache block size (tokens)",
    "hardware_count": "Devices", "tensor_parallel": "Tensor parallel", "parallelism": "Parallelism",
    "dtype": "Weight / KV-cache dtype", "model": "Model", "system": "Hardware · engine",
    "hardware": "Hardware", "backend": "Engine", "engine": "Engine", "source": "Source",
    "concurrency": "Concurrency", "request_rate": "Request rate (req/s)",
    "seq_len": "Sequence length", "micro_batch": "Micro-batch", "grad_accum": "Gradient accumulation",
}
# Other names say their unit by suffix (the project's naming rule): timeout_s -> "timeout (s)".
_UNITS = [("_tok_s", "tok/s"), ("_req_s", "req/s"), ("_gib", "GiB"), ("_w", "W"), ("_j", "J"),
          ("_s", "s")]


def label(name: str) -> str:
    if name in FIELD_LABELS:
        return FIELD_LABELS[name]
    if m := metric(name):
        return m.label
    if name.startswith(ROOFLINE_EFFICIENCY):
        base = label(name[len(ROOFLINE_EFFICIENCY):]).split(" (")[0].lower()
        return f"Efficiency vs roofline ({base})"
    for suf, unit in _UNITS:
        if name.endswith(suf):
            return f"{name[:-len(suf)].replace('_', ' ')} ({unit})"
    return name.replace("_", " ")


def _si(v: float) -> str:
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{suf}"
    return f"{v:g}"


def tick_labels(values) -> list[str]:
    """Labels for measured x values: whole numbers in full (below 1e5), others with 3
    significant digits, or more where 3 would make two ticks read the same."""
    def one(v: float, digits: int) -> str:
        if float(v).is_integer() and abs(v) < 1e5:
            return str(int(v))
        return _si(float(f"{v:.{digits}g}")) if abs(v) >= 1e3 else f"{v:.{digits}g}"
    for digits in range(3, 8):
        labels = [one(v, digits) for v in values]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{v:g}" for v in values]


def log_ticks(values) -> tuple[list[float], list[str]] | None:
    """1-2-5 ticks with full labels across the data's range: Plotly's own log ticks label the
    in-between ticks '2' and '5', which reads as a wrong number."""
    v = np.asarray([a for a in values if a is not None and np.isfinite(a) and a > 0], dtype=float)
    if not len(v):
        return None
    lo, hi = int(np.floor(np.log10(v.min()))), int(np.ceil(np.log10(v.max())))
    for mant in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        ticks = [float(f"{m * 10.0 ** e:.6g}") for e in range(lo - 1, hi + 1) for m in mant]
        ticks = [t for t in ticks if v.min() / 1.3 <= t <= v.max() * 1.3]
        if len(ticks) >= 4:
            break
    if len(ticks) > 10:
        ticks = [t for t in ticks if f"{t:g}"[0] == "1"] or ticks
    if len(ticks) < 2:
        return None
    return ticks, [_si(t) for t in ticks]


def _apply_log_ticks(fig: Fig, axis: str, values, percent: bool = False) -> None:
    t = log_ticks(values)
    if t:
        text = [f"{v * 100:g}%" for v in t[0]] if percent else t[1]
        (fig.update_xaxes if axis == "x" else fig.update_yaxes)(tickvals=t[0], ticktext=text)


def _plain(v: Any) -> Any:
    """Arrays and Series -> lists with NaN as null (valid JSON for plotly.js)."""
    if isinstance(v, (pd.Series, pd.Index, np.ndarray)):
        v = v.tolist()
    if isinstance(v, list):
        return [None if isinstance(a, float) and math.isnan(a) else
                (a.item() if isinstance(a, np.generic) else a) for a in v]
    if isinstance(v, dict):
        return {k: _plain(a) for k, a in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _merge(dst: dict, src: dict) -> dict:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = _plain(v)
    return dst


class Fig:
    """The part of plotly.graph_objects.Figure's API the figure code uses, over plain dicts."""

    def __init__(self):
        self.data: list[dict] = []
        self.layout: dict = {}

    def add_trace(self, type_: str, **kw) -> None:
        self.data.append({"type": type_, **{k: _plain(v) for k, v in kw.items() if v is not None}})

    def update_layout(self, **kw) -> None:
        _merge(self.layout, kw)

    def update_xaxes(self, **kw) -> None:
        _merge(self.layout.setdefault("xaxis", {}), kw)

    def update_yaxes(self, **kw) -> None:
        _merge(self.layout.setdefault("yaxis", {}), kw)

    def add_annotation(self, **kw) -> None:
        self.layout.setdefault("annotations", []).append(_plain(kw))

    def add_hline(self, y: float, line: dict, annotation_text: str = "", log: bool = False) -> None:
        self.layout.setdefault("shapes", []).append(
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": y, "y1": y,
             "line": line})
        if annotation_text:
            # Annotations on a log axis take log10 of the value (plotly.js convention).
            self.add_annotation(text=annotation_text, xref="paper", x=0, yref="y",
                                y=math.log10(y) if log else y,
                                showarrow=False, xanchor="left", yanchor="bottom",
                                font=dict(size=11, color=line.get("color", "#555")))

    def to_dict(self) -> dict:
        return {"data": self.data, "layout": self.layout}

    @property
    def title(self) -> str:
        return (self.layout.get("title") or {}).get("text", "")

    @property
    def meta(self) -> dict:
        return self.layout.get("meta") or {}


def _color_map(series: list[str]) -> dict[str, str]:
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}


AXIS = dict(showgrid=True, gridcolor="#eceff4", linecolor="#c9ced8", ticks="outside",
            tickcolor="#c9ced8", zeroline=False, automargin=True, title=dict(standoff=10))


def _base_layout(fig: Fig, title: str, height: int) -> None:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=17)),
        paper_bgcolor="white", plot_bgcolor="white", colorway=PALETTE, showlegend=True,
        xaxis=dict(AXIS), yaxis=dict(AXIS),
        height=height, margin=dict(l=70, r=20, t=60, b=60),
        font=dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13),
        legend=dict(font=dict(size=11), bgcolor="rgba(255,255,255,0.85)",
                    bordercolor="#ddd", borderwidth=1),
        hoverlabel=dict(font=dict(size=12)),
    )


def base_figure(title: str, height: int = 520) -> Fig:
    """An empty figure in the library's look (for views built outside this module)."""
    fig = Fig()
    _base_layout(fig, title, height)
    return fig


def empty_figure(title: str, message: str, height: int = 420) -> Fig:
    fig = base_figure(title, height)
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=15, color="#666"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def xy_figure(agg: Aggregated, x: str, metric: str, stat: str = "mean", title: str | None = None,
              log_x: bool = False, log_y: bool = False, height: int = 520,
              ideal_scaling: bool = False) -> Fig:
    """y against x, one line (or bar group, for a categorical x) per series, with error bars,
    the roofline bound dotted in the series' colour, and hover details per point."""
    ylab = label(metric) + ("" if stat == "mean" else f" — {stat}")
    title = title or f"{label(metric)} vs {label(x).split(' (')[0].lower()}"
    pts = agg.points
    if pts.empty:
        return empty_figure(title, "no records with both of these fields under the filters")
    categorical = not pd.api.types.is_numeric_dtype(pts["x"])
    order = list(pts.groupby("series")["n_records"].sum().sort_values(ascending=False).index)
    shown = sorted(order[:MAX_SERIES])
    colors = _color_map(shown)
    fig = Fig()
    _base_layout(fig, title, height)
    has_bound = False
    mixed = "source" in pts and pts["source"].nunique() > 1  # mark reference only beside own
    for s in shown:
        p = pts[pts["series"] == s].sort_values("x")
        c = colors[s]
        ref = mixed and (p["source"] == "reference").all()
        err_minus = np.minimum(p["err"].to_numpy(), p["y"].to_numpy() * 0.999) if log_y else p["err"]
        eff = p["efficiency"].map(lambda e: "" if pd.isna(e) else f"<br>efficiency vs roofline: {e:.0%}")
        hover = (f"<b>{s}</b><br>{label(x)}: " + p["x"].astype(str) + f"<br>{ylab}: "
                 + p["y"].map(lambda v: f"{v:.4g}") + " ± " + p["err"].map(lambda v: f"{v:.2g}")
                 + "<br>records: " + p["n_records"].astype(str) + ", repeats: "
                 + p["n_repeats"].map(lambda v: f"{v:.0f}") + eff)
        common = dict(x=p["x"], y=p["y"], name=s, legendgroup=s, hovertext=hover,
                      hoverinfo="text",
                      error_y=dict(type="data", array=p["err"], arrayminus=err_minus,
                                   visible=bool((p["err"] > 0).any()), thickness=1.2, width=4,
                                   color=c))
        if categorical:
            fig.add_trace("bar", **dict(marker=dict(color=c, opacity=0.6 if ref else 0.85,
                                             pattern=dict(shape="/" if ref else "")),
                                 offsetgroup=s, **common))
        else:
            fig.add_trace("scatter", **dict(mode="lines+markers", line=dict(color=c, width=2.2,
                                     dash="dash" if ref else "solid"),
                                     marker=dict(size=8, color=c, symbol="circle-open" if ref else "circle",
                                                 line=dict(width=2, color=c)), **common))
        b = p[p["bound"].notna()]
        if len(b):
            has_bound = True
            bh = f"<b>{s}</b><br>roofline bound: " + b["bound"].map(lambda v: f"{v:.4g}")
            # One legend entry toggles every bound; with many lines they start hidden.
            fig.add_trace("scatter", **dict(
                x=b["x"], y=b["bound"], legendgroup="bound", showlegend=False, hovertext=bh,
                hoverinfo="text", offsetgroup=s if categorical else None,
                visible=True if len(shown) <= 8 else "legendonly",
                mode="markers" if categorical else "lines", name=f"{s} bound",
                marker=dict(symbol="line-ew-open", size=26, color=c, line=dict(width=3, color=c)),
                line=dict(color=c, width=1.5, dash="dot")))
        if ideal_scaling and not categorical and len(p) > 1:
            x0, y0 = p["x"].iloc[0], p["y"].iloc[0]
            fig.add_trace("scatter", **dict(x=p["x"], y=y0 * p["x"] / x0, mode="lines", legendgroup=s,
                                     showlegend=False, hoverinfo="skip",
                                     line=dict(color=c, width=1, dash="dashdot")))
    if ideal_scaling and not categorical:
        fig.add_trace("scatter", **dict(x=[None], y=[None], mode="lines",
                                        name="ideal linear scaling (dash-dot)",
                                        line=dict(color="#555", dash="dashdot", width=1)))
    if has_bound:
        fig.add_trace("scatter", **dict(x=[None], y=[None], mode="lines", legendgroup="bound",
                                        name="roofline bound (dotted; click to toggle)",
                                        visible=True if len(shown) <= 8 else "legendonly",
                                        line=dict(color="#555", dash="dot")))
        top = float((pts["y"] + pts["err"].fillna(0)).max())
        if not log_y and pts["bound"].max() > 3 * top > 0:
            # A bound far above the data would squash it flat: keep the data's scale.
            fig.update_yaxes(range=[0, top * 1.15])
            notes_bound = "some roofline bounds lie above the axis (hover a series' bound, or use log y)"
        else:
            notes_bound = ""
    else:
        notes_bound = ""
    eff_metric = metric.startswith("roofline_efficiency_")
    if eff_metric:
        fig.add_hline(y=1.0, line=dict(color="#b00", dash="dot", width=1.5),
                      annotation_text="roofline (100%)", log=log_y)
        fig.update_yaxes(tickformat=".0%")
    if categorical:
        fig.update_layout(barmode="group", scattermode="group", bargap=0.25)
    xs = sorted(pts["x"].dropna().unique()) if not categorical else None
    fig.update_xaxes(title=dict(text=label(x)), type="category" if categorical else ("log" if log_x else "linear"),
                     showgrid=True, gridcolor="#eee", zeroline=False)
    if xs is not None and len(xs) <= 14:
        # measured values (batch 1024, input 4096) read best in full; a measured rate
        # (69.7925 req/s) with the fewest digits that keep the ticks apart
        fig.update_xaxes(tickvals=xs, ticktext=tick_labels(xs))
    elif log_x and xs is not None:
        _apply_log_ticks(fig, "x", xs)
    if log_y:
        ys = list(pts["y"]) + list(pts["bound"].dropna()) + ([1.0] if eff_metric else [])
        _apply_log_ticks(fig, "y", ys, percent=eff_metric)
    if mixed:
        fig.update_layout(legend=dict(title=dict(text="<i>open markers, dashed: published reference</i>")))
    fig.update_yaxes(title=dict(text=ylab), type="log" if log_y else "linear", showgrid=True,
                     gridcolor="#eee", zeroline=not log_y)
    notes = [notes_bound] if notes_bound else []
    if len(order) > MAX_SERIES:
        notes.append(f"showing the {MAX_SERIES} largest of {len(order)} series; filter to see the rest")
    if agg.split_by:
        notes.append("series also split by " + ", ".join(agg.split_by))
    if agg.dropped_nonpositive:
        notes.append(f"{agg.dropped_nonpositive} record(s) ≤ 0 not drawable on a log axis")
    if notes:
        fig.add_annotation(text=" · ".join(notes), showarrow=False, xref="paper", yref="paper",
                           x=0, y=-0.16, xanchor="left", font=dict(size=11, color="#777"))
        fig.update_layout(margin=dict(b=80))
    fig.update_layout(meta={"points": int(len(pts)), "records": int(agg.records),
                            "series": len(shown)})
    return fig


def ecdf_figure(series: dict[str, list[float]], metric: str, log_x: bool = True,
                title: str | None = None, height: int = 460,
                summary: dict[str, dict[str, float]] | None = None) -> Fig:
    """Empirical CDFs: the whole latency distribution of each configuration, tail included.
    Configurations with no raw samples but a summary (p50/p90/p99: imported data) are drawn as
    markers at those quantiles."""
    title = title or f"Distribution of {label(metric).split(' (')[0].lower()}"
    names = sorted(series) + sorted(s for s in (summary or {}) if s not in series)
    if not names:
        return empty_figure(title, "no records with this metric under the filters")
    colors = _color_map(names)
    fig = Fig()
    _base_layout(fig, title, height)
    for s in names:
        v = np.sort(np.asarray(series.get(s) or [], dtype=float))
        if log_x:
            v = v[v > 0]
        if len(v):
            if len(v) > 2000:  # the curve, not 100k markers: 2000 quantiles draw the same line
                q = np.linspace(0, 1, 2000)
                xv, yv = np.quantile(v, q), q
            else:
                xv, yv = v, np.arange(1, len(v) + 1) / len(v)
            p50, p99 = np.percentile(v, [50, 99])
            fig.add_trace("scatter", **dict(x=xv, y=yv, mode="lines", name=f"{s} (n={len(v)})",
                                     line=dict(color=colors[s], width=2, shape="hv"),
                                     hovertemplate=f"<b>{s}</b><br>%{{x:.4g}} s → %{{y:.1%}}"
                                                   f"<br>p50 {p50:.4g} · p99 {p99:.4g}<extra></extra>"))
        elif summary and s in summary:
            qs = {k: v for k, v in summary[s].items() if v is not None and not np.isnan(v)}
            if qs.get("n", 1) <= 1:  # one value is not a distribution: draw it as one marker
                xs, ys, what = [qs.get("mean", qs.get("p50"))], [0.5], "one value"
            else:
                qmap = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
                xs = [qs[k] for k in qmap if k in qs]
                ys = [qmap[k] for k in qmap if k in qs]
                what = "p50/p90/p95/p99 only"
            fig.add_trace("scatter", **dict(x=xs, y=ys, mode="markers", name=f"{s} ({what})",
                                            marker=dict(color=colors[s], size=11, symbol="diamond-open",
                                                        line=dict(width=2, color=colors[s]))))
    fig.update_xaxes(title=dict(text=label(metric)), type="log" if log_x else "linear")
    if log_x:
        _apply_log_ticks(fig, "x", [a for tr in fig.data for a in (tr.get("x") or [])
                                    if a is not None])
    fig.update_yaxes(title=dict(text="fraction of requests / tokens ≤ x"), range=[0, 1.02],
                     tickformat=".0%", showgrid=True, gridcolor="#eee")
    fig.update_layout(meta={"series": len(names)})
    return fig


def pareto_figure(ranked: pd.DataFrame, title: str = "Throughput against latency",
                  height: int = 480, log_x: bool = True) -> Fig:
    """Every candidate configuration as a point (colour: hardware · engine), the Pareto
    frontier (no other point is both faster and higher-throughput) as a step line."""
    if ranked.empty:
        return empty_figure(title, "no configuration matches the query")
    d = ranked[ranked["latency_s"].notna() & ranked["throughput_tok_s"].notna()]
    if d.empty:
        return empty_figure(title, "matching configurations lack latency or throughput")
    systems = list(d.groupby("system")["throughput_tok_s"].max().sort_values(ascending=False).index)
    colors = _color_map(systems[:MAX_SERIES])
    fig = Fig()
    _base_layout(fig, title, height)
    for s in systems[:MAX_SERIES]:
        p = d[d["system"] == s]
        eff = p["efficiency"].map(lambda e: "–" if pd.isna(e) else f"{e:.0%}") if "efficiency" in p \
            else pd.Series("–", index=p.index)
        hover = (f"<b>{s}</b><br>" + p["config"].astype(str) + "<br>throughput: "
                 + p["throughput_tok_s"].map(lambda v: f"{v:,.0f}") + " tok/s<br>latency: "
                 + p["latency_s"].map(lambda v: f"{v:.3g}") + " s<br>efficiency: " + eff
                 + "<br>rank " + p["rank"].astype(str))
        fig.add_trace("scatter", **dict(
            x=p["latency_s"], y=p["throughput_tok_s"], mode="markers", name=s, hovertext=hover,
            hoverinfo="text",
            marker=dict(color=colors[s], size=np.where(p["pareto"], 13, 8),
                        symbol=np.where((p["source"] == "reference") & (d["source"].nunique() > 1),
                                        "circle-open", "circle"),
                        line=dict(width=np.where(p["pareto"], 2.5, 1.5), color=colors[s]))))
    f = d[d["pareto"]].sort_values("latency_s")
    if len(f):
        fig.add_trace("scatter", **dict(x=f["latency_s"], y=f["throughput_tok_s"], mode="lines",
                                 name="Pareto frontier", line=dict(color="#222", width=1.5, dash="dot",
                                                                   shape="hv"), hoverinfo="skip"))
    fig.update_xaxes(title=dict(text="Latency (s) — lower is better"), type="log" if log_x else "linear",
                     showgrid=True, gridcolor="#eee")
    if log_x:
        _apply_log_ticks(fig, "x", d["latency_s"])
    if d["source"].nunique() > 1:
        fig.update_layout(legend=dict(title=dict(text="<i>open markers: published reference</i>")))
    fig.update_yaxes(title=dict(text="Throughput (tok/s) — higher is better"), showgrid=True,
                     gridcolor="#eee")
    fig.update_layout(meta={"points": int(len(d)), "frontier": int(len(f))})
    return fig


def energy_pareto_figure(ranked: pd.DataFrame, title: str = "Speed per user, per device and energy",
                         height: int = 480) -> Fig:
    """Tokens/s per user (x) against tokens/s per device (y), each point coloured by joules per
    token; the configurations on the three-axis frontier (best.pareto_front) ringed in black."""
    if ranked.empty:
        return empty_figure(title, "no configuration matches the query")
    d = ranked[ranked["tok_s_per_user"].notna() & ranked["throughput_per_device"].notna()]
    if d.empty:
        return empty_figure(title, "matching configurations lack TPOT or throughput")
    fig = Fig()
    _base_layout(fig, title, height)
    j = d["energy_per_token_j"]
    hover = ("<b>" + d["system"].astype(str) + "</b><br>" + d["config"].astype(str)
             + "<br>per user: " + d["tok_s_per_user"].map(lambda v: f"{v:.3g}") + " tok/s"
             + "<br>per device: " + d["throughput_per_device"].map(lambda v: f"{v:,.0f}") + " tok/s"
             + "<br>energy: " + j.map(lambda v: "no power reading" if pd.isna(v) else f"{v:.3g} J/tok")
             + "<br>rank " + d["rank"].astype(str))
    front = d["pareto_energy"].to_numpy()
    fig.add_trace("scatter", **dict(
        x=d["tok_s_per_user"], y=d["throughput_per_device"], mode="markers", name="configuration",
        hovertext=hover, hoverinfo="text", showlegend=False,
        marker=dict(color=j.fillna(np.nan), colorscale="Viridis", reversescale=True, showscale=True,
                    colorbar=dict(title=dict(text="J/token")), size=np.where(front, 13, 8),
                    line=dict(width=np.where(front, 2.5, 0.5), color="#222"))))
    fig.update_xaxes(title=dict(text="Tokens/s per user (1 / TPOT) — higher is better"), type="log",
                     showgrid=True, gridcolor="#eee")
    fig.update_yaxes(title=dict(text="Tokens/s per device — higher is better"), type="log",
                     showgrid=True, gridcolor="#eee")
    fig.update_layout(meta={"points": int(len(d)), "frontier": int(front.sum()),
                            "with_energy": int(j.notna().sum())})
    return fig


def strip_figure(points: pd.DataFrame, x: str, metric: str, color: str = "source",
                 title: str | None = None, height: int = 500, log_y: bool = False) -> Fig:
    """One dot per configuration (duplicates already merged) over a box of their spread, by
    category: e.g. how close each hardware · engine came to its roofline, own and reference
    side by side. A distribution across configurations, never their average."""
    title = title or f"{label(metric)} by {label(x).split(' (')[0].lower()}"
    if points.empty:
        return empty_figure(title, "no records with this metric under the filters")
    groups = sorted(points[color].dropna().unique()) if color in points else ["all"]
    colors = {"own": "#e45756", "reference": "#4c78a8"} if color == "source" else _color_map(groups)
    cats = list(points.groupby(x)["y"].median().sort_values(ascending=False).index)
    fig = Fig()
    _base_layout(fig, title, height)
    summarised = len(points) > MAX_STRIP_POINTS
    for g in groups:
        p = points[points[color] == g] if color in points else points
        style = dict(name=str(g), offsetgroup=str(g), line=dict(color=colors.get(g, "#333"), width=1.2),
                     fillcolor="rgba(0,0,0,0)")
        if summarised:  # quartiles computed here: the browser gets 5 numbers per box, not every dot
            q = p.groupby(x)["y"].quantile([0, 0.25, 0.5, 0.75, 1]).unstack()
            fig.add_trace("box", **dict(x=list(q.index), lowerfence=q[0.0], q1=q[0.25],
                                        median=q[0.5], q3=q[0.75], upperfence=q[1.0], **style))
        else:
            fig.add_trace("box", **dict(
                x=p[x], y=p["y"], boxpoints="all", jitter=0.45, pointpos=0,
                marker=dict(size=5, color=colors.get(g, "#333"), opacity=0.7),
                hovertext=p.get("hover"), hoverinfo="text+y", **style))
    if summarised:
        fig.add_annotation(text=f"{len(points):,} configurations: boxes only (whiskers: min–max)",
                           showarrow=False, xref="paper", yref="paper", x=1, y=1.04,
                           xanchor="right", font=dict(size=11, color="#777"))
    fig.update_layout(boxmode="group")
    fig.update_xaxes(title=dict(text=label(x)), type="category", categoryorder="array",
                     categoryarray=cats, tickangle=-30 if len(cats) > 6 else 0, automargin=True)
    fig.update_layout(margin=dict(l=90, b=120))
    fig.update_yaxes(title=dict(text=label(metric)), type="log" if log_y else "linear",
                     showgrid=True, gridcolor="#eee")
    if metric.startswith("roofline_efficiency_"):
        fig.add_hline(y=1.0, line=dict(color="#b00", dash="dot", width=1.5),
                      annotation_text="roofline (100%)", log=log_y)
        fig.update_yaxes(tickformat=".0%")
        if log_y:
            _apply_log_ticks(fig, "y", list(points["y"]) + [1.0], percent=True)
    fig.update_layout(meta={"points": int(len(points))})
    return fig
