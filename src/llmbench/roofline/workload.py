"""A record as a roofline workload: model x hardware x workload, built once per record.

Record conventions (assumptions, stated once):
- weight dtype: workload.weight_dtype, overridden by workload.weight_quant (int8/fp8/...).
  'auto' means the engine's choice: an engine with its own rule says what its weights are and
  which peak its matmuls use (its module's `roofline_weights`, e.g. backends/llamacpp.py for
  GGUF files); others load the HF copy in its stored dtype: bf16 (backend.options.dtype wins
  when it names one).
- KV dtype: workload.kv_cache_dtype; 'auto'/None = the engine's default, else 16-bit (fp32
  when the weights are fp32).
- parallelism: workload.tensor_parallel / pipeline_parallel / expert_parallel (default 1).
- serving records: TTFT and TPOT bounds at one request (a strict lower bound whatever the
  load), throughput at batch = the requests actually in flight: the metric `inflight_mean`
  (time-weighted mean over the window, metrics.py), else workload.concurrency, else 1. The
  record's roofline says which (`concurrency`, `concurrency_source`). A mean is a valid
  batch for the bound: throughput is concave in the batch (linear while memory-bound, flat
  once compute-bound), so the bound at the mean is at least the mean of the bounds over time.
"""

from __future__ import annotations

from typing import Any

from llmbench.hardware import Hardware
from llmbench.models.catalog import ModelArch
from llmbench.roofline.model import Workload

_DTYPE_NAMES = {"float32": "fp32", "float": "fp32", "fp32": "fp32", "bfloat16": "bf16",
                "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
                "fp8": "fp8", "float8": "fp8", "int8": "int8", "int8_sq": "int8", "w8a8": "int8",
                "full_prec": "fp16", "f16": "fp16", "f32": "fp32", "q8_0": "q8_0",
                "q4_0": "q4_0", "q4_1": "q4_1", "tf32": "tf32"}


def dtype_name(v: Any) -> str | None:
    """A dtype as the roofline names it; None for 'auto', nothing or an unknown name."""
    if not isinstance(v, str) or v.lower() in ("", "auto", "none"):
        return None
    return _DTYPE_NAMES.get(v.lower().replace("torch.", ""))


def record_workload(rec, arch: ModelArch, hw: Hardware, notes: list[str]) -> Workload:
    """The inference workload a record ran (serving: at the requests in flight)."""
    w = rec.workload or {}
    wd = dtype_name(w.get("weight_quant")) or dtype_name(w.get("weight_dtype"))
    kvd = dtype_name(w.get("kv_cache_dtype"))
    rule = _engine_rule(rec, arch, hw, wd, kvd)
    weight_bytes = compute = None
    if rule is not None:
        wd, weight_bytes, compute, kvd = rule.weight_dtype, rule.weight_bytes, rule.compute_dtype, rule.kv_dtype
        notes.extend(rule.notes)
    elif wd is None:
        wd = dtype_name((rec.backend.options or {}).get("dtype")) or "bf16"
        if wd == "bf16" and w.get("weight_dtype") in (None, "auto"):
            notes.append("weight dtype 'auto' taken as bf16")
    if wd in ("q8_0", "q4_0", "q4_1") and compute is None:
        compute = "int8"
    kv_cache = str(w.get("kv_cache", "")).lower() not in ("without", "false", "off", "none_kv")
    batch = serving_concurrency(rec)[0] if rec.kind == "serving" else \
        int(w.get("batch_size") or w.get("concurrency") or 1)
    return Workload(
        batch_size=batch, input_len=int(w.get("input_len") or 1),
        output_len=int(w.get("output_len") or 1),
        weight_dtype=wd, kv_dtype=kvd, compute_dtype=compute, weight_bytes=weight_bytes,
        tensor_parallel=int(w.get("tensor_parallel") or 1),
        pipeline_parallel=int(w.get("pipeline_parallel") or 1),
        expert_parallel=int(w.get("expert_parallel") or 1), kv_cache=kv_cache)


def _engine_rule(rec, arch: ModelArch, hw: Hardware, wd: str | None, kvd: str | None):
    """The record's engine's own rule for its weights (None: the general rule above)."""
    from llmbench.backends import REGISTRY, engine_class
    from llmbench.backends.engine import RooflineAsk

    name = (rec.backend.name or "").lower()
    if name not in REGISTRY:  # an imported record's engine, or a server's
        return None
    return engine_class(name).roofline_weights(RooflineAsk(
        weight_dtype=wd, kv_dtype=kvd, workload=rec.workload or {},
        backend_options=rec.backend.options or {},
        weight_bytes=getattr(rec.model, "weight_bytes", None),
        synthetic_weights=bool(rec.model.synthetic_weights), arch=arch, hardware=hw))


def serving_concurrency(rec) -> tuple[float, str]:
    """(batch the serving throughput bound uses, where it came from)."""
    inflight = rec.metric("inflight_mean", "mean")
    if inflight and inflight > 0:
        return float(inflight), "inflight_mean"
    w = rec.workload or {}
    if w.get("concurrency"):
        return float(w["concurrency"]), "workload.concurrency"
    return 1.0, "none recorded: batch 1"
