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
            if any(h in (r.get("hardware") or "") for h in reference_hardware) and _plain(r):
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
        by_hw: dict[str, list[dict]] = defaultdict(list)
        for r in ref[key]:
            by_hw[r.get("hardware") or ""].append(r)
        for hw, rs in sorted(by_hw.items()):
            row["systems"].append(_median_system(rs))
        by_variant: dict[str, list[dict]] = defaultdict(list)
        for r in own[key]:
            by_variant[_variant(r)].append(r)
        for variant, rs in sorted(by_variant.items()):
            newest = max(rs, key=lambda r: r.get("created_at") or "")
            row["systems"].append({**_system(newest, "llmbench"), "variant": variant})
        out.append(row)
    return out


def _plain(r: dict[str, Any]) -> bool:
    """A study row of the plain configuration (16-bit weights and KV cache, a KV cache of the
    engine's default block size, no speculative decoding, inside the model's context): the
    experiments on those factors stay out of a hardware comparison."""
    return (r.get("weight_dtype") in ("fp16", "bf16") and not r.get("weight_quant")
            and r.get("kv_cache") in (None, "with") and r.get("kv_block_size") in (None, 16)
            and r.get("kv_cache_dtype") in (None, "fp16", "bf16", "auto")
            and not r.get("speculative_model") and not r.get("context_overflow"))


def _median_system(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """The study's rows of one hardware at one point (its files repeat some configurations with
    different numbers): the median, and how many rows it summarises."""
    import statistics

    def med(k):
        xs = [r.get(k) for r in rs if r.get(k) is not None]
        return statistics.median(xs) if xs else None

    return {"hardware": rs[0].get("hardware"), "source": "study", "variant": _variant(rs[0]),
            "throughput_tok_s": med(f"{METRIC}_mean"), "efficiency": med(EFF),
            "batch_latency_s": med("batch_latency_s_mean"), "engine_version": None, "rows": len(rs)}


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
            rows = f", median of {s['rows']} rows" if s.get("rows", 1) > 1 else ""
            label = f"{s['hardware']} ({s['source']}{', ' + s['variant'] if s['variant'] else ''}{rows})"
            lines.append(f"| {row['engine']} | {row['batch_size']} | {row['input_len']}/{row['output_len']} "
                         f"| {label} | {thr} | {eff} |")
    return "\n".join(lines) + "\n"
