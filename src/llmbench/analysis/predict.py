"""Predictions for hardware you don't have: roofline bound x an efficiency learned from measured
points, and the measured error of doing so (issue 43).

A point is one row of a frame (analysis/predict_points.py builds it from records): its shape
(batch, lengths, model size, GQA ratio, which resource the bound says binds, the prefill share
of the bound), its hardware's peaks, and per metric its bound and measured value. Efficiency
is measured / bound for a throughput and bound / measured for a time (roofline/annotate.py's
convention), so a prediction is bound x efficiency (a throughput) or bound / efficiency (a time).

The model is a ridge regression of log-efficiency on the shape, fitted per (engine, hardware);
where that group is too small or absent it falls back to a fit pooled over the engine's other
hardware of the same vendor (related hardware: one software stack), then over all its hardware,
then over the hardware's other engines, then over everything: each prediction names its level and the records it rests on, and its
interval comes from the held-out residuals of its level (validate()), so a fall-back is wider
exactly as much as it was measured to be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# metric -> True for a throughput (higher is better), False for a time
METRICS = {"output_throughput_tok_s": True, "batch_latency_s": False}
SHAPE = ["log_batch", "log_input", "log_output", "log_params", "log_gqa", "memory_bound",
         "prefill_share", "log_devices", "log_weight_bytes"]
LEVELS = ("engine+hardware", "engine+vendor", "engine", "hardware", "all")
MIN_POINTS = 12    # fewer training points than this: fall back to the next level
RIDGE = 1.0        # on standardised features: shrinks what few points cannot pin down
SPLITS = {"model": "model", "batch": "batch", "accelerator": "hardware"}
INTERVAL = (0.05, 0.95)
MIN_RESIDUALS = 20  # fewer held-out residuals at a level: the interval pools every level


def efficiency(frame: pd.DataFrame, metric: str) -> pd.Series:
    meas, bound = frame[f"measured_{metric}"], frame[f"bound_{metric}"]
    return meas / bound if METRICS[metric] else bound / meas


def from_efficiency(frame: pd.DataFrame, metric: str, eff) -> np.ndarray:
    bound = frame[f"bound_{metric}"].to_numpy(float)
    eff = np.asarray(eff, float)
    return bound * eff if METRICS[metric] else bound / eff


def usable(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows with a positive bound and measurement for `metric`."""
    m, b = frame.get(f"measured_{metric}"), frame.get(f"bound_{metric}")
    if m is None or b is None:
        return frame.iloc[:0]
    return frame[(m > 0) & (b > 0) & np.isfinite(m) & np.isfinite(b)]


@dataclass
class Fit:
    """A ridge fit of log-efficiency on standardised features."""
    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    intercept: float
    coef: np.ndarray
    n: int
    hardware: tuple[str, ...]
    engines: tuple[str, ...]

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        x = (frame[self.features].to_numpy(float) - self.mean) / self.scale
        return self.intercept + x @ self.coef


def fit_ridge(train: pd.DataFrame, y: np.ndarray, features: list[str], ridge: float = RIDGE) -> Fit:
    x = train[features].to_numpy(float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature carries nothing: its coefficient stays 0
    z = (x - mean) / scale
    yc = y - y.mean()
    coef = np.linalg.solve(z.T @ z + ridge * np.eye(len(features)), z.T @ yc)
    return Fit(features, mean, scale, float(y.mean()), coef, len(train),
               tuple(sorted(train["hardware"].unique())), tuple(sorted(train["engine"].unique())))


def _key(level: str, row) -> tuple:
    return {"engine+hardware": (row.engine, row.hardware),
            "engine+vendor": (row.engine, row.vendor), "engine": (row.engine,),
            "hardware": (row.hardware,), "all": ()}[level]


def _members(train: pd.DataFrame, level: str, key: tuple) -> pd.DataFrame:
    if level == "engine+hardware":
        return train[(train["engine"] == key[0]) & (train["hardware"] == key[1])]
    if level == "engine+vendor":
        return train[(train["engine"] == key[0]) & (train["vendor"] == key[1])]
    if level == "engine":
        return train[train["engine"] == key[0]]
    if level == "hardware":
        return train[train["hardware"] == key[0]]
    return train


class EfficiencyModel:
    """Log-efficiency of `metric` as a function of shape, with fall-backs (LEVELS)."""

    def __init__(self, train: pd.DataFrame, metric: str, min_points: int = MIN_POINTS):
        self.train = usable(train, metric)
        self.metric = metric
        self.min_points = min_points
        self.y = np.log(efficiency(self.train, metric).to_numpy(float))
        self._fits: dict[tuple, Fit | None] = {}

    def _fit(self, level: str, key: tuple) -> Fit | None:
        if (level, key) not in self._fits:
            members = _members(self.train, level, key)
            fit = None
            if len(members) >= self.min_points:
                # shape only, also where a fit spans hardware: peaks as features extrapolated
                # worse to a held-out accelerator (docs/predict.md)
                fit = fit_ridge(members, self.y[self.train.index.get_indexer(members.index)], SHAPE)
            self._fits[(level, key)] = fit
        return self._fits[(level, key)]

    def _choose(self, row) -> tuple[str | None, tuple]:
        for level in LEVELS:
            key = _key(level, row)
            if self._fit(level, key) is not None:
                return level, key
        return None, ()

    def predict(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Per row: log_eff (predicted), level, n (training points), hardware, engines."""
        out = pd.DataFrame({"log_eff": np.nan, "level": None, "n": 0, "hardware": None,
                            "engines": None}, index=frame.index, dtype=object)
        for _, rows in frame.groupby(["engine", "hardware", "vendor"]):
            level, key = self._choose(rows.iloc[0])
            if level is None:
                continue
            fit = self._fits[(level, key)]
            out.loc[rows.index, "log_eff"] = fit(rows)
            out.loc[rows.index, "level"] = level
            out.loc[rows.index, "n"] = fit.n
            for i in rows.index:
                out.at[i, "hardware"], out.at[i, "engines"] = fit.hardware, fit.engines
        out["log_eff"] = out["log_eff"].astype(float)
        out["n"] = out["n"].astype(int)
        return out


def constant_baseline(train: pd.DataFrame, test: pd.DataFrame, metric: str) -> np.ndarray:
    """Baseline (a): the bare bound times one constant, exp(median log-efficiency) of train."""
    c = float(np.exp(np.median(np.log(efficiency(usable(train, metric), metric)))))
    return from_efficiency(test, metric, np.full(len(test), c))


def nearest_accelerator(test: pd.DataFrame, pool: pd.DataFrame, metric: str) -> np.ndarray:
    """Baseline (b): the same point (model, engine, dtype, parallelism, batch, lengths) measured
    on the other accelerator whose binding resource (bandwidth when the bound is memory- or
    interconnect-bound, peak compute when compute-bound) is nearest, scaled by that resource's
    ratio; NaN where no other accelerator measured the point."""
    pool = usable(pool, metric)
    by_point = {k: g for k, g in pool.groupby("point")}
    out = np.full(len(test), np.nan)
    for i, row in enumerate(test.itertuples()):
        g = by_point.get(row.point)
        if g is None:
            continue
        g = g[g["hardware"] != row.hardware]
        if g.empty:
            continue
        res = "mem_bw" if row.memory_bound else "peak"
        ratio = getattr(row, res) * row.devices / (g[res] * g["devices"]).to_numpy(float)
        j = int(np.argmin(np.abs(np.log(ratio))))
        meas = float(g[f"measured_{metric}"].iloc[j])
        out[i] = meas * ratio[j] if METRICS[metric] else meas / ratio[j]
    return out


def errors(pred, measured) -> np.ndarray:
    """|predicted / measured - 1| per point."""
    return np.abs(np.asarray(pred, float) / np.asarray(measured, float) - 1.0)


def validate(frame: pd.DataFrame, split: str, metric: str, pool: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """Hold out each value of the split's column in turn, predict it from the rest: one row per
    held-out point with the model's and the two baselines' predictions and the model's
    log-residual (log measured efficiency - log predicted)."""
    frame = usable(frame, metric)
    col = SPLITS[split]
    pool = frame if pool is None else pool
    parts = []
    for value, test in frame.groupby(col):
        train = frame[frame[col] != value]
        if train.empty:
            continue
        got = EfficiencyModel(train, metric).predict(test)
        part = pd.DataFrame({
            "fold": value, "level": got["level"], "n": got["n"],
            "measured": test[f"measured_{metric}"],
            "model": from_efficiency(test, metric, np.exp(got["log_eff"])),
            "constant": constant_baseline(train, test, metric),
            "nearest": nearest_accelerator(test, pool, metric),
            "residual": np.log(efficiency(test, metric).to_numpy(float)) - got["log_eff"]},
            index=test.index)
        parts.append(part)
    return pd.concat(parts) if parts else pd.DataFrame()


def quantiles(residuals, lo: float = INTERVAL[0], hi: float = INTERVAL[1]) -> tuple[float, float]:
    r = np.asarray(residuals, float)
    return float(np.quantile(r, lo)), float(np.quantile(r, hi))


def interval_for(held: pd.DataFrame, level: str) -> tuple[float, float]:
    """(lo, hi) log-residual quantiles of held-out points predicted at `level`, all levels
    pooled where that level has fewer than MIN_RESIDUALS."""
    r = held.loc[held["level"] == level, "residual"].dropna()
    if len(r) < MIN_RESIDUALS:
        r = held["residual"].dropna()
    return quantiles(r)


def coverage(held: pd.DataFrame) -> float:
    """Cross-fitted coverage: each fold's points against the interval from the OTHER folds'
    residuals (of the point's level, as interval_for picks it); the share inside."""
    inside = []
    for fold, part in held.groupby("fold"):
        rest = held[held["fold"] != fold]
        if rest.empty:
            continue
        for level, pts in part.groupby("level"):
            lo, hi = interval_for(rest, level)
            r = pts["residual"].to_numpy(float)
            inside.extend((r >= lo) & (r <= hi))
    return float(np.mean(inside)) if inside else float("nan")


def summary(held: pd.DataFrame) -> dict:
    """Median and p90 of |predicted/measured - 1| for the model and both baselines (each over
    the points it predicts), the model over the nearest baseline's points, and coverage."""
    out: dict = {"points": len(held)}
    for name in ("model", "constant", "nearest"):
        e = errors(held[name], held["measured"])
        e = e[np.isfinite(e)]
        out[name] = {"n": len(e), "median": float(np.median(e)) if len(e) else float("nan"),
                     "p90": float(np.quantile(e, 0.9)) if len(e) else float("nan")}
    has = held["nearest"].notna()
    e = errors(held.loc[has, "model"], held.loc[has, "measured"])
    out["model_on_nearest_points"] = {"n": int(has.sum()),
                                      "median": float(np.median(e)) if len(e) else float("nan")}
    out["coverage"] = coverage(held)
    return out
