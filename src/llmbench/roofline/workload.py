"""A record as a roofline workload: model x hardware x workload, built once per record.

`gather(record)` is the one step that reads the record, the model and hardware catalogs and the
engine's weight rule; it hands plain values (`RecordFacts`) to the arithmetic (model.py), which
never calls back into models/, hardware/, store/ or backends/.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmbench.roofline.model import Device, Facts, Shape, Workload

_DTYPE_NAMES = {"float32": "fp32", "float": "fp32", "fp32": "fp32", "bfloat16": "bf16",
                "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
                "fp8": "fp8", "float8": "fp8", "int8": "int8", "int8_sq": "int8", "w8a8": "int8",
                "full_prec": "fp16", "f16": "fp16", "f32": "fp32", "q8_0": "q8_0",
                "q4_0": "q4_0", "q4_1": "q4_1", "tf32": "tf32"}
INFERENCE_KINDS = ("inference", "serving", "reference")
# the record's metric means the roofline reads: the efficiencies' denominators, the serving batch
MEASURED = ("output_throughput_tok_s", "total_throughput_tok_s", "batch_latency_s", "ttft_s",
            "tpot_s", "itl_s", "tokens_per_s", "tflops", "step_time_s", "inflight_mean")


def dtype_name(v: Any) -> str | None:
    """A dtype as the roofline names it; None for 'auto', nothing or an unknown name."""
    if not isinstance(v, str) or v.lower() in ("", "auto", "none"):
        return None
    return _DTYPE_NAMES.get(v.lower().replace("torch.", ""))


def facts(model: str, hardware: str):
    """(catalog model, catalog hardware, the Facts a bound reads of them), or None when either
    is not in the catalogs. Every catalog call of a bound is made here, in one go."""
    from llmbench.hardware import find
    from llmbench.models.catalog import canonical_name, get_arch
    from llmbench.models.dtypes import BYTES, dtype_bytes

    hw = find(hardware)
    name = canonical_name(model or "")
    if hw is None or name is None:
        return None
    arch = get_arch(name)  # the catalog's, or one read from a local model's files
    params = arch.param_count()  # counted once; a dense model's are all active
    active = arch.active_param_count() if arch.num_experts > 1 else params
    shape = Shape(family=arch.family, layers=arch.layers, hidden=arch.hidden, q_dim=arch.q_dim,
                  kv_dim=arch.kv_dim, ffn=arch.ffn, vocab=arch.vocab,
                  max_position=arch.max_position, tie_embeddings=arch.tie_embeddings,
                  num_experts=arch.num_experts, experts_per_token=arch.experts_per_token,
                  params=params, active_params=active)
    device = Device(id=hw.id, memory_gb=hw.memory_gb, mem_bw=hw.mem_bw, link_bw=hw.link_bw,
                    peak_flops={d: hw.peak_flops(d) for d in BYTES}, measured=hw.measured)
    return arch, hw, Facts(shape, device, {d: dtype_bytes(d) for d in BYTES})


@dataclass(frozen=True)
class RecordFacts:
    """What the roofline reads of a record, gathered once, as plain values."""
    kind: str
    workload: Mapping[str, Any]            # the record's workload fields
    facts: Facts
    weight_dtype: str | None               # the record's names (dtype_name), None: not said
    kv_dtype: str | None
    option_dtype: str | None               # backend.options.dtype
    precision: str | None                  # a training record's
    rule: Any                              # the engine's WeightRule (backends/engine.py), or None
    device_count: int | None               # hardware.count: a training record's devices
    measured: Mapping[str, float | None]   # metric means, MEASURED


def gather(rec) -> RecordFacts | None:
    """The record, its model, hardware and engine rule read in one step; None when the
    catalogs cannot bound it."""
    if rec.kind != "training" and rec.kind not in INFERENCE_KINDS:
        return None
    w = rec.workload or {}
    wd = dtype_name(w.get("weight_quant")) or dtype_name(w.get("weight_dtype"))
    kvd = dtype_name(w.get("kv_cache_dtype"))
    option_dtype = dtype_name((rec.backend.options or {}).get("dtype"))
    precision = dtype_name(w.get("precision"))
    found = facts(rec.model.name or "", rec.hardware.name)
    if found is None:
        return None
    arch, hw, fx = found
    rule = None
    engine = (rec.backend.name or "").lower()
    if rec.kind != "training":
        from llmbench.backends import REGISTRY, engine_class
        from llmbench.backends.engine import RooflineAsk

        if engine in REGISTRY:  # else an imported record's engine, or a server's: the general rule
            rule = engine_class(engine).roofline_weights(RooflineAsk(
                weight_dtype=wd, kv_dtype=kvd, workload=w,
                backend_options=rec.backend.options or {},
                weight_bytes=getattr(rec.model, "weight_bytes", None),
                synthetic_weights=bool(rec.model.synthetic_weights), arch=arch, hardware=hw))
    measured = {k: rec.metric(k, "mean") for k in MEASURED}
    return RecordFacts(kind=rec.kind, workload=w, facts=fx, weight_dtype=wd, kv_dtype=kvd,
                       option_dtype=option_dtype, precision=precision, rule=rule,
                       device_count=rec.hardware.count,
                       measured=measured)


def record_workload(r: RecordFacts, notes: list[str]) -> Workload:
    """The inference workload a record ran (serving: at the requests in flight)."""
    w = r.workload
    wd, kvd, rule = r.weight_dtype, r.kv_dtype, r.rule
    weight_bytes = compute = None
    if rule is not None:
        wd, weight_bytes, compute, kvd = rule.weight_dtype, rule.weight_bytes, rule.compute_dtype, rule.kv_dtype
        notes.extend(rule.notes)
    elif wd is None:
        wd = r.option_dtype or "bf16"
        if wd == "bf16" and w.get("weight_dtype") in (None, "auto"):
            notes.append("weight dtype 'auto' taken as bf16")
    if wd in ("q8_0", "q4_0", "q4_1") and compute is None:
        compute = "int8"
    kv_cache = str(w.get("kv_cache", "")).lower() not in ("without", "false", "off", "none_kv")
    batch = serving_concurrency(r)[0] if r.kind == "serving" else \
        int(w.get("batch_size") or w.get("concurrency") or 1)
    return Workload(
        batch_size=batch, input_len=int(w.get("input_len") or 1),
        output_len=int(w.get("output_len") or 1),
        weight_dtype=wd, kv_dtype=kvd, compute_dtype=compute, weight_bytes=weight_bytes,
        tensor_parallel=int(w.get("tensor_parallel") or 1),
        pipeline_parallel=int(w.get("pipeline_parallel") or 1),
        expert_parallel=int(w.get("expert_parallel") or 1), kv_cache=kv_cache)


def serving_concurrency(r: RecordFacts) -> tuple[float, str]:
    """(batch the serving throughput bound uses, where it came from)."""
    inflight = r.measured.get("inflight_mean")
    if inflight and inflight > 0:
        return float(inflight), "inflight_mean"
    w = r.workload
    if w.get("concurrency"):
        return float(w["concurrency"]), "workload.concurrency"
    return 1.0, "none recorded: batch 1"
