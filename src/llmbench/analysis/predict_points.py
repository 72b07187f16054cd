"""Records -> the frame analysis/predict.py learns from: one row per measured inference point
with a roofline bound (roofline/annotate.py computes it afresh, so every point is on the
current roofline), its shape features, its hardware's peaks, and per metric bound and
measured value."""

from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from llmbench.analysis.predict import METRICS
from llmbench.hardware import find
from llmbench.models.catalog import canonical_name, get_arch
from llmbench.models.dtypes import dtype_bytes
from llmbench.roofline import annotate
from llmbench.roofline.workload import dtype_name


def point_key(model: str, engine: str, dtype: str, tp: int, batch: int, inp: int, out: int) -> str:
    return f"{model}|{engine}|{dtype}|tp{tp}|b{batch}|{inp}x{out}"


def _dtype_bytes(dtype: str | None) -> float:
    try:
        return float(dtype_bytes(dtype or "bf16"))
    except ValueError:  # a quant name the dtype table lacks ('auto'): 16-bit, as the bound assumes
        return 2.0


def row(rec) -> dict | None:
    """The record's point, or None when it is no measured inference point with a bound."""
    if rec.kind not in ("inference", "reference") or rec.status != "ok":
        return None
    if not annotate(rec) or rec.roofline is None:
        return None
    name = canonical_name(rec.model.name or "")
    hw = find(rec.hardware.name)
    if name is None or hw is None:
        return None
    arch = get_arch(name)
    w = rec.workload or {}
    bound = rec.roofline.bound
    # the weights as they ran: a quantisation (vLLM's weight_quant=fp8) over the stored dtype,
    # as the roofline reads them (roofline/workload.py)
    dtype = (dtype_name(w.get("weight_quant")) or dtype_name(w.get("weight_dtype"))
             or str(w.get("weight_dtype") or "bf16"))
    batch, inp, out = int(w.get("batch_size") or 1), int(w.get("input_len") or 1), int(w.get("output_len") or 1)
    tp = int(w.get("tensor_parallel") or 1) * int(w.get("pipeline_parallel") or 1)
    params = float(rec.model.params or arch.public_params or 1.0)
    peak = hw.peak_flops(dtype if dtype in ("fp32", "bf16", "fp16", "fp8", "int8") else "bf16")
    lat = bound.get("batch_latency_s")
    r = {"engine": rec.backend.name, "engine_version": str(rec.backend.version or ""),
         "run_id": rec.run_id, "kv_dtype": dtype_name(w.get("kv_cache_dtype")) or "",
         "hardware": hw.id, "vendor": hw.vendor, "model": name,
         "dtype": dtype,
         "batch": batch, "input_len": inp, "output_len": out, "devices": rec.roofline.devices or tp,
         "point": point_key(name, rec.backend.name, dtype, tp, batch, inp, out),
         "log_batch": math.log2(batch), "log_input": math.log2(inp), "log_output": math.log2(out),
         "log_params": math.log(params), "log_gqa": math.log2(arch.heads / arch.kv_heads),
         "binding": rec.roofline.binding_resource,
         "memory_bound": float(rec.roofline.binding_resource != "compute"),
         "prefill_share": (bound.get("prefill_s") or 0.0) / lat if lat else 0.0,
         "log_devices": math.log2(max(rec.roofline.devices or 1, 1)),
         "log_weight_bytes": math.log2(_dtype_bytes(dtype)),
         "mem_bw": float(hw.mem_bw_gbs or float("nan")), "peak": float(peak or float("nan")),
         "log_step_s": math.log2(lat / out) if lat else 0.0,
         "moe_read": moe_read(arch, batch),
         "kv_over": kv_over(arch, params * _dtype_bytes(dtype), w.get("kv_cache_dtype"), batch,
                            inp + out, (hw.memory_gb or 0.0) * (rec.roofline.devices or tp))}
    r.update(operator_columns(rec))
    for m in METRICS:
        meas = rec.metric(m, "mean")
        r[f"measured_{m}"] = float(meas) if meas else float("nan")
        r[f"bound_{m}"] = float(bound.get(m) or float("nan"))
    return r


def operator_columns(rec) -> dict:
    """The record's operator terms (roofline/model.py's operator_terms, per device), as
    columns `op_*`: what analysis/predict_physics.py times with an efficiency per operator."""
    from llmbench.roofline.model import operator_terms
    from llmbench.roofline.workload import gather, record_workload

    r = gather(rec)
    t = operator_terms(r.facts, record_workload(r, []))
    return {f"op_{k}": float("nan") if v is None else float(v) for k, v in t.as_dict().items()}


def moe_read(arch, batch: int) -> float:
    """log(bytes a decode step of `batch` tokens reads / the bound's): each token routes to k of
    E experts per layer, so a step reads the union, E x (1 - (1 - k/E)^batch) experts in
    expectation where the bound counts k."""
    if arch.num_experts <= 1:
        return 0.0
    e, k = arch.num_experts, arch.experts_per_token
    expert = arch.layers * 3 * arch.hidden * arch.ffn * e / arch.param_count()  # experts' share
    dense = 1.0 - expert
    union = 1.0 - (1.0 - k / e) ** batch
    return math.log((dense + expert * union) / (dense + expert * k / e))


def kv_over(arch, weight_bytes: float, kv_dtype: str | None, batch: int, context: int,
            memory_gb: float) -> float:
    """log2(weights + the whole batch's KV cache at full context / the devices' memory), 0 where
    it fits (or the memory is unknown): past 1, the engine holds only part of the batch."""
    if memory_gb <= 0:
        return 0.0
    kv = arch.kv_bytes_per_token(_dtype_bytes(kv_dtype or "bf16"))
    return max(0.0, math.log2((weight_bytes + batch * context * kv) / (memory_gb * 1e9)))


def frame(records: Iterable) -> pd.DataFrame:
    rows = [r for r in map(row, records) if r is not None]
    return pd.DataFrame(rows).reset_index(drop=True)


def query(model: str, engine: str, hardware: str, dtype: str, batch: int, inp: int, out: int,
          tp: int = 1) -> pd.DataFrame:
    """A one-row frame for a point nobody measured (its measured values NaN)."""
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    w = {"batch_size": batch, "input_len": inp, "output_len": out, "weight_dtype": dtype,
         "kv_cache_dtype": None, "tensor_parallel": tp, "pipeline_parallel": 1}
    arch = get_arch(canonical_name(model))
    rec = Record(run_id="predict", kind="inference", status="ok", point_key="predict",
                 backend=BackendInfo(name=engine), hardware=HardwareInfo(name=hardware, count=tp),
                 model=ModelInfo(name=model, source="catalog", params=arch.param_count()),
                 workload=w, metrics={})
    got = row(rec)
    if got is None:
        raise ValueError(f"no roofline bound for {model} on {hardware}")
    return pd.DataFrame([got])
