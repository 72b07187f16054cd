"""One table per record kind: what a kind's records measured, one row per configuration.

A figure needs a trend (two x values or more); a store with one perplexity run or one
training point has none, yet its numbers must be readable. So every kind the store holds gets
a table with the fields that tell its rows apart and the metrics that kind is about.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmbench.metrics import column_header
from llmbench.numfmt import fmt
from llmbench.columns import distinguishing, said_once

# (column, how to show it) per kind, headed by the catalog's short names
# (metrics.column_header); a metric no record has is left out.
KIND_METRICS: dict[str, list[tuple[str, str]]] = {
    "perplexity": [("perplexity_mean", "num"), ("nll_per_token_mean", "num"),
                   ("scored_tokens_mean", "int"), ("eval_throughput_tok_s_mean", "num")],
    "training": [("tokens_per_s_mean", "num"), ("tflops_mean", "num"), ("mfu_mean", "pct"),
                 ("step_time_s_mean", "num"), ("mem_peak_gib_mean", "num"),
                 ("avg_power_w_mean", "int"), ("scaling_efficiency_mean", "pct"),
                 ("roofline_efficiency_tokens_per_s", "pct")],
    "serving": [("ttft_s_p50", "num"), ("ttft_s_p99", "num"), ("tpot_s_p50", "num"),
                ("e2e_s_p50", "num"), ("output_throughput_tok_s_mean", "num"),
                ("request_throughput_req_s_mean", "num"), ("goodput_req_s_mean", "num")],
    "inference": [("batch_latency_s_mean", "num"), ("ttft_s_p50", "num"), ("tpot_s_p50", "num"),
                  ("output_throughput_tok_s_mean", "num"), ("total_throughput_tok_s_mean", "num"),
                  ("roofline_efficiency_total_throughput_tok_s", "pct")],
}
KIND_TITLES = {"perplexity": "Perplexity", "training": "Training throughput and MFU",
               "serving": "Serving: latency and throughput per load",
               "inference": "Offline inference"}
# How a serving row's load reads: the one field that set it, never every option.
LOAD_FIELDS = ("concurrency", "request_rate", "max_concurrency")
MAX_ROWS = 60
VERSION = "roofline_version"
# Shown by the 'system' column or beside the load, never as their own column.
_FOLDED = {"hardware", "hardware_count", "backend", "kind", "status", "load", *LOAD_FIELDS}
# Derived labels (report/data.py) stand for their parts; identity columns are the 'system'.
_SHOWN_ELSEWHERE = {"system", "engine", "source", "model_params_b", "tensor_parallel",
                    "pipeline_parallel", "expert_parallel", "weight_dtype", "weight_quant",
                    "kv_cache_dtype"}


def kind_table(df: pd.DataFrame, kind: str) -> tuple[list[dict[str, str]], str]:
    """Rows (display strings) for the ok records of one kind, duplicates of a configuration
    merged by their mean, and a note (the values every row shares, rows left out)."""
    d = df[(df["kind"] == kind) & (df["status"] == "ok")]
    metrics = [(c, column_header(c), k) for c, k in KIND_METRICS.get(kind, [])
               if c in d and d[c].notna().any()]
    if d.empty or not metrics:
        return [], ""
    cols = list(d.columns)
    varying, same = distinguishing([c for c in cols if c not in _FOLDED and not c.startswith("_")],
                                   lambda c: d[c].where(d[c].notna(), None).tolist())
    shown, headers = said_once([c for c in varying if c not in _SHOWN_ELSEWHERE],
                               lambda c: [value_text(v) for v in d[c]],
                               lambda c: c.replace("_", " "))
    # which roofline version an efficiency comes from (definitions.py): rows of two versions
    # are never merged into one mean
    version = [VERSION] if any(c.startswith("roofline_") for c, _, _ in metrics) \
        and VERSION in d and d[VERSION].notna().any() else []
    keys = ["system", *([c for c in LOAD_FIELDS if kind == "serving" and c in d and d[c].notna().any()]),
            *shown, *version]
    keys = list(dict.fromkeys(keys))
    g = d.assign(**{k: d[k].astype(object).where(d[k].notna(), "–") for k in keys}) \
        .groupby(keys, dropna=False, sort=False)
    merged = g[[c for c, _, _ in metrics]].mean()
    merged["records"] = g.size()
    if "perplexity_std" in d:
        merged["_std"] = g["perplexity_std"].mean()
    # Numbers in numeric order (concurrency 2 before 16), text after, '–' last.
    merged = merged.reset_index().sort_values(keys, key=lambda s: s.map(_order), kind="stable")
    rows = []
    for _, r in merged.head(MAX_ROWS).iterrows():
        # What ran, what it measured, then the settings that tell the rows apart: with many
        # settings (training) the numbers stay in view.
        row = {"hardware · engine": str(r["system"])}
        if "model" in shown:
            row["model"] = value_text(r["model"])
        if kind == "serving":
            row["load"] = load_label(r)
        for c, h, how in metrics:
            row[h] = _show(r[c], how)
            if c == "perplexity_mean" and "_std" in r and not pd.isna(r["_std"]) and r["_std"] > 0:
                row[h] += f" ± {fmt(float(r['_std']), 2)}"
        for k in shown:
            if k != "model":
                row[headers[k]] = value_text(r[k])
        if version:
            row["roofline v"] = value_text(r[VERSION])
        row["records"] = str(int(r["records"]))
        rows.append(row)
    notes = [f"every row: model {same['model']}"] if "model" in same else []
    if len(merged) > MAX_ROWS:
        notes.append(f"showing {MAX_ROWS} of {len(merged)} configurations")
    return rows, " · ".join(notes)


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
    """'–' for not set, 16 for 16.0."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _order(v):
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (2, 0.0, "") if v == "–" else (1, 0.0, str(v))


def _show(v, how: str) -> str:
    if v is None or pd.isna(v):
        return "–"
    if how == "pct":
        return f"{v:.1%}"
    if how == "int":
        return f"{v:,.0f}"
    return fmt(float(v))


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
