"""One table per record kind: what a kind's records measured, one row per configuration.

A figure needs a trend (two x values or more); a store with one perplexity run or one
training point has none, yet its numbers must be readable. So every kind the store holds gets
a table with the fields that tell its rows apart and the metrics that kind is about.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmbench.metrics import column_header, format_value, headline
from llmbench.numfmt import fmt
from llmbench.report import shapes
from llmbench.columns import distinguishing, said_once

KIND_TITLES = {"perplexity": "Perplexity", "training": "Training throughput and MFU",
               "serving": "Serving: latency and throughput per load",
               "inference": "Offline inference"}
# How a serving row's load reads: the one field that set it, never every option.
LOAD_FIELDS = ("concurrency", "request_rate", "max_concurrency")
MAX_ROWS = 60
VERSION = "roofline_version"
# Readings of the measured window that make a row's numbers suspect (store.flatten): flagged.
FLAGS = {"throttled": "throttled", "contended": "contended", "energy_short_window": "energy window < 2 s"}
# Shown by the 'system' column or beside the load, never as a setting.
_FOLDED = {"hardware", "hardware_count", "backend", "kind", "status", "load", *LOAD_FIELDS}
# Derived labels (report/data.py) stand for their parts; identity columns are the 'system'.
_SHOWN_ELSEWHERE = {"system", "engine", "source", "model_params_b", "tensor_parallel",
                    "pipeline_parallel", "expert_parallel", "weight_dtype", "weight_quant",
                    "kv_cache_dtype"}
# Where a run reached its server and its model files: no setting of the point.
_WHERE = {"url", "gguf", "model_dir"}
# The one column a kind table lets wrap: every setting that tells its rows apart, in words.
SETTINGS = "settings"


def kind_tables(df: pd.DataFrame, kind: str) -> list[tuple[str, str, list[dict[str, str]], str]]:
    """One table per request shape of a kind's ok records (report/shapes.py): (shape, title,
    rows, note), each under its shape's headline metrics; the plain text shape first."""
    d = df[(df["kind"] == kind) & (df["status"] == "ok")]
    out = []
    for shape in shapes.shapes_in(d):
        rows, note = kind_table(shapes.of_shape(d, shape), kind, shape)
        if rows:
            out.append((shape, shapes.shape_title(KIND_TITLES[kind], shape), rows, note))
    return out


def kind_table(df: pd.DataFrame, kind: str, shape: str | None = None
               ) -> tuple[list[dict[str, str]], str]:
    """Rows (display strings) for the ok records of one kind, duplicates of a configuration
    merged by their mean, and a note (the values every row shares, rows left out). The
    metrics are the catalog's for the kind and request shape (metrics.headline), each
    formatted by its unit; the fields that differ between the rows (llmbench.columns, as
    `llmbench results` picks them) are said in one 'settings' column, so that none hides off
    the card's edge. `shape`: the rows' one request shape (kind_tables splits them)."""
    d = df[(df["kind"] == kind) & (df["status"] == "ok")]
    metrics = [c for c in headline(kind, shape) if c in d and d[c].notna().any()]
    if d.empty or not metrics:
        return [], ""
    cols = list(d.columns)
    varying, same = distinguishing([c for c in cols if c not in _FOLDED and not c.startswith("_")],
                                   lambda c: d[c].where(d[c].notna(), None).tolist())
    shown, headers = said_once([c for c in varying if c not in _SHOWN_ELSEWHERE
                                and c.removeprefix("opt_") not in _WHERE],
                               lambda c: [value_text(v) for v in d[c]],
                               lambda c: c.removeprefix("opt_").replace("_", " "))
    # which roofline version an efficiency comes from (definitions.py): rows of two versions
    # are never merged into one mean
    version = [VERSION] if any(c.startswith("roofline_") for c in metrics) \
        and VERSION in d and d[VERSION].notna().any() else []
    keys = ["system", *([c for c in LOAD_FIELDS if kind == "serving" and c in d and d[c].notna().any()]),
            *shown, *version]
    keys = list(dict.fromkeys(keys))
    flags = [f for f in FLAGS if f in d and d[f].fillna(False).astype(bool).any()]
    g = d.assign(**{k: d[k].astype(object).where(d[k].notna(), "–") for k in keys},
                 **{f: d[f].fillna(False).astype(bool) for f in flags},
                 _date=d["created_at"].astype(str).str[:10] if "created_at" in d else "") \
        .groupby(keys, dropna=False, sort=False)
    merged = g[metrics].mean()
    merged["records"] = g.size()
    merged["_dates"] = g["_date"].agg(lambda s: sorted(set(s)))
    for f in flags:
        merged[f] = g[f].any()
    if "perplexity_std" in d:
        merged["_std"] = g["perplexity_std"].mean()
    # Numbers in numeric order (concurrency 2 before 16), text after, '–' last.
    merged = merged.reset_index().sort_values(keys, key=lambda s: s.map(_order), kind="stable")
    settings = [k for k in shown if k != "model"]
    # A setting is said where a row departs from the table's usual value (the note says the
    # usual ones): what tells a row apart reads at once, not among twenty shared values.
    # With a setting or two, each is said in every row.
    usual = {sys_: {k: grp[k].map(value_text).mode().iloc[0] for k in settings}
             for sys_, grp in merged.groupby("system", sort=False)} if len(settings) > 2 else \
        {sys_: {} for sys_ in merged["system"].unique()}
    rows = []
    for _, r in merged.head(MAX_ROWS).iterrows():
        # What ran, what it measured, then the settings that tell the rows apart.
        row = {"hardware · engine": str(r["system"])}
        if "model" in shown:
            row["model"] = value_text(r["model"])
        if kind == "serving":
            row["load"] = load_label(r)
        for c in metrics:
            row[column_header(c)] = format_value(c, r[c])
            if c == "perplexity_mean" and "_std" in r and not pd.isna(r["_std"]) and r["_std"] > 0:
                row[column_header(c)] += f" ± {fmt(float(r['_std']), 2)}"
        if settings:
            row[SETTINGS] = " · ".join(f"{headers[k]} {value_text(r[k])}" for k in settings
                                       if value_text(r[k]) not in (usual[r["system"]].get(k), "–")) \
                or "as usual"
        if flags:
            row["flags"] = ", ".join(FLAGS[f] for f in flags if r[f]) or "–"
        if version:
            row["roofline v"] = value_text(r[VERSION])
        row["measured"] = _dates_text(r["_dates"])
        row["records"] = str(int(r["records"]))
        rows.append(row)
    notes = [f"every row: model {same['model']}"] if "model" in same else []
    # the usual value of a setting only where some row of that system departs from it (what
    # a reader needs to read that row): three engines' every shared value made a seven-line
    # paragraph above the table (issue 54 item 10)
    shown_rows = merged.head(MAX_ROWS)
    for sys_, us in usual.items():
        mine = shown_rows[shown_rows["system"] == sys_]
        departs = {k for k in us if (mine[k].map(value_text) != us[k]).any()}
        said = " · ".join(f"{headers[k]} {v}" for k, v in us.items() if v != "–" and k in departs)
        if said:
            notes.append(f"usual on {sys_} (rows say where they differ): {said}")
    if len(merged) > MAX_ROWS:
        notes.append(f"showing {MAX_ROWS} of {len(merged)} configurations")
    return rows, " · ".join(notes)


def _dates_text(dates: list[str]) -> str:
    """'2026-12-01' or '2026-12-01, 12-02': the days a row's records were measured on."""
    dates = [x for x in dates if x and x != "None"]
    if not dates:
        return "–"
    return ", ".join([dates[0]] + [x[5:] if x[:4] == dates[0][:4] else x for x in dates[1:]])


def load_label(r: pd.Series) -> str:
    """'concurrency 8' for closed loop, 'rate 4 req/s' for open loop (with its cap)."""
    c, rate, cap = (r.get(k, "–") for k in LOAD_FIELDS)
    if value_text(c) != "–":
        return f"concurrency {value_text(c)}"
    if value_text(rate) != "–":
        s = f"rate {value_text(rate)} req/s"
        return s + (f" (≤ {value_text(cap)} in flight)" if value_text(cap) != "–" else "")
    return "all at once" + (f" (≤ {value_text(cap)} in flight)" if value_text(cap) != "–" else "")


def value_text(v) -> str:
    """'–' for not set, 16 for 16.0, a measured rate with 4 significant digits (8.757, not
    8.757144950901363), a file by its name (a trace's absolute path names another machine)."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        return str(int(v)) if float(v).is_integer() else f"{float(v):.4g}"
    if isinstance(v, str) and v.startswith("/") and len(v) > 1:
        return v.rstrip("/").rsplit("/", 1)[-1]
    return str(v)


def _order(v):
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (2, 0.0, "") if v == "–" else (1, 0.0, str(v))


# An imported tool's own figure (store `tool_<metric>_*`, importers/common.py tool_figure) beside
# llmbench's of the same quantity; where the tool's reference is llmbench's `_from_send_s` or
# its chunk gaps, that is what the record holds instead.
OURS_ALTERNATES = {"ttft_s": ("ttft_s", "ttft_from_send_s"), "e2e_s": ("e2e_s", "e2e_from_send_s"),
                   "itl_s": ("itl_s", "itl_per_chunk_s")}


def tool_figures_table(df: pd.DataFrame) -> list[dict[str, str]]:
    """One row per imported record and figure the tool reported: the tool's median as it
    reported it, llmbench's median of its own definition, their difference, and what differs
    (the figure's label). An ITL whose gaps were bunched by the client says so."""
    if df.empty or "source_tool" not in df:
        return []
    d = df[df["source_tool"].notna() & (df["status"] == "ok")]
    figs = sorted({c[len("tool_"):-len("_label")] for c in d.columns
                   if c.startswith("tool_") and c.endswith("_label")})
    rows = []
    for _, r in d.iterrows():
        for f in figs:
            theirs = _stat(r, f"tool_{f}")
            if theirs is None:
                continue
            name = next((n for n in OURS_ALTERNATES.get(f, (f,)) if _stat(r, n) is not None), f)
            ours = _stat(r, name)
            flag = r.get(f"{name}_client_limited")
            limited = isinstance(flag, (bool, np.bool_)) and bool(flag)
            row = {"tool": str(r["source_tool"]), "hardware · engine": str(r.get("system", "")),
                   "model": value_text(r.get("model")), "load": load_label(r),
                   "figure": f, "tool's median": fmt(theirs),
                   "llmbench": "–" if ours is None else f"{fmt(ours)} ({name})" + (
                       " client-limited" if limited else ""),
                   "difference": "–" if ours is None else f"{fmt(ours - theirs)}",
                   "what differs": str(r.get(f"tool_{f}_label") or "")}
            rows.append(row)
    return rows[:MAX_ROWS]


def _stat(r: pd.Series, metric: str) -> float | None:
    """A metric's median, else its mean (a whole-run figure), else None."""
    for s in ("median", "mean"):
        v = r.get(f"{metric}_{s}")
        if v is not None and not pd.isna(v):
            return float(v)
    return None
