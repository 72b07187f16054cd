"""The findings view and the counters-beside-the-roofline view, for the static report and the
live dashboard alike (analysis/findings.py computes; this lays it out).

- findings: one row per finding of the study: published figure, the study's data, own records
  (each against its own roofline), the verdict, each part of the claim with its outcome, and
  which run(s) the own records come from;
- counters: every own GPU record's roofline efficiency beside the DRAM utilisation the GPU
  itself measured over the same window (measure/gpm.py), with the check in words; a figure
  puts one against the other with the line where they would be equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

COUNTER_FIELDS = ("gpu_dram_bw_util_pct", "gpu_sm_util_pct", "gpu_tensor_util_pct", "throttled")


def compute(results: Path | str, reference: Path | str | None = None):
    """(findings, None) or (None, why not): the view needs the study's records beside one's own."""
    from llmbench.analysis import findings as F
    from llmbench.errors import LLMBenchError

    try:
        return F.load(results, reference), None
    except LLMBenchError as e:
        return None, str(e).replace("invalid input:\n", "").strip()
    except Exception as e:  # a view never takes the report or the dashboard down with it
        return None, f"the findings could not be computed over this store: {type(e).__name__}: {e}"


def findings_rows(fs) -> list[dict[str, str]]:
    from llmbench.analysis.findings import summary_rows

    return summary_rows(fs)


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None or v != v:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{100 * v:.0f}%" if pct else f"{v:.0f}%"


def counter_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Own GPU records (those whose hardware_counters were read, or absent with a reason): the
    model's efficiency beside the measured DRAM utilisation, and whether they agree."""
    from llmbench.analysis.findings import EFF, counter_checks

    out = []
    for r in rows:
        if r.get("kind") == "reference" or r.get("source_tool") or r.get("status") != "ok":
            continue
        if r.get("gpu_dram_bw_util_pct") is None and not r.get("counters_absent"):
            continue
        label = " ".join(str(x) for x in (r.get("backend"), r.get("model"), f"b{r.get('batch_size')}",
                                          f"{r.get('input_len')}/{r.get('output_len')}",
                                          r.get("weight_quant") or r.get("gguf_type") or "") if x)
        eff = r.get(EFF) if r.get(EFF) is not None else r.get("roofline_efficiency_tokens_per_s")
        check = counter_checks([{"label": label, "efficiency": eff,
                                 "dram_bw_util_pct": r.get("gpu_dram_bw_util_pct")}])
        out.append({"point": label, "hardware": str(r.get("hardware") or ""),
                    "roofline efficiency": _fmt(eff, pct=True),
                    "bound by": str(r.get("roofline_binding_resource") or "-"),
                    "DRAM util": _fmt(r.get("gpu_dram_bw_util_pct")), "SM util": _fmt(r.get("gpu_sm_util_pct")),
                    "tensor util": _fmt(r.get("gpu_tensor_util_pct")), "throttled": _fmt(r.get("throttled")),
                    "check": (check[0].split(": ", 1)[1] if check else
                              "counters absent: " + str(r.get("counters_absent") or ""))})
    return out


def own_counter_rows(results: Path | str) -> list[dict[str, Any]]:
    """Flat rows of the store with the counters' absence reason (never a zero) carried along."""
    from llmbench.analysis.findings import record_rows
    from llmbench.store.store import Store

    docs = [d for _, d in Store(results).raw()]
    rows = record_rows(docs)
    for r, d in zip(rows, docs):
        hc = d.get("hardware_counters") if isinstance(d.get("hardware_counters"), dict) else {}
        if hc.get("absent") and str(d.get("hardware", {}).get("name", "")).lower().find("nvidia") >= 0:
            r["counters_absent"] = hc["absent"]
    return rows


def counters_figure(rows: list[dict[str, Any]], height: int = 460):
    """Measured DRAM utilisation (y) against the roofline's efficiency (x), one marker per own
    record; the diagonal is where the analytical model and the hardware agree. A figure of the
    one figure library (report/figures.Fig), as every other the report and the PNGs take."""
    from llmbench.analysis.findings import COUNTER_GAP, EFF
    from llmbench.report.figures import base_figure

    pts = [r for r in rows if r.get("gpu_dram_bw_util_pct") is not None and r.get(EFF) is not None
           and r.get("kind") != "reference"]
    fig = base_figure("Hardware counter vs roofline: DRAM bandwidth utilisation against efficiency"
                      + ("" if pts else " (no own record has GPM counters yet)"), height)
    fig.add_trace("scatter", x=[0, 1], y=[0, 100], mode="lines", name="counter = model",
                  line={"color": "#888", "dash": "dot"})
    for s, nm in ((COUNTER_GAP, f"+{COUNTER_GAP * 100:.0f} points"), (-COUNTER_GAP, f"-{COUNTER_GAP * 100:.0f} points")):
        fig.add_trace("scatter", x=[0, 1], y=[100 * s, 100 * (1 + s)], mode="lines", name=nm,
                      line={"color": "#ccc", "width": 1}, showlegend=False)
    by_engine: dict[str, list] = {}
    for r in pts:
        by_engine.setdefault(str(r.get("backend")), []).append(r)
    for eng, rs in sorted(by_engine.items()):
        fig.add_trace(
            "scatter", x=[r[EFF] for r in rs], y=[r["gpu_dram_bw_util_pct"] for r in rs], mode="markers",
            name=eng, marker={"size": 10, "symbol": ["x" if r.get("throttled") else "circle" for r in rs]},
            text=[f"{r.get('model')} b{r.get('batch_size')} {r.get('input_len')}/{r.get('output_len')}"
                  for r in rs], hovertemplate="%{text}<br>roofline %{x:.0%}<br>DRAM %{y:.0f}%<extra></extra>")
    fig.update_xaxes(title={"text": "roofline efficiency (measured / bound)"}, tickformat=".0%",
                     range=[0, 1.05])
    fig.update_yaxes(title={"text": "DRAM bandwidth utilisation, NVML GPM (%)"}, range=[0, 105])
    return fig


# the verdict's CSS class (dashboard/app.py colours them), one per word of analysis/verdict.py
VERDICT_CLASS = {"holds": "holds", "partly holds": "partly", "contradicted": "contradicted", "untested": "untested"}
