"""Find the best configuration for a workload: rank hardware x engine x configuration.

Throughput is total tokens/s (prompt + generated over wall time, the paper's definition, the
one every source records); latency is the batch latency (offline) or the median end-to-end
request latency (serving). TTFT / TPOT SLOs use a record's measured value (p90 when present,
else the mean). A record without a measured TTFT (the published offline data) is held to a
conservative bound instead: TTFT <= batch latency and TPOT <= batch latency / (output_len - 1)
(every token came within the batch); it passes only when that bound already meets the SLO, and
the table marks the value '≤'.

Energy is a third axis: joules per token (prompt + generated; a serving record's own
energy_per_token_j under load, else power / throughput), beside tokens/s per user (1 / TPOT,
the speed one stream sees) and tokens/s per device. `pareto_energy` marks the configurations
no other beats on all three at once.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from llmbench.report.data import Data
from llmbench.report.tables import load_label, value_text

RankBy = Literal["throughput", "throughput_per_device", "tokens_per_joule", "energy_per_token",
                 "latency", "efficiency"]
# Offline batches and served requests are different measurements (a batch latency is not a
# request's E2E): they are ranked apart, never in one table.
MODES = {"offline": ("inference", "reference", "estimate"), "serving": ("serving",)}
# Estimates (llmbench predict --save) are ranked only when `sources` names them, and then marked.
ESTIMATE = "estimate"


class BestQuery(BaseModel):
    model: str | None = Field(None, description="model name (exact or substring)")
    min_params_b: float | None = None
    max_params_b: float | None = None
    input_len: int | None = None
    output_len: int | None = None
    ttft_slo_s: float | None = Field(None, gt=0)
    tpot_slo_s: float | None = Field(None, gt=0)
    max_devices: int | None = Field(None, ge=1)
    max_power_w: float | None = Field(None, gt=0)
    sources: list[str] = Field(default_factory=lambda: ["own", "reference"])
    rank_by: RankBy = "throughput"
    mode: Literal["offline", "serving"] | None = Field(
        None, description="offline (batch) or serving records; default: offline when there are any")
    top: int = 50


def _num(df: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(df[col], errors="coerce") if col in df.columns else \
        pd.Series(np.nan, index=df.index, dtype=float)


def _first(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    out = pd.Series(np.nan, index=df.index, dtype=float)
    for c in cols:
        out = out.fillna(_num(df, c))
    return out


def _nearest(values: pd.Series, want: int) -> tuple[int | None, bool]:
    v = pd.to_numeric(values, errors="coerce").dropna().unique()
    if len(v) == 0:
        return None, False
    if want in v:
        return want, True
    best = min(v, key=lambda a: abs(np.log(max(a, 1)) - np.log(max(want, 1))))
    return int(best), False


def find_best(data: Data, q: BestQuery) -> tuple[pd.DataFrame, list[str]]:
    """Ranked configurations (one row each, duplicates merged) and notes on what was
    excluded and why."""
    notes: list[str] = []
    df = data.df
    if df.empty:
        return pd.DataFrame(), ["the store is empty"]
    notes += estimate_notes(df, q.sources)
    df = df[(df["status"] == "ok") & df["source"].isin(q.sources)]
    df = df[df["kind"].isin(MODES["offline"] + MODES["serving"])]
    if q.model:
        exact = df["model"] == q.model
        df = df[exact] if exact.any() else df[df["model"].fillna("").str.contains(q.model, case=False,
                                                                                 regex=False)]
    if q.min_params_b is not None:
        df = df[df["model_params_b"] >= q.min_params_b]
    if q.max_params_b is not None:
        df = df[df["model_params_b"] <= q.max_params_b]
    mode = q.mode or ("offline" if df["kind"].isin(MODES["offline"]).any() else "serving")
    other = "serving" if mode == "offline" else "offline"
    n_other = int(df["kind"].isin(MODES[other]).sum())
    if n_other and q.mode is None:
        notes.append(f"{n_other} {other} record(s) left out: {other} results are ranked apart "
                     f"from {mode} ones")
    df = df[df["kind"].isin(MODES[mode])]
    for fld, want in (("input_len", q.input_len), ("output_len", q.output_len)):
        if want is None or fld not in df.columns:
            continue
        got, exact = _nearest(df[fld], want)
        if got is None:
            return pd.DataFrame(), [f"no record has {fld}"]
        if not exact:
            notes.append(f"no record with {fld}={want}; using the nearest, {got}")
        df = df[df[fld] == got]
    if q.max_devices is not None:
        df = df[pd.to_numeric(df["hardware_count"], errors="coerce").fillna(1) <= q.max_devices]
    d = pd.DataFrame(index=df.index)
    d["throughput_tok_s"] = _first(df, ["total_throughput_tok_s_mean", "output_throughput_tok_s_mean"])
    only_out = _num(df, "total_throughput_tok_s_mean").isna() & d["throughput_tok_s"].notna()
    d["throughput_std"] = _num(df, "total_throughput_tok_s_std")
    d["latency_s"] = _first(df, ["batch_latency_s_mean", "e2e_s_p50"])
    out_len = _num(df, "output_len")
    ttft = _first(df, ["ttft_s_p90", "ttft_s_mean"])
    tpot = _first(df, ["tpot_s_p90", "tpot_s_mean"])
    d["ttft_bounded"] = ttft.isna() & d["latency_s"].notna()
    d["tpot_bounded"] = tpot.isna() & d["latency_s"].notna() & (out_len > 1)
    d["ttft_s"] = ttft.fillna(d["latency_s"])
    d["tpot_s"] = tpot.fillna(d["latency_s"] / (out_len - 1).where(out_len > 1))
    d["power_w"] = _num(df, "avg_power_w_mean")
    d["tokens_per_joule"] = d["throughput_tok_s"] / d["power_w"].where(d["power_w"] > 0)
    # measured under load where the record has it (serving), else from the mean power
    d["energy_per_token_j"] = _num(df, "energy_per_token_j_mean").fillna(1 / d["tokens_per_joule"])
    eff_cols = [c for c in ("roofline_efficiency_total_throughput_tok_s",
                            "roofline_efficiency_output_throughput_tok_s",
                            "roofline_efficiency_batch_latency_s") if c in df.columns]
    d["efficiency"] = _first(df, eff_cols)
    d["bound_tok_s"] = _first(df, ["roofline_bound_total_throughput_tok_s",
                                   "roofline_bound_output_throughput_tok_s"])
    d["devices"] = pd.to_numeric(df["hardware_count"], errors="coerce").fillna(1)
    d["throughput_per_device"] = d["throughput_tok_s"] / d["devices"]
    d["tok_s_per_user"] = 1 / d["tpot_s"].where(d["tpot_s"] > 0)
    d = d[d["throughput_tok_s"].notna()]
    if only_out[d.index].any():
        notes.append(f"{int(only_out[d.index].sum())} record(s) have no total throughput; their "
                     "output throughput (generated tok/s only, lower) is used")
    for slo, col in ((q.ttft_slo_s, "ttft_s"), (q.tpot_slo_s, "tpot_s")):
        if slo is None:
            continue
        ok = d[col] <= slo
        n_unknown = int(d[col].isna().sum())
        if n_unknown:
            notes.append(f"{n_unknown} record(s) without {col} or a bound on it left out")
        d = d[ok]
    if q.max_power_w is not None:
        n_unknown = int(d["power_w"].isna().sum())
        if n_unknown:
            notes.append(f"{n_unknown} record(s) without a power reading left out by the power budget")
        d = d[d["power_w"] <= q.max_power_w]
    if d.empty:
        return pd.DataFrame(), notes + ["no configuration meets the query"]
    cfg_fields = [c for c in data.config_fields if c in df.columns]
    keys = [c for c in cfg_fields if df.loc[d.index, c].nunique(dropna=False) > 1 or
            c in ("source", "system", "model") or
            (mode == "serving" and c in ("concurrency", "request_rate", "max_concurrency"))]
    d = d.join(df.loc[d.index, keys])
    num = ["throughput_tok_s", "latency_s", "ttft_s", "tpot_s", "power_w", "tokens_per_joule",
           "efficiency", "bound_tok_s", "devices", "throughput_per_device", "energy_per_token_j",
           "tok_s_per_user"]
    g = d.groupby(keys, dropna=False)
    merged = g[num].mean()
    merged["throughput_std"] = g["throughput_tok_s"].std().fillna(0.0)
    own_std = g["throughput_std"].mean()
    merged["throughput_std"] = np.sqrt(merged["throughput_std"] ** 2 + own_std.fillna(0.0) ** 2)
    merged["ttft_bounded"] = g["ttft_bounded"].all()
    merged["tpot_bounded"] = g["tpot_bounded"].all()
    merged["records"] = g.size()
    merged = merged.reset_index()
    merged["pareto"] = pareto_mask(merged["latency_s"].to_numpy(), merged["throughput_tok_s"].to_numpy())
    merged["pareto_energy"] = pareto_front(np.column_stack([
        merged["tok_s_per_user"], merged["throughput_per_device"], -merged["energy_per_token_j"]]))
    by = {"throughput": ("throughput_tok_s", False), "throughput_per_device": ("throughput_per_device", False),
          "tokens_per_joule": ("tokens_per_joule", False),
          "energy_per_token": ("energy_per_token_j", True), "latency": ("latency_s", True),
          "efficiency": ("efficiency", False)}[q.rank_by]
    merged = merged.sort_values(by[0], ascending=by[1], na_position="last", kind="stable")
    merged["rank"] = np.arange(1, len(merged) + 1)
    if len(merged) > q.top:
        notes.append(f"showing the top {q.top} of {len(merged)} configurations")
    # What is shown: the table's rows and, for the figure, the best KEEP plus the frontier.
    keep = merged[(merged["rank"] <= max(q.top, KEEP)) | merged["pareto"] | merged["pareto_energy"]].copy()
    if len(keep) < len(merged):
        notes.append(f"the figure shows the top {KEEP} and the Pareto frontier")
    keep["config"] = [config_label(r, keys, serving=mode == "serving") for _, r in keep.iterrows()]
    return keep.reset_index(drop=True), notes


KEEP = 400


def estimate_notes(df: pd.DataFrame, sources: list[str]) -> list[str]:
    """Say where estimates were left out, or that the ranking holds them beside measurements."""
    n = int((df["source"] == ESTIMATE).sum())
    if not n:
        return []
    if ESTIMATE not in sources:
        return [f"{n} estimate(s) (llmbench predict, not measured) left out: add the source "
                "'estimate' to rank them, marked"]
    if set(sources) - {ESTIMATE}:
        return [f"{n} ESTIMATE(S) ranked beside measurements: rows whose source is 'estimate' "
                "were predicted, not measured"]
    return ["every row is an ESTIMATE (llmbench predict), not a measurement"]


# Shown through the derived labels (parallelism, dtype) or elsewhere in the table.
_NOT_IN_CONFIG = {"source", "system", "engine", "model", "hardware", "backend", "hardware_count",
                  "kind", "tensor_parallel", "pipeline_parallel", "expert_parallel",
                  "weight_dtype", "weight_quant", "kv_cache_dtype", "concurrency"}


# A serving run's own bookkeeping: its load says what was measured (tables.load_label).
_SERVING_NOT_IN_CONFIG = {"load", "request_rate", "max_concurrency", "num_prompts", "duration_s",
                          "input_len_dist", "output_len_dist", "warmup", "cooldown", "api",
                          "force_output", "slo", "batch_size"}


def config_label(r: pd.Series, keys: list[str], serving: bool = False) -> str:
    """Compact: 'batch 64 · TP2·PP1 · w=fp16 · kv=fp8 · kv_block_size=16'; a serving row
    leads with its load ('concurrency 8', 'rate 4 req/s')."""
    parts = [load_label(r)] if serving else []
    for c in keys:
        v = value_text(r[c])
        if c in _NOT_IN_CONFIG or v == "–" or (serving and c in _SERVING_NOT_IN_CONFIG):
            continue
        parts.append(f"batch {v}" if c == "batch_size" else v if c in ("parallelism", "dtype")
                     else f"{c}={v}")
    return " · ".join(parts) or "default"


def pareto_mask(latency: np.ndarray, throughput: np.ndarray) -> np.ndarray:
    """True where no other point has latency <= and throughput >= with one strictly better."""
    n = len(latency)
    mask = np.zeros(n, dtype=bool)
    valid = ~(np.isnan(latency) | np.isnan(throughput))
    idx = np.where(valid)[0]
    # Sort by latency ascending, throughput descending: a point is on the frontier iff its
    # throughput beats every faster point's.
    order = idx[np.lexsort((-throughput[idx], latency[idx]))]
    best = -np.inf
    for i in order:
        if throughput[i] > best:
            mask[i] = True
            best = throughput[i]
    return mask


def pareto_front(points: np.ndarray) -> np.ndarray:
    """True for each row (all axes higher-is-better) that no other row dominates: >= on every
    axis and > on one. A row with a missing value is never on it."""
    valid = ~np.isnan(points).any(axis=1)
    mask = np.zeros(len(points), dtype=bool)
    p = points[valid]
    for i, row in zip(np.where(valid)[0], p):
        mask[i] = not ((p >= row).all(axis=1) & (p > row).any(axis=1)).any()
    return mask


TABLE_COLUMNS = [("rank", "#"), ("source", "source"), ("system", "hardware · engine"),
                 ("model", "model"), ("config", "configuration"),
                 ("throughput_tok_s", "throughput tok/s"), ("throughput_per_device", "per device"),
                 ("latency_s", "latency s"), ("ttft_s", "TTFT s"), ("tpot_s", "TPOT s"),
                 ("tok_s_per_user", "tok/s per user"), ("power_w", "power W"),
                 ("tokens_per_joule", "tok/J"), ("energy_per_token_j", "J/tok"),
                 ("efficiency", "roofline eff."), ("pareto", "Pareto"),
                 ("pareto_energy", "Pareto (energy)")]


def table_rows(ranked: pd.DataFrame, top: int = 50) -> list[dict[str, str]]:
    """Display strings for the ranked table (shared by the dashboard and the report)."""
    rows = []
    for _, r in ranked.head(top).iterrows():
        def num(v, fmt="{:.3g}"):
            return "–" if v is None or pd.isna(v) else fmt.format(v)
        thr = num(r["throughput_tok_s"], "{:,.0f}")
        if r.get("throughput_std") and not pd.isna(r["throughput_std"]) and r["throughput_std"] > 0:
            thr += f" ± {r['throughput_std']:,.0f}"
        rows.append({
            "#": str(r["rank"]),
            "source": "ESTIMATE" if r.get("source") == ESTIMATE else str(r.get("source", "")), "hardware · engine": str(r["system"]),
            "model": str(r.get("model", "")), "configuration": r["config"],
            "throughput tok/s": thr, "per device": num(r["throughput_per_device"], "{:,.0f}"),
            "latency s": num(r["latency_s"]),
            "TTFT s": ("≤ " if r["ttft_bounded"] else "") + num(r["ttft_s"]),
            "TPOT s": ("≤ " if r["tpot_bounded"] else "") + num(r["tpot_s"]),
            "tok/s per user": num(r["tok_s_per_user"]),
            "power W": num(r["power_w"], "{:.0f}"), "tok/J": num(r["tokens_per_joule"]),
            "J/tok": num(r["energy_per_token_j"]),
            "roofline eff.": num(r["efficiency"], "{:.0%}"), "Pareto": "★" if r["pareto"] else "",
            "Pareto (energy)": "★" if r["pareto_energy"] else "",
        })
    return rows
