"""A prediction beside the measurements (issue 43): for one configuration (model, engine,
hardware, dtype, devices, input and output lengths), the stored estimates of `llmbench predict
--save` (records of kind `estimate`, kinds/estimate) drawn as a curve against batch size with
their 90% interval as a band, and the measured points of the same configuration (own records,
and the published study's) beside them, with predicted / measured where both exist.

The estimates stay marked as such everywhere: their curve is dashed, named 'ESTIMATE', and
the table says which numbers were measured. The interval is each record's own (its `estimate`
section: the index keeps only the flat metrics, so it is read from the record file).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from llmbench.hardware import find
from llmbench.kinds.estimate.kind import UNITS
from llmbench.models.catalog import canonical_name
from llmbench.numfmt import fmt
from llmbench.report import figures
from llmbench.roofline.workload import dtype_name

METRICS = tuple(UNITS)          # what an estimate predicts: output throughput, batch latency
MEASURED_KINDS = ("inference", "reference")
# What makes two points one configuration (batch size is the curve's x).
CONFIG = ("model_id", "backend", "hardware_id", "dtype_id", "devices", "input_len", "output_len")
ESTIMATE_COLOR, MEASURED_COLOR, STUDY_COLOR = "#7a5195", "#1f77b4", "#2ca02c"


@lru_cache(maxsize=4096)  # a few distinct names over thousands of rows
def _model_id(name) -> str | None:
    return None if name is None or (isinstance(name, float) and np.isnan(name)) \
        else canonical_name(str(name)) or str(name)


@lru_cache(maxsize=4096)
def _hardware_id(name) -> str | None:
    if name is None or (isinstance(name, float) and np.isnan(name)):
        return None
    hw = find(str(name))
    return hw.id if hw else str(name)


def _dtype_id(quant, dtype) -> str:
    """The weights' dtype as the prediction names it; 'auto' where the record left it to the
    engine (such a point is compared with a prediction of any dtype, and the table says so)."""
    for v in (quant, dtype):
        if v is not None and not (isinstance(v, float) and np.isnan(v)) and str(v) != "auto":
            return dtype_name(str(v)) or str(v)
    return "auto"


def _num(df: pd.DataFrame, col: str, default: float) -> pd.Series:
    return pd.to_numeric(df[col], errors="coerce").fillna(default) if col in df else \
        pd.Series(default, index=df.index, dtype=float)


def keyed(df: pd.DataFrame) -> pd.DataFrame:
    """The ok rows with the configuration's canonical fields (CONFIG) added."""
    d = df[df["status"] == "ok"].copy() if "status" in df else df.copy()
    if d.empty:
        return d.assign(**{c: pd.Series(dtype=object) for c in CONFIG})
    d["model_id"] = d["model"].map(_model_id)
    d["hardware_id"] = d["hardware"].map(_hardware_id)
    quant = d["weight_quant"] if "weight_quant" in d else pd.Series(None, index=d.index)
    dt = d["weight_dtype"] if "weight_dtype" in d else pd.Series(None, index=d.index)
    d["dtype_id"] = [_dtype_id(q, w) for q, w in zip(quant, dt)]
    d["devices"] = (_num(d, "tensor_parallel", 1) * _num(d, "pipeline_parallel", 1)).astype(int)
    for c in ("input_len", "output_len", "batch_size"):
        d[c] = _num(d, c, np.nan)
    return d


@lru_cache(maxsize=1024)
def _section(path: str, mtime_ns: int) -> dict:
    """An estimate record's `estimate` section."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return doc.get("estimate") or {}


def _interval(path: str, mtime_ns: int) -> dict:
    """An estimate record's `estimate.metrics` section: per metric its lo and hi."""
    return _section(path, mtime_ns).get("metrics") or {}


def rests_on(section: dict) -> str:
    """What an estimate rests on, in words: the user's records that anchored it (issue 51), or
    the study's fit level and hardware (issue 43)."""
    if section.get("anchored_on"):
        a = section["anchored_on"]
        return (f"anchored on {a.get('points', '?')} own {a.get('engine', '')} records "
                f"({', '.join(a.get('engine_versions', []))}) on {', '.join(a.get('hardware', []))}")
    m = next(iter((section.get("metrics") or {}).values()), {})
    if m.get("level"):
        return f"study: {m['level']} fit ({', '.join(m.get('fit_hardware', []))})"
    return "–"


def estimates(df: pd.DataFrame) -> pd.DataFrame:
    """The stored predictions, keyed, with each metric's interval (`<metric>_lo`, `_hi`)."""
    if df.empty or "kind" not in df:
        return keyed(df.iloc[:0])
    d = keyed(df[df["kind"] == "estimate"])
    for m in METRICS:
        got = [_interval(str(p), int(t or 0)).get(m, {}) if isinstance(p, str) else {}
               for p, t in zip(d["path"] if "path" in d else [None] * len(d),
                               d["_mtime_ns"] if "_mtime_ns" in d else [0] * len(d))]
        d[f"{m}_lo"] = [g.get("lo", np.nan) for g in got]
        d[f"{m}_hi"] = [g.get("hi", np.nan) for g in got]
    d["rests_on"] = [rests_on(_section(str(p), int(t or 0))) if isinstance(p, str) else "–"
                     for p, t in zip(d["path"] if "path" in d else [None] * len(d),
                                     d["_mtime_ns"] if "_mtime_ns" in d else [0] * len(d))]
    return d


def configurations(df: pd.DataFrame) -> list[dict]:
    """Every configuration some estimate predicts, the ones with measurements of the same
    configuration first, then by label."""
    est = estimates(df)
    if est.empty:
        return []
    measured = _measured(df)
    out = []
    for key, g in est.groupby(list(CONFIG), dropna=False, sort=False):
        cfg = dict(zip(CONFIG, key))
        cfg["label"] = config_label(cfg)
        cfg["measured"] = not _same(measured, cfg, dtype_any=True).empty
        cfg["batches"] = sorted(int(b) for b in g["batch_size"].dropna().unique())
        out.append(cfg)
    return sorted(out, key=lambda c: (not c["measured"], c["label"]))


def config_label(cfg: dict) -> str:
    dev = "" if int(cfg["devices"]) == 1 else f" ×{int(cfg['devices'])}"
    return (f"{cfg['model_id']} · {cfg['backend']} · {cfg['hardware_id']}{dev} · {cfg['dtype_id']} · "
            f"in {int(cfg['input_len'])} / out {int(cfg['output_len'])}")


def _same(d: pd.DataFrame, cfg: dict, dtype_any: bool) -> pd.DataFrame:
    mask = np.ones(len(d), dtype=bool)
    for c in CONFIG:
        if c == "dtype_id" and dtype_any:
            mask &= d[c].isin([cfg[c], "auto"]).to_numpy()
        else:
            mask &= (d[c] == cfg[c]).to_numpy()
    return d[mask]


def matching_measured(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """The measured records (own and the study's) of the configuration: same model, engine,
    hardware, devices and lengths, and the same weight dtype or one left to the engine."""
    return _same(_measured(df), cfg, dtype_any=True)


def _measured(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty or "kind" not in df:
        return keyed(df.iloc[:0])
    return keyed(df[df["kind"].isin(MEASURED_KINDS)])


def comparison(df: pd.DataFrame, cfg: dict, metric: str) -> pd.DataFrame:
    """Per batch size of the configuration: the prediction and its interval, the measured
    mean of each source (records of one batch merged by their mean), and predicted / measured
    (against the own measurement where there is one, else the study's)."""
    est = _same(estimates(df), cfg, dtype_any=False)
    col = f"{metric}_mean"
    pred = est.groupby("batch_size").agg(predicted=(col, "mean"), lo=(f"{metric}_lo", "mean"),
                                         hi=(f"{metric}_hi", "mean"),
                                         rests_on=("rests_on", "first")) if col in est else \
        pd.DataFrame(columns=["predicted", "lo", "hi", "rests_on"])
    meas = matching_measured(df, cfg)
    parts = [pred]
    for src, name in (("own", "measured"), ("reference", "study")):
        m = meas[(meas["source"] == src)] if col in meas else meas.iloc[:0]
        m = m[m[col].notna()] if col in m else m
        g = m.groupby("batch_size")[col] if len(m) else None
        parts.append(pd.DataFrame({name: g.mean() if g is not None else pd.Series(dtype=float),
                                   f"{name}_records": g.size() if g is not None else pd.Series(dtype=int)}))
    out = pd.concat(parts, axis=1).sort_index()
    out.index.name = "batch_size"
    out = out.reset_index()
    against = out["measured"].where(out["measured"].notna(), out["study"])
    out["ratio"] = out["predicted"] / against
    out["ratio_against"] = np.where(out["measured"].notna(), "own", np.where(out["study"].notna(), "study", ""))
    out["inside"] = (against >= out["lo"]) & (against <= out["hi"])
    return out


def figure(cmp: pd.DataFrame, cfg: dict, metric: str, height: int = 520, title: str | None = None
           ) -> figures.Fig:
    """The prediction's curve against batch size (dashed, its 90% interval a band) beside the
    measured points of the same configuration."""
    title = title or f"{figures.label(metric).split(' (')[0]}: prediction beside measurements"
    fig = figures.base_figure(title, height)
    p = cmp[cmp["predicted"].notna()]
    if p.empty:
        return figures.empty_figure(title, "no estimate of this metric for the configuration")
    x = p["batch_size"]
    # the band: hi forwards then lo backwards, one closed shape
    fig.add_trace("scatter", x=list(x) + list(x[::-1]), y=list(p["hi"]) + list(p["lo"][::-1]),
                  mode="lines", fill="toself", fillcolor="rgba(122,81,149,0.16)", line=dict(width=0),
                  hoverinfo="skip", name="ESTIMATE: 90% interval", legendgroup="est")
    hover = ("<b>ESTIMATE</b> (llmbench predict)<br>batch " + x.astype(int).astype(str)
             + "<br>predicted " + p["predicted"].map(fmt) + " (" + p["lo"].map(fmt) + " – "
             + p["hi"].map(fmt) + ")")
    fig.add_trace("scatter", x=x, y=p["predicted"], mode="lines+markers", name="ESTIMATE: predicted",
                  legendgroup="est", hovertext=hover, hoverinfo="text",
                  line=dict(color=ESTIMATE_COLOR, width=2.4, dash="dash"),
                  marker=dict(symbol="diamond-open", size=10, color=ESTIMATE_COLOR,
                              line=dict(width=2, color=ESTIMATE_COLOR)))
    for col, name, color, symbol in (("measured", "measured (own records)", MEASURED_COLOR, "circle"),
                                     ("study", "measured (published study)", STUDY_COLOR, "square-open")):
        m = cmp[cmp[col].notna()]
        if m.empty:
            continue
        ratio = m["predicted"] / m[col]
        hov = (f"<b>{name}</b><br>batch " + m["batch_size"].astype(int).astype(str) + "<br>"
               + m[col].map(fmt) + " (" + m[f"{col}_records"].astype(int).astype(str) + " record(s))"
               + ratio.map(lambda r: "" if pd.isna(r) else f"<br>predicted / measured {r:.2f}"))
        fig.add_trace("scatter", x=m["batch_size"], y=m[col], mode="markers", name=name,
                      hovertext=hov, hoverinfo="text",
                      marker=dict(symbol=symbol, size=11, color=color, line=dict(width=2, color=color)))
        for _, r in m[m["predicted"].notna()].iterrows():
            fig.add_annotation(x=np.log10(r["batch_size"]), y=np.log10(r[col]), xref="x", yref="y",
                               text=f"×{r['predicted'] / r[col]:.2f}", showarrow=False, xshift=10,
                               xanchor="left", bgcolor="rgba(255,255,255,0.85)",
                               font=dict(size=12, color=color))
    xs = sorted(set(cmp["batch_size"].dropna()))
    fig.update_xaxes(title=dict(text="Batch size"), type="log", tickvals=xs,
                     ticktext=[str(int(v)) for v in xs])
    ys = [v for c in ("lo", "hi", "predicted", "measured", "study") for v in cmp[c].dropna()]
    fig.update_yaxes(title=dict(text=figures.label(metric)), type="log")
    figures._apply_log_ticks(fig, "y", ys)
    fig.add_annotation(text=f"{config_label(cfg)} · ×r beside a measured point: predicted / measured",
                       showarrow=False, xref="paper", yref="paper", x=0, y=1.0, xanchor="left",
                       yanchor="bottom", font=dict(size=12, color="#555"))
    fig.update_layout(margin=dict(t=80), meta={"points": int(len(cmp))})
    return fig


def table_rows(cmp: pd.DataFrame, metric: str) -> list[dict[str, str]]:
    """One row per batch size: the ESTIMATE with its interval, the measurements, the ratio."""
    unit = UNITS[metric]
    rows = []
    for _, r in cmp.iterrows():
        def num(v):
            return "–" if pd.isna(v) else fmt(float(v))
        rows.append({
            "batch": str(int(r["batch_size"])),
            f"ESTIMATE {unit}": num(r["predicted"]),
            "90% interval": "–" if pd.isna(r["lo"]) else f"{fmt(float(r['lo']))} – {fmt(float(r['hi']))}",
            "rests on": r["rests_on"] if isinstance(r.get("rests_on"), str) else "–",
            f"measured {unit} (own)": num(r["measured"]) + (
                "" if pd.isna(r["measured"]) else f" ({int(r['measured_records'])})"),
            f"study {unit}": num(r["study"]) + (
                "" if pd.isna(r["study"]) else f" ({int(r['study_records'])})"),
            "predicted / measured": "–" if pd.isna(r["ratio"]) else
            f"{r['ratio']:.2f} (vs {r['ratio_against']})",
            "inside interval": "–" if pd.isna(r["ratio"]) else ("yes" if r["inside"] else "no"),
        })
    return rows
