"""Speed-up against fidelity (docs/fidelity.md), for the static report and the live dashboard
alike: every own offline record that carries fidelity metrics (`llmbench run --fidelity N`) is
one configuration; its throughput is divided by the reference configuration's (transformers
fp32 on the same hardware, model and shape) where the store has one, else by the fastest of
that group, and set against how often its greedy tokens match the fp32 reference's (or its KL
divergence from it), so a quantisation's gain is shown with its cost.
"""

from __future__ import annotations

import pandas as pd

from llmbench.report.figures import PALETTE, Fig, base_figure, empty_figure

THROUGHPUT = "output_throughput_tok_s_mean"
Y_CHOICES = {"match": ("fidelity_match_frac_mean", "Tokens matching fp32 (share) — higher is better"),
             "kl": ("fidelity_kl_nats_mean", "KL from fp32 (nats) — lower is better")}
GROUP = ("model", "hardware", "batch_size", "input_len", "output_len")


def _text(v) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def config_label(r: pd.Series) -> str:
    """engine · weights (llama.cpp: the GGUF's type) · KV type where set."""
    weights = _text(r.get("gguf_type")) if r.get("backend") == "llamacpp" else \
        (_text(r.get("weight_quant")) or _text(r.get("weight_dtype")) or "auto")
    kv = _text(r.get("kv_cache_dtype"))
    return " · ".join(x for x in (_text(r.get("backend")), weights or "auto",
                                  f"kv {kv}" if kv else "") if x)


def is_reference_config(r: pd.Series) -> bool:
    return r.get("backend") == "transformers" and r.get("weight_dtype") == "fp32" \
        and not _text(r.get("kv_cache_dtype")) and not _text(r.get("weight_quant"))


def fidelity_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per own ok record with fidelity metrics: its label, throughput, the speed-up
    over its group's basis (and which basis), and the fidelity metrics."""
    need = {"fidelity_match_frac_mean", THROUGHPUT, "status", "kind"}
    if df.empty or not need <= set(df.columns):
        return pd.DataFrame()
    d = df[(df["kind"] == "inference") & (df["status"] == "ok")
           & df["fidelity_match_frac_mean"].notna() & df[THROUGHPUT].notna()].copy()
    if "source_tool" in d:
        d = d[d["source_tool"].isna()]
    if d.empty:
        return pd.DataFrame()
    d["config"] = d.apply(config_label, axis=1)
    d["reference_config"] = d.apply(is_reference_config, axis=1)
    keys = [c for c in GROUP if c in d]
    speedup, basis = pd.Series(index=d.index, dtype=float), pd.Series(index=d.index, dtype=object)
    for _, g in d.groupby(keys, dropna=False):
        ref = g[g["reference_config"]]
        base = float(ref[THROUGHPUT].mean()) if len(ref) else float(g[THROUGHPUT].max())
        speedup[g.index] = g[THROUGHPUT] / base
        basis[g.index] = "transformers fp32" if len(ref) else "the fastest"
    d["speedup"], d["speedup_basis"] = speedup, basis
    return d.sort_values(["speedup"], ascending=False)


def _fmt(v, spec: str) -> str:
    return "-" if v is None or v != v else format(v, spec)


def table_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    out = []
    for _, r in rows.iterrows():
        out.append({"configuration": r["config"], "model": _text(r.get("model")),
                    "shape": f"b{r.get('batch_size')} {r.get('input_len')}/{r.get('output_len')}",
                    "out tok/s": _fmt(r[THROUGHPUT], ",.1f"),
                    "speed-up": _fmt(r["speedup"], ".2f") + f" × {r['speedup_basis']}",
                    "match": _fmt(r.get("fidelity_match_frac_mean"), ".3f"),
                    "1st diff tok": _fmt(r.get("fidelity_first_divergence_tok_mean"), ".1f"),
                    "KL nats": _fmt(r.get("fidelity_kl_nats_mean"), ".2e"),
                    "top-1": _fmt(r.get("fidelity_top1_agree_frac_mean"), ".3f"),
                    "perplexity": _fmt(r.get("perplexity_mean"), ".2f"),
                    "prompts": _fmt(r.get("fidelity_prompts"), ".0f")})
    return out


def speedup_fidelity_figure(rows: pd.DataFrame, y: str = "match", height: int = 480) -> Fig:
    """x: speed-up over the basis, y: match fraction (or KL); one marker per configuration,
    one colour per engine, labelled with its weights."""
    title = "Speed-up vs fidelity"
    col, ytitle = Y_CHOICES[y]
    if rows.empty or col not in rows or rows[col].notna().sum() == 0:
        return empty_figure(title, "no record carries fidelity metrics (llmbench run --fidelity N)")
    d = rows[rows[col].notna()]
    fig = base_figure(title, height)
    for i, (eng, g) in enumerate(d.groupby("backend", sort=True)):
        hover = [f"<b>{r['config']}</b><br>{_text(r.get('model'))} b{r.get('batch_size')} "
                 f"{r.get('input_len')}/{r.get('output_len')}<br>{r[THROUGHPUT]:,.1f} tok/s, "
                 f"{r['speedup']:.2f}× {r['speedup_basis']}<br>match {_fmt(r.get('fidelity_match_frac_mean'), '.3f')}"
                 f", KL {_fmt(r.get('fidelity_kl_nats_mean'), '.2e')} nats<br>perplexity "
                 f"{_fmt(r.get('perplexity_mean'), '.2f')}" for _, r in g.iterrows()]
        fig.add_trace("scatter", x=g["speedup"].tolist(), y=g[col].tolist(), mode="markers+text",
                      name=str(eng), text=[c.split(" · ", 1)[-1] for c in g["config"]],
                      textposition="top center", hovertext=hover, hoverinfo="text",
                      marker={"size": 11, "color": PALETTE[i % len(PALETTE)]})
    bases = sorted(set(d["speedup_basis"]))
    fig.update_xaxes(title={"text": f"Output throughput relative to {' / '.join(bases)} "
                                    "(same hardware, model, shape)"})
    fig.update_yaxes(title={"text": ytitle}, **({"range": [-0.03, 1.1]} if y == "match" else {}))
    fig.update_layout(meta={"points": int(len(d)), "basis": bases})
    return fig
