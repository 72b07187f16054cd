"""`annotate(record)`: the record's roofline, asked once, filled into `record.roofline` in
place and stamped with the roofline's version (llmbench/definitions.py; `llmbench annotate`
re-annotates stored records).

efficiency = measured / bound for throughputs and TFLOP/s, bound / measured for times, so 1.0
means "at the physical limit" and above 1.0 means the bound's assumptions were broken (every
such record gets a note saying which measured metric did it). The record's workload is built
once (workload.py); a serving record's TTFT/TPOT bounds are the same workload at one request.
"""

from __future__ import annotations

from dataclasses import replace

from llmbench.roofline.model import Device, InferenceBound, TrainingBound, inference_bound, training_bound
from llmbench.roofline.workload import RecordFacts, gather, record_workload, serving_concurrency


def bound_for(rec) -> tuple[InferenceBound | TrainingBound, Device, list[str]] | None:
    """The bound for a record, or None when its hardware or model is not in the catalogs."""
    r = gather(rec)
    return None if r is None else _bounds(r)[:3]


def _bounds(r: RecordFacts) -> tuple[InferenceBound | TrainingBound, Device, list[str],
                                     InferenceBound | None]:
    """(bound, device, notes, the bound at one request for a serving record): arithmetic only."""
    notes: list[str] = []
    w, fx = r.workload, r.facts
    if r.kind == "training":
        seq = int(w.get("seq_len") or w.get("input_len") or 1)
        tokens = w.get("tokens_per_step")
        bs = int(tokens // seq) if tokens else int(w.get("batch_size") or 1)
        devices = int(w.get("nproc") or r.device_count or 1)
        b = training_bound(fx, batch_size=bs, seq_len=seq, devices=devices,
                           dtype=r.precision or "bf16")
        return b, fx.device, notes + b.notes, None
    wl = record_workload(r, notes)
    if w.get("speculative_model") not in (None, "", "None"):
        notes.append("bound without speculation: speculative decoding may exceed it")
    b = inference_bound(fx, wl)
    one = inference_bound(fx, replace(wl, batch_size=1)) if r.kind == "serving" else None
    return b, fx.device, notes + b.notes, one


def _measured(r: RecordFacts, name: str) -> float | None:
    v = r.measured.get(name)
    return v if v and v > 0 else None


def annotate(rec) -> bool:
    """Fill rec.roofline (bound, binding_resource, efficiency); False when not possible."""
    from llmbench.definitions import ROOFLINE_VERSION
    from llmbench.store.record import Roofline

    if rec.status != "ok":
        return False
    try:
        r = gather(rec)  # the one step that reads the record, the catalogs and the engine
        if r is None:
            return False
        b, device, notes, one = _bounds(r)
    except Exception as e:  # a bound is an annotation: it must never fail a measured record
        rec.notes.append(f"roofline not computed: {type(e).__name__}: {e}")
        return False
    if isinstance(b, TrainingBound):
        bound, eff = _training(r, b)
    else:
        bound, eff = _inference(r, b, one)
    over = sorted(k for k, v in eff.items() if v > 1.0)
    if over:
        why = ("; the bound's peaks are this machine's own measurement, which other load makes read "
               "low: `llmbench roofline --hardware cpu --remeasure` on a quiet machine"
               if device.measured else "")
        notes.append(f"efficiency above 1 for {', '.join(over)}: faster than the roofline bound{why}")
    extra = {}
    if r.kind == "serving":
        c, src = serving_concurrency(r)
        extra = {"concurrency": c, "concurrency_source": src}
        notes.append(f"throughput bound at {c:.2f} requests in flight ({src})")
    rec.roofline = Roofline(bound={k: float(v) for k, v in bound.items() if v is not None},
                            binding_resource=b.binding_resource, efficiency=eff,
                            hardware_id=device.id, devices=b.devices, notes=notes,
                            version=ROOFLINE_VERSION, **extra)
    return True


def _training(r: RecordFacts, b: TrainingBound) -> tuple[dict, dict[str, float]]:
    # TFLOP/s at the bound's pace in the record's own FLOP count (its N, counted on the built
    # model, full attention as `tflops` is): the same efficiency as tokens/s by construction
    fpt = r.workload.get("flops_per_token")
    tflops = b.tokens_per_s * float(fpt) / 1e12 if fpt else b.tflops
    bound = {"step_time_s": b.step_time_s, "tokens_per_s": b.tokens_per_s, "tflops": tflops,
             "peak_tflops": b.peak_tflops}
    eff: dict[str, float] = {}
    for k in ("tokens_per_s", "tflops"):
        if (m := _measured(r, k)) and bound[k]:
            eff[k] = m / bound[k]
    if (m := _measured(r, "step_time_s")):
        eff["step_time_s"] = b.step_time_s / m
    return bound, eff


def _inference(r: RecordFacts, b: InferenceBound, one: InferenceBound | None) -> tuple[dict, dict[str, float]]:
    ttft_b = b.ttft_s
    if r.workload.get("ttft_definition") == "batch":
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
    if r.kind == "serving":  # a single request: lower bounds whatever the load
        bound["ttft_s"] = one.ttft_s
        if one.tpot_s is not None:
            bound["tpot_s"] = bound["itl_s"] = one.tpot_s
        bound.pop("batch_latency_s")
    eff: dict[str, float] = {}
    for k in ("output_throughput_tok_s", "total_throughput_tok_s"):
        if (m := _measured(r, k)):
            eff[k] = m / bound[k]
    for k in ("batch_latency_s", "ttft_s", "tpot_s", "itl_s"):
        if k in bound and (m := _measured(r, k)):
            eff[k] = bound[k] / m
    return bound, eff
