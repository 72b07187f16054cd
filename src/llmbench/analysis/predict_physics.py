"""Physics where the data is thin (issue 51): a batch's time from its operators' bytes and
FLOPs (roofline/model.py's operator_terms, columns `op_*` of predict_points' frame), each
operator at its own efficiency, plus a fixed overhead per forward step:

    time = waves x [ max(prefill linear bytes / (e_bw BW), FLOPs / (e_c peak))
                   + max(prefill attention bytes / BW, FLOPs / peak) / e_attn
                   + steps x max(decode linear bytes a step / (e_bw BW), FLOPs / (e_c peak))
                   + max(decode attention bytes / BW, FLOPs / peak) / e_attn
                   + link bytes / (e_link link) + collectives x collective_s
                   + (steps + 1) x overhead_s ]

Six numbers per software stack (THETA: log 1/e_bw, log 1/e_c, log 1/e_attn, log 1/e_link,
log overhead_s, log collective_s: a fixed cost per step, and per all-reduce or send between
devices, whatever its size), fitted per engine x vendor ("the vendor's stack"), shrunk toward the engine's
and the engine's toward every engine's; a group with fewer than MIN_POINTS points takes its
parent's. Every number is a rate of a physical resource, so a batch, a length or a memory size
the stack never ran is reached through the operators it changes, never by carrying a fitted
slope past its data: batch 256 on an MI300X is 256 sequences' bytes and FLOPs at MI300X's
peaks and its stack's efficiencies.

Anchoring (anchored()): the user's own records with today's engine, on hardware they have,
refit the stack's numbers (a common log-scale, then each number, shrunk toward the study's);
the target hardware gets those numbers, moved by the study's difference between the target's
vendor stack and the anchors' (zero within a vendor), at its own bandwidth, peak, link and
memory. The output names the anchors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

THETA = ("log_inv_eff_linear_bw", "log_inv_eff_linear_compute", "log_inv_eff_attention",
         "log_inv_eff_link", "log_overhead_s", "log_collective_s")
# the root prior: what a tuned stack reaches (70% of bandwidth, 50% of compute and of
# attention's roofline, 70% of the link, 50 us a step), loose (PRIOR_SD_ROOT) so data decide
ROOT_PRIOR = np.log([1 / 0.7, 1 / 0.5, 1 / 0.5, 1 / 0.7, 50e-6, 10e-6])
PRIOR_SD_ROOT = 3.0
PRIOR_SD = 1.0          # a group's numbers around its parent's, in log units (a factor e)
ANCHOR_SD = 0.5         # the anchors' per-number change around the common scale
# an efficiency may exceed 1 a little (a datasheet's peak is rounded; a kernel can beat the
# bound's accounting), never by much; an overhead between a microsecond and a second
LOWER = np.array([np.log(1 / 1.25)] * 4 + [np.log(1e-6), np.log(1e-7)])
UPPER = np.array([np.log(1000.0)] * 4 + [np.log(1.0), np.log(1e-2)])
HUBER_SCALE = 0.15      # log-residuals beyond it weigh as |r| (a broken run pulls little)
MIN_POINTS = 12
LEVELS = (("engine", "hardware"), ("engine", "vendor"), ("engine",))
LEVEL_NAMES = {("engine", "hardware"): "engine+hardware", ("engine", "vendor"): "engine+vendor",
               ("engine",): "engine", (): "all"}


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    return frame[f"op_{name}"].to_numpy(float)


def seconds(frame: pd.DataFrame, theta: np.ndarray) -> np.ndarray:
    """Batch latency in seconds per row for log-parameters `theta` (one row of THETA, or one
    per frame row)."""
    t = np.broadcast_to(np.asarray(theta, float), (len(frame), len(THETA)))
    inv_bw, inv_c, inv_a, inv_l, over, coll = (np.exp(t[:, i]) for i in range(len(THETA)))
    bw, peak, link = _col(frame, "mem_bw"), _col(frame, "peak_flops"), _col(frame, "link_bw")
    # an unpublished peak or bandwidth: that resource's term is absent (as in the bound)
    bw_t = lambda b: np.where(np.isfinite(bw) & (bw > 0), b / np.where(bw > 0, bw, 1.0), 0.0)
    pk_t = lambda f: np.where(np.isfinite(peak) & (peak > 0), f / np.where(peak > 0, peak, 1.0), 0.0)
    lk = np.where(np.isfinite(link) & (link > 0), _col(frame, "link_bytes") / np.where(link > 0, link, 1.0), 0.0)
    steps = _col(frame, "decode_steps")
    prefill = (np.maximum(bw_t(_col(frame, "prefill_linear_bytes")) * inv_bw,
                          pk_t(_col(frame, "prefill_linear_flops")) * inv_c)
               + np.maximum(bw_t(_col(frame, "prefill_attention_bytes")),
                            pk_t(_col(frame, "prefill_attention_flops"))) * inv_a)
    decode = (steps * np.maximum(bw_t(_col(frame, "decode_linear_bytes_per_step")) * inv_bw,
                                 pk_t(_col(frame, "decode_linear_flops_per_step")) * inv_c)
              + np.maximum(bw_t(_col(frame, "decode_attention_bytes")),
                           pk_t(_col(frame, "decode_attention_flops"))) * inv_a)
    return _col(frame, "waves") * (prefill + decode + lk * inv_l + _col(frame, "collectives") * coll
                                   + (steps + 1) * over)


def measured_seconds(frame: pd.DataFrame) -> np.ndarray:
    """The measured batch latency, else batch x output / output throughput (the study's and
    llmbench's definitions agree: throughput = generated tokens / batch latency)."""
    lat = frame.get("measured_batch_latency_s", pd.Series(np.nan, index=frame.index)).to_numpy(float)
    tput = frame.get("measured_output_throughput_tok_s",
                     pd.Series(np.nan, index=frame.index)).to_numpy(float)
    alt = frame["batch"].to_numpy(float) * frame["output_len"].to_numpy(float) / tput
    return np.where(np.isfinite(lat) & (lat > 0), lat, alt)


def usable(frame: pd.DataFrame) -> pd.DataFrame:
    t = measured_seconds(frame)
    ok = np.isfinite(t) & (t > 0) & np.isfinite(_col(frame, "peak_flops"))
    return frame[ok]


def fit_theta(frame: pd.DataFrame, prior: np.ndarray, prior_sd: float | np.ndarray = PRIOR_SD,
              start: np.ndarray | None = None) -> np.ndarray:
    """The log-parameters minimising Huber's loss of log(predicted / measured seconds) over
    `frame`, plus ((theta - prior) / prior_sd)^2 in the same units (a Gaussian prior: a
    number the points do not pin stays at the prior)."""
    from scipy.optimize import least_squares

    y = np.log(measured_seconds(frame))
    sd = np.broadcast_to(np.asarray(prior_sd, float), (len(THETA),))
    x0 = np.clip(prior if start is None else start, LOWER + 1e-9, UPPER - 1e-9)

    def resid(theta):
        r = np.log(seconds(frame, theta)) - y
        # the prior's residuals in units of the Huber scale, so a deviation of prior_sd costs
        # as much as one point off by HUBER_SCALE
        return np.concatenate([r, HUBER_SCALE * (theta - prior) / sd])

    got = least_squares(resid, x0, bounds=(LOWER, UPPER), loss="huber", f_scale=HUBER_SCALE,
                        x_scale=1.0, method="trf")
    return got.x


def _key(frame: pd.DataFrame, cols: tuple[str, ...]) -> pd.Series:
    if not cols:
        return pd.Series("all", index=frame.index)
    k = frame[cols[0]].astype(str)
    for c in cols[1:]:
        k = k + "|" + frame[c].astype(str)
    return k


@dataclass
class StackFit:
    """The study's numbers: the pooled fit, then per engine, engine x vendor and engine x
    hardware (each with at least MIN_POINTS points) shrunk toward the level above it."""
    root: np.ndarray
    groups: dict[tuple[tuple[str, ...], str], np.ndarray] = field(default_factory=dict)
    counts: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)

    def theta_for(self, engine: str, vendor: str, hardware: str) -> tuple[np.ndarray, str, int]:
        """(numbers, level name, points of that level) for a point's stack: the most specific
        fitted group."""
        keys = {("engine", "hardware"): f"{engine}|{hardware}", ("engine", "vendor"): f"{engine}|{vendor}",
                ("engine",): engine}
        for cols in LEVELS:
            if (cols, keys[cols]) in self.groups:
                return self.groups[(cols, keys[cols])], LEVEL_NAMES[cols], self.counts[(cols, keys[cols])]
        return self.root, "all", self.counts.get(((), "all"), 0)

    def vendor_theta(self, engine: str, vendor: str) -> np.ndarray:
        """A vendor's stack for an engine, never one accelerator's: what a new accelerator of
        that vendor inherits."""
        for cols, key in ((("engine", "vendor"), f"{engine}|{vendor}"), (("engine",), engine)):
            if (cols, key) in self.groups:
                return self.groups[(cols, key)]
        return self.root


def fit_stacks(train: pd.DataFrame, min_points: int = MIN_POINTS) -> StackFit:
    train = usable(train)
    root = fit_theta(train, ROOT_PRIOR, PRIOR_SD_ROOT)
    fit = StackFit(root=root, counts={((), "all"): len(train)})
    parents = {(): {"all": root}}
    for cols in (("engine",), ("engine", "vendor"), ("engine", "hardware")):
        parent_cols = {("engine",): (), ("engine", "vendor"): ("engine",),
                       ("engine", "hardware"): ("engine", "vendor")}[cols]
        keys = _key(train, cols)
        pkeys = _key(train, parent_cols)
        parents[cols] = {}
        for key, idx in keys.groupby(keys).groups.items():
            pkey = pkeys.loc[idx[0]]
            prior = parents[parent_cols].get(pkey, root)
            if len(idx) < min_points:
                parents[cols][key] = prior
                continue
            theta = fit_theta(train.loc[idx], prior, PRIOR_SD, start=prior)
            parents[cols][key] = theta
            fit.groups[(cols, key)] = theta
            fit.counts[(cols, key)] = len(idx)
    return fit


def predict(fit: StackFit, frame: pd.DataFrame) -> pd.DataFrame:
    """Per row: seconds (batch latency), tok_s (output throughput), level, n."""
    rows = []
    thetas = np.zeros((len(frame), len(THETA)))
    for i, (_, r) in enumerate(frame.iterrows()):
        theta, level, n = fit.theta_for(r["engine"], r["vendor"], r["hardware"])
        thetas[i] = theta
        rows.append((level, n))
    sec = seconds(frame, thetas)
    out = pd.DataFrame({"seconds": sec, "level": [a for a, _ in rows], "n": [b for _, b in rows]},
                       index=frame.index)
    out["tok_s"] = frame["batch"].to_numpy(float) * frame["output_len"].to_numpy(float) / sec
    return out


# -- anchoring on the user's own measurements -------------------------------------------------

@dataclass
class Anchored:
    """A stack refitted on anchors: its numbers, what they moved from, and the anchors."""
    engine: str
    vendor: str
    theta: np.ndarray
    prior: np.ndarray
    scale: float                  # the common log-scale the anchors set (log of time ratio)
    anchors: pd.DataFrame         # the anchoring points (run ids, hardware, shapes)


def anchor(fit: StackFit, anchors: pd.DataFrame) -> Anchored:
    """Refit the study's stack numbers for the anchors' engine and vendor on the anchors: first
    one common log-scale (every time x the same factor: an engine release that is uniformly
    faster or slower), unpenalised, so one anchor point recovers it; then each number around
    that, shrunk (ANCHOR_SD) toward it, which several anchors of different shapes can pin."""
    anchors = usable(anchors)
    engines, vendors = set(anchors["engine"]), set(anchors["vendor"])
    if len(engines) != 1 or len(vendors) != 1:
        raise ValueError(f"anchors must share one engine and one vendor: {sorted(engines)}, {sorted(vendors)}")
    engine, vendor = engines.pop(), vendors.pop()
    prior = fit.vendor_theta(engine, vendor)
    y = np.log(measured_seconds(anchors))
    base = np.log(seconds(anchors, prior))
    # the common scale: every time x exp(c) (each number's log + c; the overhead's too), the
    # robust centre of the anchors' log-ratios
    c = float(np.median(y - base))
    shifted = np.clip(prior + c, LOWER, UPPER)
    theta = fit_theta(anchors, shifted, ANCHOR_SD, start=shifted) if len(anchors) > 1 else shifted
    return Anchored(engine, vendor, theta, prior, c, anchors)


def transfer(fit: StackFit, a: Anchored, target: pd.DataFrame) -> pd.DataFrame:
    """Predict `target` rows (any hardware) with the anchored numbers, moved by the study's
    difference between each row's vendor stack and the anchors' (0 within a vendor)."""
    thetas = np.zeros((len(target), len(THETA)))
    for i, (_, r) in enumerate(target.iterrows()):
        offset = fit.vendor_theta(a.engine, r["vendor"]) - a.prior
        thetas[i] = np.clip(a.theta + offset, LOWER, UPPER)
    sec = seconds(target, thetas)
    out = pd.DataFrame({"seconds": sec}, index=target.index)
    out["tok_s"] = target["batch"].to_numpy(float) * target["output_len"].to_numpy(float) / sec
    return out


def describe(theta: np.ndarray) -> str:
    """The numbers in words: efficiencies as shares of the peaks, the overhead in us."""
    e = np.exp(-np.asarray(theta[:4]))
    return (f"bandwidth {e[0]:.2f}, compute {e[1]:.2f}, attention {e[2]:.2f}, link {e[3]:.2f} "
            f"of peak; {np.exp(theta[4]) * 1e6:.0f} us a step, {np.exp(theta[5]) * 1e6:.1f} us a collective")


# -- validation: the same held-out splits as analysis/predict.py, and the anchored transfer ----

def _metric_values(frame: pd.DataFrame, sec: np.ndarray, metric: str) -> np.ndarray:
    if metric == "batch_latency_s":
        return np.asarray(sec, float)
    return frame["batch"].to_numpy(float) * frame["output_len"].to_numpy(float) / np.asarray(sec, float)


def validate(frame: pd.DataFrame, split: str, metric: str) -> pd.DataFrame:
    """Hold out each value of the split's column (predict.SPLITS) in turn, fit the stacks on the
    rest, predict it: rows in predict.validate's layout (fold, level, n, measured, model,
    residual = log measured / predicted for a throughput, log predicted / measured for a time,
    so that positive always means measured faster), for predict.summary and coverage."""
    from llmbench.analysis.predict import METRICS, SPLITS, usable as usable_metric

    frame = usable(usable_metric(frame, metric))
    col = SPLITS[split]
    parts = []
    for value, test in frame.groupby(col):
        train = frame[frame[col] != value]
        if train.empty:
            continue
        got = predict(fit_stacks(train), test)
        pred = _metric_values(test, got["seconds"].to_numpy(), metric)
        meas = test[f"measured_{metric}"].to_numpy(float)
        r = np.log(meas / pred) if METRICS[metric] else np.log(pred / meas)
        parts.append(pd.DataFrame({"fold": value, "level": got["level"], "n": got["n"],
                                   "hardware": test["hardware"], "engine": test["engine"],
                                   "measured": meas, "model": pred, "residual": r},
                                  index=test.index))
    return pd.concat(parts) if parts else pd.DataFrame()


def validate_anchored(frame: pd.DataFrame, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
    """The anchored transfer, held out by accelerator: for each accelerator T and engine, fit the
    stacks without T, anchor on the engine's points on each other accelerator S in turn (as a
    user anchors on hardware they have) and predict T's points of that engine. One row per
    (T point, S): fold T, anchor S, measured, model, residual (as validate())."""
    from llmbench.analysis.predict import METRICS, usable as usable_metric

    frame = usable(usable_metric(frame, metric))
    parts = []
    for target, test in frame.groupby("hardware"):
        fit = fit_stacks(frame[frame["hardware"] != target])
        for engine, t_eng in test.groupby("engine"):
            others = frame[(frame["engine"] == engine) & (frame["hardware"] != target)]
            for source, anchors in others.groupby("hardware"):
                if len(anchors) < 2:
                    continue
                a = anchor(fit, anchors)
                got = transfer(fit, a, t_eng)
                pred = _metric_values(t_eng, got["seconds"].to_numpy(), metric)
                meas = t_eng[f"measured_{metric}"].to_numpy(float)
                r = np.log(meas / pred) if METRICS[metric] else np.log(pred / meas)
                same = anchors["vendor"].iloc[0] == t_eng["vendor"].iloc[0]
                parts.append(pd.DataFrame({"fold": target, "vendor": t_eng["vendor"].iloc[0],
                                           "anchor": source, "engine": engine,
                                           "level": "anchored, same vendor" if same else
                                           "anchored, other vendor",
                                           "measured": meas, "model": pred, "residual": r},
                                          index=t_eng.index))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
