"""Predictions for hardware you don't have: roofline bound x an efficiency learned from measured
points, and the measured error of doing so (issue 43).

A point is one row of a frame (analysis/predict_points.py builds it from records): its shape
(batch, lengths, model size, GQA ratio, which resource the bound says binds, the prefill share
of the bound), its hardware's peaks, and per metric its bound and measured value. Efficiency
is measured / bound for a throughput and bound / measured for a time (roofline/annotate.py's
convention), so a prediction is bound x efficiency (a throughput) or bound / efficiency (a time).

The model is one ridge regression, with Huber's loss, of log-efficiency on the shape (shared
slopes), plus per group (engine x hardware, engine x vendor, engine, hardware, vendor) an
offset and slopes, plus per model an offset, each shrunk toward 0 by its penalty: a group the
training data holds little of stays near the levels above it, one it lacks (a new accelerator,
a new model) gets exactly those levels. Each prediction names its level (the most specific
group with enough records) and that group's records; its interval comes from the held-out
residuals of the validation (validate(), interval_for()), so a fall-back is wider where it was
measured to be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# metric -> True for a throughput (higher is better), False for a time
METRICS = {"output_throughput_tok_s": True, "batch_latency_s": False}
# log_step_s: the bound's seconds per output step; a fixed per-step overhead (launches,
# scheduling) costs a larger share of a short step, so faster hardware and smaller models run
# at a lower fraction of their bound: the one hardware trait shared across accelerators
# kv_over: log2 of how far the batch's weights + full KV cache exceed the devices' memory (0
# where they fit): the engine then holds only part of the batch at once (queueing or
# preempting), so the point falls below a bound that assumes all of it in flight
SHAPE = ["log_batch", "log_input", "log_output", "log_params", "log_gqa", "memory_bound",
         "prefill_share", "log_devices", "log_weight_bytes", "log_step_s", "kv_over"]
LEVELS = ("engine+hardware", "engine+vendor", "engine", "hardware", "all")
MIN_POINTS = 12    # fewer training points than this: fall back to the next level
RIDGE = 1.0        # on standardised features: shrinks what few points cannot pin down
SPLITS = {"model": "model", "batch": "batch", "accelerator": "hardware"}
COVERAGE = 0.90    # the interval: 90% of held-out points
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


# The groups whose offsets and slopes the fit learns, most specific first: a point's level is
# the first whose group the training data holds (its prediction then rests on that group,
# shrunk toward the groups after it); "all" is the shared part every point has.
GROUPS = {"engine+hardware": ("engine", "hardware"), "engine+vendor": ("engine", "vendor"),
          "engine": ("engine",), "hardware": ("hardware",), "vendor": ("vendor",)}
# ridge penalties on standardised features (the shared slopes: RIDGE): a group's offset and
# its slopes are shrunk toward 0, i.e. toward the levels above it, as much as its few points
# cannot pin them; a model's offset likewise toward the models' common level. The offsets of
# one accelerator (hardware, engine x hardware) are penalised 100 times more than a vendor's:
# what the accelerators of a vendor share (its software stack) then sits in the vendor's
# offset, which a new accelerator of that vendor inherits whole, rather than split between
# the vendor and each accelerator (equal penalties hand a new one ~2/3 of it)
OFFSET_RIDGE = {"engine+hardware": 10.0, "engine+vendor": 0.1, "engine": 1.0, "hardware": 10.0,
                "vendor": 0.1}
SLOPE_RIDGE = 300.0
MODEL_RIDGE = 30.0
# Huber's threshold in robust standard deviations (1.4826 x the residuals' MAD): a residual
# beyond it weighs as |r|, not r^2, so a few points the model cannot explain (a broken run, an
# engine setting the shape does not see) no longer drag the shared slopes
HUBER_K = 1.0
HUBER_ITERATIONS = 6


@dataclass
class Fit:
    """One ridge solve of log-efficiency on the shared shape slopes plus, per group of GROUPS,
    an offset and slopes per key, and per model an offset; `vocab` holds each group's keys as
    the training data had them (a key it lacked gets no column: that row falls back)."""
    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    intercept: float
    vocab: dict[str, list[str]]
    coef: np.ndarray

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        return self.intercept + design(frame, self.vocab, self.features, self.mean, self.scale) @ self.coef


def _keys(frame: pd.DataFrame, group: str) -> np.ndarray:
    cols = GROUPS.get(group, (group,))
    k = frame[cols[0]].astype(str)
    for c in cols[1:]:
        k = k + "|" + frame[c].astype(str)
    return k.to_numpy()


def _blocks(vocab: dict[str, list[str]], n_features: int) -> list[tuple[str, int, int]]:
    """(group, first column, columns per key) after the shared slopes; a model: its offset only."""
    out, at = [], n_features
    for group, keys in vocab.items():
        width = 1 if group == "model" else 1 + n_features
        out.append((group, at, width))
        at += width * len(keys)
    return out


def design(frame: pd.DataFrame, vocab: dict[str, list[str]], features: list[str], mean, scale
           ) -> np.ndarray:
    """The design matrix: the standardised shape (shared slopes), then per group and key an
    offset column (1 where the row's key is it) and, for GROUPS, its slopes (the shape there)."""
    z = (frame[features].to_numpy(float) - mean) / scale
    nf = len(features)
    blocks = _blocks(vocab, nf)
    total = blocks[-1][1] + blocks[-1][2] * len(vocab[blocks[-1][0]]) if blocks else nf
    x = np.zeros((len(frame), total))
    x[:, :nf] = z
    ones_z = np.hstack([np.ones((len(frame), 1)), z])
    rows = np.arange(len(frame))
    for group, first, width in blocks:
        where = {k: i for i, k in enumerate(vocab[group])}
        code = np.array([where.get(k, -1) for k in _keys(frame, group)])
        seen = code >= 0
        for j in range(width):
            x[rows[seen], first + code[seen] * width + j] = ones_z[seen, j]
    return x


def fit_ridge(train: pd.DataFrame, y: np.ndarray, features: list[str] = SHAPE) -> Fit:
    x = train[features].to_numpy(float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    # a constant feature carries nothing: its coefficient stays 0 (rounding leaves a constant's
    # std at ~1e-15, which would blow a new point's standardised value up to ~1e15)
    scale[scale <= 1e-9 * np.maximum(1.0, np.abs(mean))] = 1.0
    vocab = {g: sorted(set(_keys(train, g))) for g in GROUPS} | {
        "model": sorted(set(_keys(train, "model")))}
    penalty = [RIDGE] * len(features)
    for group, _, width in _blocks(vocab, len(features)):
        per_key = [MODEL_RIDGE] if group == "model" else [OFFSET_RIDGE[group]] + [SLOPE_RIDGE] * len(features)
        penalty += per_key * len(vocab[group])
    z = design(train, vocab, features, mean, scale)
    coef = huber_ridge(np.hstack([np.ones((len(z), 1)), z]), y, np.array([0.0] + penalty))
    return Fit(features, mean, scale, float(coef[0]), vocab, coef[1:])


def huber_ridge(x: np.ndarray, y: np.ndarray, penalty: np.ndarray, k: float = HUBER_K,
                iterations: int = HUBER_ITERATIONS) -> np.ndarray:
    """Ridge regression with Huber's loss (threshold k robust standard deviations), by
    iteratively reweighted least squares: the first pass is plain ridge, then each residual
    beyond the threshold weighs k s / |r|. A penalty of 0 leaves that column (the intercept)
    unpenalised."""
    w = np.ones(len(y))
    ridge = np.diag(penalty)
    for _ in range(iterations + 1):
        xw = x * w[:, None]
        coef = np.linalg.solve(xw.T @ x + ridge, xw.T @ y)
        r = y - x @ coef
        s = 1.4826 * np.median(np.abs(r - np.median(r)))
        if s <= 0:
            break
        w = np.minimum(1.0, k * s / np.maximum(np.abs(r), 1e-300))
    return coef


class EfficiencyModel:
    """Log-efficiency of `metric` as a function of shape, engine, hardware and model, one
    shrunk fit (fit_ridge); each prediction names its level (LEVELS) and the records of that
    level's group, the ones that pin it."""

    def __init__(self, train: pd.DataFrame, metric: str, min_points: int = MIN_POINTS):
        self.train = usable(train, metric)
        self.metric = metric
        self.min_points = min_points
        # learnt against the bound corrected for what it knowingly leaves out (physics_offset)
        y = np.log(efficiency(self.train, metric).to_numpy(float)) + physics_offset(self.train)
        self.fit = fit_ridge(self.train, y) if len(self.train) else None
        self.keys = {g: _keys(self.train, g) for g in GROUPS}

    def _level(self, row: pd.DataFrame) -> tuple[str, np.ndarray]:
        """The most specific level whose group holds min_points training points, and them."""
        for level in LEVELS[:-1]:
            members = self.keys[level] == _keys(row, level)[0]
            if members.sum() >= self.min_points:
                return level, members
        return "all", np.ones(len(self.train), bool)

    def predict(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Per row: log_eff (predicted), level, n (training points of the level's group),
        hardware, engines (of that group)."""
        out = pd.DataFrame({"log_eff": np.nan, "level": None, "n": 0, "hardware": None,
                            "engines": None}, index=frame.index, dtype=object)
        if self.fit is None or frame.empty:
            return out.astype({"log_eff": float, "n": int})
        out["log_eff"] = self.fit(frame) - physics_offset(frame)
        for _, rows in frame.groupby(["engine", "hardware", "vendor"]):
            level, members = self._level(rows.iloc[[0]])
            members = self.train[members]
            out.loc[rows.index, "level"] = level
            out.loc[rows.index, "n"] = len(members)
            hw, eng = tuple(sorted(members["hardware"].unique())), tuple(sorted(members["engine"].unique()))
            for i in rows.index:
                out.at[i, "hardware"], out.at[i, "engines"] = hw, eng
        out["log_eff"] = out["log_eff"].astype(float)
        out["n"] = out["n"].astype(int)
        return out


def physics_offset(frame: pd.DataFrame) -> np.ndarray:
    """log of how much slower than its bound a point must be for what the bound knowingly
    leaves out: a mixture of experts' decode reads the union of the experts its batch routes
    to, not k of E (predict_points.moe_read), over the decode share of the bound's time."""
    if "moe_read" not in frame:
        return np.zeros(len(frame))
    return ((1.0 - frame["prefill_share"]) * frame["moe_read"]).to_numpy(float)


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
    # the baseline uses any other accelerator's measurement, held out or not: one pass for all
    nearest = pd.Series(nearest_accelerator(frame, pool, metric), index=frame.index)
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
            "nearest": nearest.loc[test.index],
            "residual": np.log(efficiency(test, metric).to_numpy(float)) - got["log_eff"]},
            index=test.index)
        parts.append(part)
    return pd.concat(parts) if parts else pd.DataFrame()


def half_width(residuals, level: float = COVERAGE) -> float:
    """The `level` quantile of |log-residual|: a symmetric interval's half-width in log space
    (a conformal score; symmetric, so a fold whose whole group sits to one side of the others
    is still covered as far as the others' spread reaches)."""
    return float(np.quantile(np.abs(np.asarray(residuals, float)), level))


def interval_for(held: pd.DataFrame, level: str) -> tuple[float, float]:
    """(lo, hi) of the log-residual for a prediction at `level`: the held-out points' 90%
    |residual|, of that level where it has MIN_RESIDUALS of them, never narrower than all
    levels pooled (a fall-back is wider exactly where its level measured wider)."""
    r = held["residual"].dropna()
    q = half_width(r)
    at = held.loc[held["level"] == level, "residual"].dropna()
    if len(at) >= MIN_RESIDUALS:
        q = max(q, half_width(at))
    return -q, q


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
