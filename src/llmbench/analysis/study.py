"""This machine's records beside LLM-Inference-Bench's, point by point.

A row is one (engine, model, batch, input, output) that both sides measured; each hardware
gets its throughput and its efficiency, the measured value over the roofline bound of ITS OWN
hardware (hardware/catalog.yaml), so an H200 and an H100 are compared by how close each comes
to its own limit, not by raw speed alone. Throughput is the study's: (prompt + generated
tokens) x batch / batch latency (`total_throughput_tok_s`); for llama.cpp the study's rows are
one sequence (its "batch" was llama-bench's n_batch; the importer says so), so only batch 1
pairs up. Own records of several configurations at one point (e.g. F16 and Q4_0 GGUF) stay
apart: `variant` names what differs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

METRIC = "total_throughput_tok_s"
EFF = f"roofline_efficiency_{METRIC}"


def _variant(r: dict[str, Any]) -> str:
    if r.get("kind") == "reference":
        return r.get("weight_dtype") or ""
    parts = []
    if r.get("backend") == "llamacpp":
        parts.append(str(r.get("gguf_type") or "gguf"))
    elif r.get("weight_dtype") not in (None, "auto"):
        parts.append(str(r["weight_dtype"]))
    if r.get("compile"):
        parts.append("compiled")
    if r.get("kv_cache"):
        parts.append(f"{r['kv_cache']} cache")
    return " ".join(parts)


def side_by_side(rows: Iterable[dict[str, Any]], model: str = "llama-3-8b",
                 engines: tuple[str, ...] = ("vllm", "llamacpp"),
                 reference_hardware: tuple[str, ...] = ("A100", "H100", "GH200")) -> list[dict[str, Any]]:
    """Own ok records of `model` on single devices, each with the reference records of the same
    engine, batch and lengths on `reference_hardware` (hardware names contain these)."""
    own: dict[tuple, list[dict]] = defaultdict(list)
    ref: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("status") != "ok" or r.get("model") != model or r.get("backend") not in engines:
            continue
        if (r.get("hardware_count") or 1) != 1 or (r.get("tensor_parallel") or 1) != 1:
            continue
        key = (r["backend"], r.get("batch_size"), r.get("input_len"), r.get("output_len"))
        if r.get("kind") == "reference":
            if any(h in (r.get("hardware") or "") for h in reference_hardware) and not r.get("context_overflow"):
                ref[key].append(r)
        elif r.get("kind") == "inference":
            own[key].append(r)
    out = []
    for key in sorted(own, key=lambda k: (k[0], k[2] or 0, k[1] or 0)):
        if key not in ref:
            continue
        engine, batch, n_in, n_out = key
        row: dict[str, Any] = {"engine": engine, "batch_size": batch, "input_len": n_in,
                               "output_len": n_out, "systems": []}
        for r in sorted(ref[key], key=lambda r: r.get("hardware") or ""):
            row["systems"].append(_system(r, "study"))
        by_variant: dict[str, list[dict]] = defaultdict(list)
        for r in own[key]:
            by_variant[_variant(r)].append(r)
        for variant, rs in sorted(by_variant.items()):
            newest = max(rs, key=lambda r: r.get("created_at") or "")
            row["systems"].append({**_system(newest, "llmbench"), "variant": variant})
        out.append(row)
    return out


def _system(r: dict[str, Any], source: str) -> dict[str, Any]:
    return {"hardware": r.get("hardware"), "source": source, "variant": _variant(r),
            "throughput_tok_s": r.get(f"{METRIC}_mean"), "efficiency": r.get(EFF),
            "batch_latency_s": r.get("batch_latency_s_mean"),
            "engine_version": r.get("backend_version")}


def markdown(table: list[dict[str, Any]]) -> str:
    """The side-by-side table as Markdown (docs/h200-vs-study.md is written from it)."""
    lines = ["| engine | batch | in/out | hardware (source, variant) | total tok/s | of own roofline |",
             "|---|---|---|---|---|---|"]
    for row in table:
        for s in row["systems"]:
            eff = "-" if s["efficiency"] is None else f"{100 * s['efficiency']:.1f}%"
            thr = "-" if s["throughput_tok_s"] is None else f"{s['throughput_tok_s']:,.0f}"
            label = f"{s['hardware']} ({s['source']}{', ' + s['variant'] if s['variant'] else ''})"
            lines.append(f"| {row['engine']} | {row['batch_size']} | {row['input_len']}/{row['output_len']} "
                         f"| {label} | {thr} | {eff} |")
    return "\n".join(lines) + "\n"
