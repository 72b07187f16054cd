"""Roofline bounds for records: `annotate(record)` fills `record.roofline` in place, stamped
with the roofline's version (llmbench/definitions.py; `llmbench annotate` re-annotates stored records).

The bound comes from `model.py`; this module only turns a record (own run or imported) into a
model x hardware x workload and compares the bound with the measured metrics:
efficiency = measured / bound for throughputs and TFLOP/s, bound / measured for times, so
1.0 means "at the physical limit" and above 1.0 means the bound's assumptions were broken
(every such record gets a note saying which measured metric did it).

Record conventions (assumptions, stated once):
- weight dtype: workload.weight_dtype, overridden by workload.weight_quant (int8/fp8/...).
  'auto' means the engine's choice: llama.cpp runs the GGUF's own types, so its weight bytes
  are model.weight_bytes when the record carries them, else the bundled SmolLM2 GGUF's tensor
  bytes (Q4_1 blocks, Q8_0 embeddings: 96.6 MB, 5.7 bits/param), else Q4_1 (5.0 bits/param:
  32 4-bit weights + fp16 scale + fp16 min per block). Its compute roof is the arithmetic its
  kernels run for the record's GGUF type (`gguf_type`: llama.cpp's own description of the
  file, else the type asked of a synthetic model): 16-bit types the 16-bit peak, quantised
  types the int8 peak (llamacpp_compute below).
  Other engines under 'auto' load the HF copy in its stored dtype: bf16 (backend.options.dtype
  wins when it names one).
- KV dtype: workload.kv_cache_dtype; 'auto'/None = 16-bit (fp32 when the weights are fp32).
- parallelism: workload.tensor_parallel / pipeline_parallel / expert_parallel (default 1).
- serving records: TTFT and TPOT bounds at one request (a strict lower bound whatever the
  load), throughput at batch = the requests actually in flight: the metric `inflight_mean`
  (time-weighted mean over the window, metrics.py), else workload.concurrency, else 1. The
  record's roofline says which (`concurrency`, `concurrency_source`). A mean is a valid
  batch for the bound: throughput is concave in the batch (linear while memory-bound, flat
  once compute-bound), so the bound at the mean is at least the mean of the bounds over time.
"""

from __future__ import annotations

import functools
from typing import Any

from llmbench.hardware import Hardware, find
from llmbench.models.catalog import CATALOG, ModelArch, canonical_name, get_arch
from llmbench.roofline.model import (BYTES, InferenceBound, TrainingBound, Workload,
                                     inference_bound, training_bound)

__all__ = ["annotate", "bound_for", "inference_bound", "training_bound", "Workload"]

Q4_1_BYTES_PER_PARAM = 20 / 32
_DTYPE_NAMES = {"float32": "fp32", "float": "fp32", "fp32": "fp32", "bfloat16": "bf16",
                "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
                "fp8": "fp8", "float8": "fp8", "int8": "int8", "int8_sq": "int8", "w8a8": "int8",
                "full_prec": "fp16", "f16": "fp16", "f32": "fp32", "q8_0": "q8_0",
                "q4_0": "q4_0", "q4_1": "q4_1", "tf32": "tf32"}


def _dtype(v: Any) -> str | None:
    if not isinstance(v, str) or v.lower() in ("", "auto", "none"):
        return None
    return _DTYPE_NAMES.get(v.lower().replace("torch.", ""))


@functools.cache  # reading the GGUF's tensor table takes seconds; once per process is enough
def _bundled_gguf_bytes(model: str) -> float | None:
    arch = CATALOG.get(model)
    if not arch or not arch.bundled:
        return None
    try:
        from llmbench.models.sources import smollm2_gguf

        path = smollm2_gguf()
    except Exception:
        return None
    try:
        from gguf import GGUFReader

        return float(sum(int(t.n_bytes) for t in GGUFReader(path).tensors))
    except Exception:  # gguf missing: the file size (metadata included, ~2% more)
        return float(path.stat().st_size)


# What llama.cpp computes each GGUF weight type's matmuls in, read in the llama.cpp that
# llama-cpp-python 0.3.36 vendors (docs/roofline.md cites the functions): quantised types run
# int8 dot products (CUDA MMQ / MMVQ on q8_1 activations, ggml-cuda/mmq.cu
# ggml_cuda_should_use_mmq; CPU vec_dot against q8_0/q8_K), F16/BF16 their 16-bit type on CUDA
# (cuBLAS, ggml-cuda.cu ggml_cuda_mul_mat), F16 fp32 FMAs on an x86 CPU.
GGUF_MMQ_TYPES = frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k",
                            "q5_k", "q6_k", "iq1_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs",
                            "iq3_s", "iq4_xs", "iq4_nl", "mxfp4"})
GGUF_FLOAT_TYPES = {"f16": "fp16", "fp16": "fp16", "bf16": "bf16", "f32": "fp32", "fp32": "fp32"}


def llamacpp_compute(gguf_type: str, hw: Hardware, notes: list[str]) -> str:
    """The peak llama.cpp's matmuls on `gguf_type` weights can reach on `hw` (see above)."""
    t = gguf_type.lower()
    if t in GGUF_FLOAT_TYPES:
        c = GGUF_FLOAT_TYPES[t]
        if c == "fp16" and hw.vendor == "cpu":
            notes.append("llama.cpp F16 on a CPU multiplies in fp32: the fp32 peak")
            return "fp32"
        return c
    if t in GGUF_MMQ_TYPES:
        return "int8"
    # not an MMQ type: dequantised to 16-bit (CUDA) -- take the faster peak, a bound either way
    notes.append(f"llama.cpp weight type {gguf_type!r}: kernels not read, the higher of the "
                 "int8 and 16-bit peaks")
    peaks = {d: hw.peak_flops(d) or 0.0 for d in ("int8", "fp16")}
    return max(peaks, key=peaks.get)


def _gguf_type(rec) -> str | None:
    """A llama.cpp record's dominant GGUF weight type: llama.cpp's own description (workload),
    else the type asked of a synthetic model (backend options; f16 its default), else None."""
    w, opts = rec.workload or {}, rec.backend.options or {}
    for v in (w.get("gguf_type"), opts.get("gguf_type")):
        if isinstance(v, str) and v.strip():
            return v.strip().lower()
    return "f16" if rec.model.synthetic_weights else None


def workload_of(rec, arch: ModelArch, notes: list[str], hw: Hardware) -> Workload:
    w = rec.workload or {}
    backend = (rec.backend.name or "").lower()
    wd = _dtype(w.get("weight_quant")) or _dtype(w.get("weight_dtype"))
    weight_bytes = None
    compute = None
    if wd is None:
        gt = _gguf_type(rec) if backend == "llamacpp" else None
        if backend == "llamacpp":
            weight_bytes = getattr(rec.model, "weight_bytes", None)
            if weight_bytes is None and gt is None:
                weight_bytes = _bundled_gguf_bytes(arch.name)
            if weight_bytes is None and gt is not None and gt in BYTES:
                weight_bytes = arch.param_count() * BYTES[gt]
                notes.append(f"llama.cpp weights {gt} ({BYTES[gt] * 8:.2f} bits/param)")
            elif weight_bytes is None:
                weight_bytes = arch.param_count() * Q4_1_BYTES_PER_PARAM
                notes.append("llama.cpp weights assumed Q4_1 (5.0 bits/param)")
            else:
                notes.append(f"llama.cpp weight bytes {weight_bytes / 1e6:.1f} MB from the GGUF")
            wd = GGUF_FLOAT_TYPES.get(gt or "q4_1", gt or "q4_1")
            compute = llamacpp_compute(gt or "q4_1", hw, notes)
        else:
            wd = _dtype((rec.backend.options or {}).get("dtype")) or "bf16"
            if wd == "bf16" and w.get("weight_dtype") in (None, "auto"):
                notes.append("weight dtype 'auto' taken as bf16")
    elif backend == "llamacpp":
        compute = llamacpp_compute(wd, hw, notes)
    kvd = _dtype(w.get("kv_cache_dtype"))
    if backend == "llamacpp" and kvd is None:
        kvd = "fp16"   # llama.cpp's default cache type (type_k / type_v F16)
    if wd in ("q8_0", "q4_0", "q4_1") and compute is None:
        compute = "int8"
    kv_cache = str(w.get("kv_cache", "")).lower() not in ("without", "false", "off", "none_kv")
    return Workload(
        batch_size=int(w.get("batch_size") or w.get("concurrency") or 1),
        input_len=int(w.get("input_len") or 1), output_len=int(w.get("output_len") or 1),
        weight_dtype=wd, kv_dtype=kvd, compute_dtype=compute, weight_bytes=weight_bytes,
        tensor_parallel=int(w.get("tensor_parallel") or 1),
        pipeline_parallel=int(w.get("pipeline_parallel") or 1),
        expert_parallel=int(w.get("expert_parallel") or 1), kv_cache=kv_cache)


def bound_for(rec) -> tuple[InferenceBound | TrainingBound, Hardware, list[str]] | None:
    """The bound for a record, or None when its hardware or model is not in the catalogs."""
    hw = find(rec.hardware.name)
    name = canonical_name(rec.model.name or "")
    if hw is None or name is None:
        return None
    arch = get_arch(name)  # the catalog's, or one read from a local model's files
    notes: list[str] = []
    w = rec.workload or {}
    if rec.kind == "training":
        seq = int(w.get("seq_len") or w.get("input_len") or 1)
        tokens = w.get("tokens_per_step")
        bs = int(tokens // seq) if tokens else int(w.get("batch_size") or 1)
        devices = int(w.get("nproc") or rec.hardware.count or 1)
        dtype = _dtype(w.get("precision")) or "bf16"
        b = training_bound(arch, hw, batch_size=bs, seq_len=seq, devices=devices, dtype=dtype)
        return b, hw, notes + b.notes
    if rec.kind not in ("inference", "serving", "reference"):
        return None
    wl = workload_of(rec, arch, notes, hw)
    if rec.kind == "serving":
        wl.batch_size = serving_concurrency(rec)[0]
    if w.get("speculative_model") not in (None, "", "None"):
        notes.append("bound without speculation: speculative decoding may exceed it")
    b = inference_bound(arch, hw, wl)
    return b, hw, notes + b.notes


def serving_concurrency(rec) -> tuple[float, str]:
    """(batch the serving throughput bound uses, where it came from)."""
    inflight = rec.metric("inflight_mean", "mean")
    if inflight and inflight > 0:
        return float(inflight), "inflight_mean"
    w = rec.workload or {}
    if w.get("concurrency"):
        return float(w["concurrency"]), "workload.concurrency"
    return 1.0, "none recorded: batch 1"


def _measured(rec, name: str) -> float | None:
    v = rec.metric(name, "mean")
    return v if v and v > 0 else None


def annotate(rec) -> bool:
    """Fill rec.roofline (bound, binding_resource, efficiency); False when not possible."""
    if rec.status != "ok":
        return False
    try:
        got = bound_for(rec)
    except Exception as e:  # a bound is an annotation: it must never fail a measured record
        rec.notes.append(f"roofline not computed: {type(e).__name__}: {e}")
        return False
    if got is None:
        return False
    b, hw, notes = got
    from llmbench.definitions import ROOFLINE_VERSION
    from llmbench.store.record import Roofline

    eff: dict[str, float] = {}
    if isinstance(b, TrainingBound):
        # TFLOP/s at the bound's pace in the record's own FLOP count (its N, counted on the built
        # model, full attention as `tflops` is): the same efficiency as tokens/s by construction
        fpt = (rec.workload or {}).get("flops_per_token")
        tflops = b.tokens_per_s * float(fpt) / 1e12 if fpt else b.tflops
        bound = {"step_time_s": b.step_time_s, "tokens_per_s": b.tokens_per_s, "tflops": tflops,
                 "peak_tflops": b.peak_tflops}
        for k in ("tokens_per_s", "tflops"):
            if (m := _measured(rec, k)) and bound[k]:
                eff[k] = m / bound[k]
        if (m := _measured(rec, "step_time_s")):
            eff["step_time_s"] = b.step_time_s / m
    else:
        serving = rec.kind == "serving"
        ttft_b = b.ttft_s
        if (rec.workload or {}).get("ttft_definition") == "batch":
            ttft_b = b.prefill_s  # the paper's TTFT: the whole batch's first token
        bound = {"batch_latency_s": b.batch_latency_s, "ttft_s": ttft_b, "prefill_s": b.prefill_s,
                 "output_throughput_tok_s": b.output_throughput_tok_s,
                 "total_throughput_tok_s": b.total_throughput_tok_s,
                 "prefill_tok_s": b.prefill_tok_s}
        if b.tpot_s is not None:
            bound["tpot_s"] = bound["itl_s"] = b.tpot_s
        for k in ("decode_tok_s", "decode_phase_tok_s"):
            if getattr(b, k) is not None:
                bound[k] = getattr(b, k)
        if serving:  # a single request: lower bounds whatever the load
            one = bound_for(_at_batch_one(rec))
            if one is not None:
                bound["ttft_s"] = one[0].ttft_s
                if one[0].tpot_s is not None:
                    bound["tpot_s"] = bound["itl_s"] = one[0].tpot_s
            bound.pop("batch_latency_s")
        for k in ("output_throughput_tok_s", "total_throughput_tok_s"):
            if (m := _measured(rec, k)):
                eff[k] = m / bound[k]
        for k in ("batch_latency_s", "ttft_s", "tpot_s", "itl_s"):
            if k in bound and (m := _measured(rec, k)):
                eff[k] = bound[k] / m
    over = sorted(k for k, v in eff.items() if v > 1.0)
    if over:
        notes.append(f"efficiency above 1 for {', '.join(over)}: faster than the roofline bound")
    extra = {}
    if rec.kind == "serving":
        c, src = serving_concurrency(rec)
        extra = {"concurrency": c, "concurrency_source": src}
        notes.append(f"throughput bound at {c:.2f} requests in flight ({src})")
    rec.roofline = Roofline(bound={k: float(v) for k, v in bound.items() if v is not None},
                            binding_resource=b.binding_resource, efficiency=eff,
                            hardware_id=hw.id, devices=b.devices, notes=notes,
                            version=ROOFLINE_VERSION, **extra)
    return True


def _at_batch_one(rec):
    c = rec.model_copy(deep=True)
    c.kind = "inference"
    c.workload = {**(rec.workload or {}), "batch_size": 1, "concurrency": 1}
    return c
