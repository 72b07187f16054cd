"""The store as one pandas frame for figures: the index rows plus derived columns.

Derived columns (computed here, once, for every figure):
- source        'own' for llmbench's measurements, 'reference' for imported published data,
                'imported: TOOL' for another tool's results (llmbench import TOOL PATH),
                'estimate' for llmbench predict's stored predictions (never measured)
- system        'hardware ×count · engine', the default colour of every view
- parallelism   'TP2·PP2' style label (with EP when present)
- dtype         'w=bf16 · kv=fp8' style label
- model_params_b  parameters in billions
- total_tokens_per_joule_mean = total_throughput_tok_s_mean / avg_power_w_mean: the paper's
  throughput-per-watt, computable for own and reference rows alike (own records also carry
  `tokens_per_joule`, generated tokens per joule, measured per repeat).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from llmbench.store.index import Index, load_index
from llmbench.store.store import STATS

# Columns that identify a record but never a configuration.
NOT_CONFIG = {"run_id", "created_at", "status", "error", "path", "_mtime_ns", "_size",
              "point_key", "backend_version", "roofline_binding_resource", "repeats", "warmups",
              "source_file", "source_row", "text", "source", "duplicate_config", "context_overflow",
              "ttft_definition", "sources", "in_files", "source_files",
              # training: counts derived from the configuration, never swept themselves
              "steps", "flop_params", "flops_per_token", "tokens_per_step",
              # serving: outcomes and seeds (runs that differ by seed are repeats)
              "requests_sent", "seed", "timeout_s", "request_rate_label"}
IDENTITY = ["source", "kind", "hardware", "hardware_count", "backend", "model"]
DERIVED = ["system", "engine", "parallelism", "dtype", "model_params_b"]


@dataclass
class Data:
    """A loaded store: the frame and what its columns are."""

    df: pd.DataFrame
    root: Path
    metrics: list[str] = field(default_factory=list)   # metric base names, e.g. ttft_s
    workload: list[str] = field(default_factory=list)  # workload field names present
    signature: str = ""  # the index's freshness key (store/index.py)

    @property
    def config_fields(self) -> list[str]:
        """Everything that makes two records different configurations."""
        # `*_label` fields are display aliases of canonical fields (the importer keeps the
        # published spelling): filtering or splitting on them would double every choice.
        cols = IDENTITY + [w for w in self.workload if w in self.df.columns and w not in NOT_CONFIG
                           and not w.endswith("_label")]
        cols += ["synthetic_weights", "parallelism", "dtype", "system", "engine"]
        return [c for c in dict.fromkeys(cols) if c in self.df.columns]

    def filter_fields(self, max_values: int = 200) -> list[str]:
        """Fields offered as filters: every categorical field that takes two values or more
        (counting 'not set'); a field with one value everywhere filters nothing."""
        out = []
        for c in self.config_fields:
            if c in ("system", "engine"):
                continue
            n = self.df[c].nunique(dropna=True) + int(self.df[c].isna().any())
            if 2 <= n <= max_values:
                out.append(c)
        return out

    def metric_columns(self, stat: str = "mean") -> list[str]:
        return [m for m in self.metrics if f"{m}_{stat}" in self.df.columns]

    def counts(self) -> dict[str, int]:
        s = self.df["source"].value_counts() if len(self.df) else {}
        return {"records": len(self.df), "own": int(s.get("own", 0)),
                "reference": int(s.get("reference", 0))}


def load(root: Path | str, full_check: bool = False, index: Index | None = None) -> Data:
    """The store under root as a frame; `index`: its index, already loaded (store/index.py)."""
    idx = index if index is not None else load_index(root, full_check=full_check)
    df = idx.to_pandas()
    metrics = list(idx.metrics)
    df = enrich(df)
    if "total_tokens_per_joule_mean" in df.columns and "total_tokens_per_joule" not in metrics:
        metrics.append("total_tokens_per_joule")
    return Data(df=df, root=Path(root), metrics=sorted(metrics), workload=list(idx.workload),
                signature=idx.signature)


def _col(df: pd.DataFrame, name: str, default=None) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(default, index=df.index, dtype=object)


def _label_num(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _map_values(s: pd.Series, f) -> pd.Series:
    """s.map(f), calling f once per distinct value (a column of 100,000 rows holds a few)."""
    codes, uniques = pd.factorize(s)  # missing values get code -1: f(None), last
    labels = np.array([f(u) for u in uniques] + [f(None)], dtype=object)
    return pd.Series(labels[codes], index=s.index, dtype=object)


def _label_rows(f, *cols: pd.Series, dtype: str = "str"):
    """f(*values) of every row (None for a missing value), called once per distinct combination
    of the columns' values: string arithmetic over 100,000 rows cost 0.09 s of a cold open, and
    building the text column from every row's string 0.06 s (it is taken from the labels)."""
    codes, vals = [], []
    for c in cols:
        k, u = pd.factorize(c)  # missing values get code -1: None, last
        codes.append(np.where(k < 0, len(u), k))
        vals.append([*u, None])
    key = codes[0]
    for k, v in zip(codes[1:], vals[1:]):
        key = pd.factorize(key * len(v) + k)[0]  # (renumbered: no overflow, however many columns)
    inverse, combos = pd.factorize(key)
    first = np.empty(len(combos), np.int64)
    first[inverse[::-1]] = np.arange(len(key))[::-1]  # a row of each combination
    labels = [f(*(v[k[r]] for k, v in zip(codes, vals))) for r in first]
    if dtype == "str":
        return pd.array(labels, dtype="str").take(inverse)
    return np.array(labels, dtype=object)[inverse]


def _text(v, missing: str = "") -> str:
    """A value as `fillna(missing).astype(str)` spells it."""
    return missing if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)


def _count_label(c) -> str:
    return "" if _label_num(c) in ("", "1") else f" ×{_label_num(c)}"


def _source(kind, tool) -> str:
    # own | reference (the published study) | imported: TOOL (another benchmark tool's results)
    if kind == "reference":
        return "reference"
    if kind == "estimate":  # llmbench predict --save: never a measurement (kinds/estimate)
        return "estimate"
    return "own" if tool is None else "imported: " + _text(tool)


def _engine(eng, kind, tool) -> str:
    e = _text(eng, "?")
    if tool is not None:
        return f"{e} ({_text(tool)})"
    src = _source(kind, tool)
    return e + f" ({src})" if src in ("own", "estimate") else e


def _parallelism(tp, pp, ep) -> str:
    par = f"TP{_label_num(tp) or '1'}·PP{_label_num(pp) or '1'}"
    return par if _label_num(ep) in ("", "1") else f"{par}·EP{_label_num(ep)}"


def _dtype(wd, wq, kd) -> str:
    w = _text(wq) or _text(wd) or "auto"
    return f"w={w} · kv={_text(kd) or 'auto'}"


def enrich(df: pd.DataFrame) -> pd.DataFrame:
    """The derived columns added to `df` in place (load's own frame, fresh from the index: a
    copy of 100,000 rows cost 0.1 s of a cold open), and `df` returned."""
    if df.empty:
        for c in ["source", "kind", "status", *DERIVED, "hardware", "backend", "model"]:
            df[c] = pd.Series(dtype=object)
        return df
    kind, tool = _col(df, "kind"), _col(df, "source_tool")
    hw, eng = _col(df, "hardware"), _col(df, "backend")

    def text(labels) -> pd.Series:
        return pd.Series(labels, index=df.index)

    df["source"] = text(_label_rows(_source, kind, tool))
    df["system"] = text(_label_rows(
        lambda h, c, e: f"{_text(h, '?')}{_count_label(c)} · {_text(e, '?')}",
        hw, _col(df, "hardware_count").fillna(1), eng))
    df["engine"] = text(_label_rows(_engine, eng, kind, tool))
    df["parallelism"] = pd.Series(_label_rows(_parallelism, _col(df, "tensor_parallel"),
                                              _col(df, "pipeline_parallel"),
                                              _col(df, "expert_parallel"), dtype="object"),
                                  index=df.index, dtype=object)
    df["dtype"] = text(_label_rows(_dtype, _col(df, "weight_dtype"), _col(df, "weight_quant"),
                                   _col(df, "kv_cache_dtype")))
    df["model_params_b"] = pd.to_numeric(_col(df, "model_params"), errors="coerce") / 1e9
    if {"total_throughput_tok_s_mean", "avg_power_w_mean"} <= set(df.columns):
        p = pd.to_numeric(df["avg_power_w_mean"], errors="coerce")
        df["total_tokens_per_joule_mean"] = df["total_throughput_tok_s_mean"] / p.where(p > 0)
    return df


@lru_cache(maxsize=4096)
def _samples_of(path: str, mtime_ns: int, metric: str) -> tuple[float, ...]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return ()
    st = (doc.get("metrics") or {}).get(metric) or {}
    return tuple(st.get("samples") or ())


def samples(rows: pd.DataFrame, metric: str) -> list[float]:
    """The raw samples of `metric` pooled over the given records (read from their files:
    the index keeps summaries only)."""
    out: list[float] = []
    mt = rows["_mtime_ns"] if "_mtime_ns" in rows.columns else [0] * len(rows)
    for p, m in zip(rows["path"], mt):
        out.extend(_samples_of(str(p), int(m or 0), metric))
    return out
