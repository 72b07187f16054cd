"""Server-side aggregation: records -> one point per configuration.

Several records of one configuration (repeated runs, the reference data's duplicate rows) are
one point, never several: its value is the mean of the records' values and its error bar the
pooled spread, sqrt(mean of within-record variances + variance between records) (law of total
variance, records weighted equally). A figure never averages different configurations: every
configuration field that still varies inside an (x, series) group splits the series, and the
legend says by what.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class Aggregated:
    points: pd.DataFrame      # x, y, err, n_records, n_repeats, bound, efficiency, series, source
    split_by: list[str] = field(default_factory=list)  # fields that split series automatically
    dropped_nonpositive: int = 0
    records: int = 0


def varying_within(df: pd.DataFrame, keys: list[str], candidates: list[str]) -> list[str]:
    """Candidate fields that take more than one value inside some group of `keys`."""
    cand = [c for c in candidates if c in df.columns and c not in keys
            and df[c].nunique(dropna=False) > 1]
    if not cand or df.empty:
        return []
    gid = df.groupby(keys, dropna=False, sort=False).ngroup()
    out = []
    for c in cand:
        codes = pd.Series(pd.factorize(df[c], use_na_sentinel=False)[0], index=df.index)
        if codes.groupby(gid).nunique().max() > 1:
            out.append(c)
    return out


def along_series(df: pd.DataFrame, x: str, series: list[str], candidates: list[str]) -> list[str]:
    """Fields that take several values along one series' line without following its x one to
    one: runs of different workloads (input 512 at 8-16 req/s, 128 at 70-90 req/s) that would
    otherwise be one line zig-zagging between them. A field one to one with x inside a series
    (a load level's label beside its concurrency) is the x itself, and splits nothing."""
    if df.empty or not series:
        return []
    out = []
    for c in candidates:
        if c not in df.columns or df[c].nunique(dropna=False) < 2:
            continue
        pair = df[series + [x, c]].astype(str).drop_duplicates()
        for _, grp in pair.groupby(series, sort=False):
            if grp[c].nunique() > 1 and not (grp[x].is_unique and grp[c].is_unique):
                out.append(c)
                break
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        if np.isnan(v):
            return "–"
        if v.is_integer():
            return str(int(v))
        return f"{v:g}"
    return "–" if v is None else str(v)


def value_column(df: pd.DataFrame, metric: str, stat: str) -> str:
    """`<metric>_<stat>`; or the metric itself for single-valued columns such as
    `roofline_efficiency_<metric>`."""
    c = f"{metric}_{stat}"
    return c if c in df.columns or metric not in df.columns else metric


def rows_where(df: pd.DataFrame, mask) -> pd.DataFrame:
    """df[mask], or df itself when the mask keeps every row: a view's rows are mostly all of
    them, and each copy of 100,000 rows x 80 columns cost 5-10 ms of the dashboard's first
    page. (The frames are only read, never changed in place.)"""
    try:
        every = bool(np.asarray(mask, dtype=bool).all())
    except (TypeError, ValueError):  # a mask with missing values: df[mask] says what is wrong
        every = False
    return df if every else df[mask]


def aggregate(df: pd.DataFrame, x: str, metric: str, stat: str, series: list[str],
              config_fields: list[str], log_x: bool = False, log_y: bool = False) -> Aggregated:
    ycol = value_column(df, metric, stat)
    if ycol not in df.columns or x not in df.columns:
        return Aggregated(pd.DataFrame(columns=["x", "y", "err", "series"]))
    d = rows_where(df, df[ycol].notna() & df[x].notna())
    dropped = 0
    for axis_on, col in ((log_y, ycol), (log_x, x)):
        if axis_on and pd.api.types.is_numeric_dtype(d[col]):
            bad = d[col] <= 0
            dropped += int(bad.sum())
            d = d[~bad]
    series = [s for s in dict.fromkeys(series + ["source"]) if s in d.columns and s != x]
    keys = [x] + series
    extra = varying_within(d, keys, [c for c in config_fields if c not in keys])
    extra += along_series(d, x, series, [c for c in config_fields if c not in keys + extra])
    keys += extra
    y = pd.to_numeric(d[ycol], errors="coerce")
    cols = {"y": y, "y2": y * y}
    std_col, n_col = f"{metric}_std", f"{metric}_n"
    if stat == "mean" and std_col in d.columns:
        cols["within"] = pd.to_numeric(d[std_col], errors="coerce").fillna(0.0) ** 2
    if n_col in d.columns:
        cols["reps"] = pd.to_numeric(d[n_col], errors="coerce").fillna(1)
    for part in ("bound", "efficiency"):
        c = f"roofline_{part}_{metric}"
        if c in d.columns:
            cols[part] = pd.to_numeric(d[c], errors="coerce")
    work = pd.DataFrame(cols, index=d.index)
    for k in keys:
        work[k] = d[k]
    g = work.groupby(keys, dropna=False, sort=True)
    agg = g.agg(**{"y": ("y", "mean"), "y2": ("y2", "mean"), "n_records": ("y", "size"),
                   **({"within": ("within", "mean")} if "within" in work else {}),
                   **({"n_repeats": ("reps", "sum")} if "reps" in work else {}),
                   **({"bound": ("bound", "mean")} if "bound" in work else {}),
                   **({"efficiency": ("efficiency", "mean")} if "efficiency" in work else {})})
    agg = agg.reset_index()
    between = (agg["y2"] - agg["y"] ** 2).clip(lower=0)
    agg["err"] = np.sqrt(between + (agg["within"] if "within" in agg else 0.0))
    agg = agg.drop(columns=["y2", *(["within"] if "within" in agg else [])])
    if "n_repeats" not in agg:
        agg["n_repeats"] = agg["n_records"]
    for c in ("bound", "efficiency"):
        if c not in agg:
            agg[c] = np.nan
    both_sources = "source" in agg and agg["source"].nunique() > 1
    label_cols = [s for s in series if s != "source" or both_sources] + extra
    if label_cols:
        parts = [agg[c].map(_fmt) if c in series else (c + "=" + agg[c].map(_fmt)) for c in label_cols]
        lab = parts[0]
        for p in parts[1:]:
            lab = lab + " | " + p
        agg["series"] = lab
    else:
        agg["series"] = "all"
    agg = agg.rename(columns={x: "x"}) if x != "x" else agg
    return Aggregated(agg, split_by=extra, dropped_nonpositive=dropped, records=len(d))
