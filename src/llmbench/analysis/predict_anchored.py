"""Predictions anchored on the user's own measurements (issue 51): the engine as the user runs
it today, measured on hardware they have, carried to hardware they lack through its parts
(analysis/predict_physics.py); pre-registered to a file before the target is measured, and
scored against the records once they exist.

- anchored_text: each prediction with its 90% interval and the anchors it rests on.
- preregister: the same predictions as a JSON file naming the date, the code's commit, the
  command, the anchors and the interval's source; commit it before measuring.
- score_markdown: a pre-registered file against records (same model, engine, hardware,
  weight dtype, batch and lengths, default KV cache), predicted / measured per point.
- check_markdown: the user's records predicted from the others (leave one configuration out),
  the physics alone (no anchor), and the study's ridge model beside them.
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from llmbench.analysis import predict as P
from llmbench.analysis import predict_physics as Q

METRICS = (("output_throughput_tok_s", "tok/s"), ("batch_latency_s", "s"))
# the anchored transfer's interval: its validation held out by accelerator (predict_physics.
# validate_anchored), anchors on an accelerator of the target's vendor
INTERVAL_LEVEL = "anchored, same vendor"


def own_frame(results: Path) -> pd.DataFrame:
    from llmbench.analysis.predict_points import frame
    from llmbench.store.store import Store

    return frame(Store(results).records())


def anchors_for(own: pd.DataFrame, engine: str) -> pd.DataFrame:
    """The records of `engine` that anchor it: every usable one, on one vendor's hardware."""
    a = Q.usable(own[own["engine"] == engine])
    if a.empty:
        raise ValueError(f"no usable {engine} inference records to anchor on")
    vendors = a["vendor"].value_counts()
    if len(vendors) > 1:
        raise ValueError(f"{engine} records span vendors {', '.join(vendors.index)}: anchor on one "
                         "(a results directory of one vendor's hardware)")
    return a


def half_width(held: pd.DataFrame, vendor: str, level: str = INTERVAL_LEVEL) -> tuple[float, int, str]:
    """The 90% |log-residual| of the anchored validation's held-out points at `level` whose
    accelerator is of `vendor` (the target's), where there are MIN_RESIDUALS of them, else of
    every vendor's: (half-width, points, whose). A vendor whose accelerators transfer to each
    other well (NVIDIA's) gets its own narrower width; one whose do not (AMD's) its wider."""
    at = held[held["level"] == level]
    mine = at.loc[at["vendor"] == vendor, "residual"].dropna()
    if len(mine) >= P.MIN_RESIDUALS:
        return P.half_width(mine), len(mine), f"{vendor} accelerators"
    r = at["residual"].dropna()
    if len(r) < P.MIN_RESIDUALS:
        r = held["residual"].dropna()
    return P.half_width(r), len(r), "every vendor's accelerators"


def anchored_predictions(fit: Q.StackFit, anchors: pd.DataFrame, points: pd.DataFrame,
                         q: float) -> tuple[Q.Anchored, pd.DataFrame]:
    a = Q.anchor(fit, anchors)
    got = Q.transfer(fit, a, points)
    out = pd.DataFrame(index=points.index)
    sec = got["seconds"].to_numpy(float)
    out["output_throughput_tok_s"] = got["tok_s"].to_numpy(float)
    out["output_throughput_tok_s_lo"] = out["output_throughput_tok_s"] * np.exp(-q)
    out["output_throughput_tok_s_hi"] = out["output_throughput_tok_s"] * np.exp(q)
    out["batch_latency_s"] = sec
    out["batch_latency_s_lo"] = sec * np.exp(-q)
    out["batch_latency_s_hi"] = sec * np.exp(q)
    return a, out


def _anchor_lines(a: Q.Anchored) -> list[str]:
    g = a.anchors
    runs = sorted(set(g["run_id"]))
    versions = sorted(set(g["engine_version"]) - {""})
    lines = [f"  anchored on {len(g)} of your {a.engine} records"
             + (f" ({a.engine} {', '.join(versions)})" if versions else "")
             + f" on {', '.join(sorted(set(g['hardware'])))}, runs {', '.join(runs)}",
             f"  the anchors moved the study's {a.engine} x {a.vendor} stack by x{np.exp(a.scale):.2f} "
             "in time overall;",
             f"    study: {Q.describe(a.prior)}",
             f"    yours: {Q.describe(a.theta)}"]
    return lines


def anchored_text(fit: Q.StackFit, anchors: pd.DataFrame, points: pd.DataFrame, q: float,
                  n_residuals: int, whose: str) -> str:
    a, got = anchored_predictions(fit, anchors, points, q)
    out = _anchor_lines(a)
    out.append(f"  90% interval: x{np.exp(q):.2f} either way (the study's anchored transfer held out "
               f"by accelerator, anchors of the same vendor, {whose}: {n_residuals} points)")
    for idx, p in points.iterrows():
        out.append(f"{p['model']} on {p['hardware']} x{p['devices']} ({p['engine']}, {p['dtype']}), "
                   f"batch {p['batch']}, {p['input_len']} in / {p['output_len']} out: an ESTIMATE "
                   "anchored on your records, not a measurement")
        for metric, unit in METRICS:
            g = got.loc[idx]
            out.append(f"  {metric}: {g[metric]:.4g} {unit} (90% interval {g[metric + '_lo']:.4g} - "
                       f"{g[metric + '_hi']:.4g}; roofline bound {p[f'bound_{metric}']:.4g})")
    return "\n".join(out)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def preregister(fit: Q.StackFit, anchors: pd.DataFrame, points: pd.DataFrame, q: float,
                n_residuals: int, whose: str, path: Path, command: str, study: str) -> dict:
    """Write the predictions to `path` (JSON) with the date, the commit of the code that made
    them (and whether the tree had changes), the command, the anchors and the interval."""
    a, got = anchored_predictions(fit, anchors, points, q)
    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    preds = []
    for idx, p in points.iterrows():
        g = got.loc[idx]
        preds.append({"model": p["model"], "engine": p["engine"], "hardware": p["hardware"],
                      "dtype": p["dtype"], "devices": int(p["devices"]), "batch_size": int(p["batch"]),
                      "input_len": int(p["input_len"]), "output_len": int(p["output_len"]),
                      **{k: float(g[k]) for k in got.columns}})
    doc = {"kind": "preregistered-predictions",
           "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "code_commit": commit, "code_tree_dirty": dirty, "command": command, "study": study,
           "method": "predict_physics: operator-level roofline x efficiencies per vendor stack, "
                     "refitted on the anchors, transferred to the target's hardware",
           "anchors": {"engine": a.engine, "vendor": a.vendor,
                       "engine_versions": sorted(set(a.anchors["engine_version"]) - {""}),
                       "runs": sorted(set(a.anchors["run_id"])),
                       "points": [{"run_id": r["run_id"], "hardware": r["hardware"], "model": r["model"],
                                   "dtype": r["dtype"], "kv_dtype": r["kv_dtype"],
                                   "batch_size": int(r["batch"]), "input_len": int(r["input_len"]),
                                   "output_len": int(r["output_len"]),
                                   "measured_output_throughput_tok_s": float(r["measured_output_throughput_tok_s"])}
                                  for _, r in a.anchors.iterrows()],
                       "study_stack": Q.describe(a.prior), "anchored_stack": Q.describe(a.theta)},
           "interval": {"coverage": P.COVERAGE, "half_width_log": q,
                        "from": f"predict_physics.validate_anchored, level '{INTERVAL_LEVEL}', "
                                f"{whose}: {n_residuals} held-out points"},
           "predictions": preds}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def score(doc: dict, own: pd.DataFrame) -> pd.DataFrame:
    """Each pre-registered prediction beside the mean of the matching records (same model,
    engine, hardware, weight dtype, devices, batch, lengths; the default KV cache): one row per
    prediction, measured NaN where nothing matches yet."""
    rows = []
    for p in doc["predictions"]:
        m = own[(own["model"] == p["model"]) & (own["engine"] == p["engine"])
                & (own["hardware"] == p["hardware"]) & (own["dtype"] == p["dtype"])
                & (own["devices"] == p["devices"]) & (own["batch"] == p["batch_size"])
                & (own["input_len"] == p["input_len"]) & (own["output_len"] == p["output_len"])
                & (own["kv_dtype"] == "")]
        row = dict(p)
        for metric, _ in METRICS:
            vals = m[f"measured_{metric}"].dropna()
            row[f"measured_{metric}"] = float(vals.mean()) if len(vals) else float("nan")
            row[f"error_{metric}"] = (p[metric] / row[f"measured_{metric}"] - 1.0
                                      if len(vals) else float("nan"))
            row[f"inside_{metric}"] = (bool(p[f"{metric}_lo"] <= row[f"measured_{metric}"] <= p[f"{metric}_hi"])
                                       if len(vals) else None)
        row["records"] = len(m)
        row["runs"] = ", ".join(sorted(set(m["run_id"])))
        rows.append(row)
    return pd.DataFrame(rows)


def score_markdown(doc: dict, own: pd.DataFrame) -> str:
    s = score(doc, own)
    lines = [f"pre-registered {doc['created_at']} at commit {doc['code_commit'][:12]}"
             + (" (tree had changes)" if doc.get("code_tree_dirty") else ""),
             "", "| dtype | batch | in/out | predicted tok/s (90% interval) | measured tok/s (records) "
             "| predicted / measured - 1 | inside |", "|" + "---|" * 7]
    for _, r in s.iterrows():
        meas = r["measured_output_throughput_tok_s"]
        lines.append(f"| {r['dtype']} | {r['batch_size']} | {r['input_len']}/{r['output_len']} | "
                     f"{r['output_throughput_tok_s']:.4g} ({r['output_throughput_tok_s_lo']:.4g} - "
                     f"{r['output_throughput_tok_s_hi']:.4g}) | "
                     + (f"{meas:.4g} ({r['records']}) | {100 * r['error_output_throughput_tok_s']:+.1f}% | "
                        f"{'yes' if r['inside_output_throughput_tok_s'] else 'no'} |"
                        if np.isfinite(meas) else "not measured yet | - | - |"))
    done = s[np.isfinite(s["measured_output_throughput_tok_s"])]
    if len(done):
        e = np.abs(done["error_output_throughput_tok_s"].to_numpy(float))
        el = np.abs(done["error_batch_latency_s"].to_numpy(float))
        lines += ["", f"throughput: {len(done)} of {len(s)} points measured; |error| median "
                      f"{100 * np.median(e):.1f}%, p90 {100 * np.quantile(e, 0.9):.1f}%, max "
                      f"{100 * e.max():.1f}%; inside the 90% interval {100 * done['inside_output_throughput_tok_s'].mean():.0f}%",
                  f"batch latency: |error| median {100 * np.median(el):.1f}%, p90 {100 * np.quantile(el, 0.9):.1f}%"]
    else:
        lines += ["", f"none of the {len(s)} points has a matching record yet"]
    return "\n".join(lines)


def configuration(frame: pd.DataFrame) -> pd.Series:
    """A point's configuration without its batch: model, weight and KV dtype, lengths, devices."""
    return (frame["model"] + "|" + frame["dtype"] + "|kv" + frame["kv_dtype"] + "|"
            + frame["input_len"].astype(str) + "x" + frame["output_len"].astype(str)
            + "|d" + frame["devices"].astype(str))


def leave_one_configuration_out(fit: Q.StackFit, own: pd.DataFrame) -> pd.DataFrame:
    """Each engine's records predicted from its other records (every batch of one
    configuration held out at once): the anchored transfer checked on the user's hardware."""
    parts = []
    for engine, g in Q.usable(own).groupby("engine"):
        cfg = configuration(g)
        for c in cfg.unique():
            train, test = g[cfg != c], g[cfg == c]
            if len(train) < 2:
                continue
            got = Q.transfer(fit, Q.anchor(fit, train), test)
            parts.append(pd.DataFrame({"engine": engine, "configuration": c,
                                       "batch": test["batch"],
                                       "measured_output_throughput_tok_s": test["measured_output_throughput_tok_s"],
                                       "output_throughput_tok_s": got["tok_s"],
                                       "measured_batch_latency_s": test["measured_batch_latency_s"],
                                       "batch_latency_s": got["seconds"]}, index=test.index))
    return pd.concat(parts) if parts else pd.DataFrame()


def _err_row(name: str, level: str, pred, meas) -> str:
    e = P.errors(pred, meas)
    e = e[np.isfinite(e)]
    if not len(e):
        return f"| {name} | {level} | 0 | - | - |"
    return (f"| {name} | {level} | {len(e)} | {100 * np.median(e):.0f}% | "
            f"{100 * np.quantile(e, 0.9):.0f}% |")


def check_markdown(train: pd.DataFrame, own: pd.DataFrame) -> str:
    """The user's records three ways, throughput and batch latency error per engine: the
    operator-level physics fitted on the study alone; anchored on the user's other records of
    the engine (leave one configuration out); and (predict_report.check_markdown) the ridge."""
    fit = Q.fit_stacks(train)
    own = Q.usable(own)
    phys = Q.predict(fit, own)
    loco = leave_one_configuration_out(fit, own)
    lines = ["| metric | engine | method | points | median abs error | p90 |", "|" + "---|" * 6]
    for metric, _ in METRICS:
        for engine in sorted(own["engine"].unique()) + ["all"]:
            k = (own["engine"] == engine) if engine != "all" else pd.Series(True, index=own.index)
            pred = phys.loc[k, "seconds" if metric == "batch_latency_s" else "tok_s"]
            lines.append(_err_row(f"{metric} | {engine}", "physics, study only", pred,
                                  own.loc[k, f"measured_{metric}"]))
            if len(loco):
                kk = (loco["engine"] == engine) if engine != "all" else pd.Series(True, index=loco.index)
                lines.append(_err_row(f"{metric} | {engine}", "anchored on your other records "
                                      "(one configuration held out)", loco.loc[kk, metric],
                                      loco.loc[kk, f"measured_{metric}"]))
    return "\n".join(lines)


def coverage(held: pd.DataFrame, level: str = INTERVAL_LEVEL) -> float:
    """Cross-fitted coverage of the anchored interval: each held-out accelerator's points
    (anchors at `level`) against the half-width half_width() gives from the OTHER
    accelerators' residuals, for its vendor; the share inside."""
    inside = []
    at = held[held["level"] == level]
    for fold, part in at.groupby("fold"):
        rest = held[held["fold"] != fold]
        if rest.empty:
            continue
        q, _, _ = half_width(rest, part["vendor"].iloc[0], level)
        inside.extend(np.abs(part["residual"].to_numpy(float)) <= q)
    return float(np.mean(inside)) if inside else float("nan")
