"""A training measurement as a Record (kind 'training'): the metric definitions live here.

Per timed step i (after warm-up): tokens_per_s_i = tokens in the step, all devices / step time;
tflops_i = tokens_per_s_i * flops_per_token / 1e12 (flops.py), so `tflops` agrees with
`tokens_per_s` x (6N + 12·L·h·s) by construction; `tflops_per_device` divides by the device
count; `mfu` = tflops_per_device / the hardware's dense peak for the precision;
`mfu_measured_peak` = tflops_per_device / the matrix-product peak measured in the same run and
sustained under the enforced power limit in force (peaks.py: the median of the last timed
windows once they settle), with that peak's min, max, spread, first burst and power state
(limit, clocks, throttle fractions, mean power) beside it; the steps' own power state is in
`hardware_counters` (sampled through their window), and a note says when the two limits differ.
`compile_time_s` = first step − median timed step (compile runs only); `first_step_s` always.
"""

from __future__ import annotations

import statistics
from typing import Any

from llmbench.measure.stats import summarize
from llmbench.measure.metric_stats import MetricStats
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.kinds.training.config import TrainPoint
from llmbench.kinds.training.peaks import SPREAD_GOAL, hardware_peak
from llmbench.measure.power import reliable_window_s



def one(value: float, unit: str) -> MetricStats:
    return summarize([value], unit)


def workload_fields(p: TrainPoint, r: dict[str, Any] | None = None) -> dict[str, Any]:
    w = {
        "workload": p.workload, "size": p.size or None, "mode": p.mode, "style": p.style
        if p.workload == "block" else None, "seq_len": p.seq_len, "micro_batch": p.micro_batch,
        "grad_accum": p.grad_accum, "nproc": p.nproc, "precision": p.precision,
        "sparsity": p.sparsity, "compile": p.compile,
        "activation_checkpointing": p.activation_checkpointing, "attn_backend": p.attn_backend,
        "compile_mode": p.compile_mode, "optimizer": p.optimizer, "loss": p.loss,
        "head_pad": p.head_pad,
        **({"compile_scope": p.compile_scope} if p.compile_scope != "layers" else {}),
        "learnable": p.learnable, "steps": p.steps, "warmups": p.warmup,
        "hidden": p.hidden, "heads": p.heads, "layers": p.layers, "kv_heads": p.kv_heads,
        "batch_size": p.micro_batch * p.grad_accum * p.nproc,
        "input_len": p.seq_len,
    }
    if r is not None:
        w.update(hidden=r["hidden"], heads=r["heads"], layers=r["layers"],
                 parallel=r["parallel"], flop_params=r["flop_params"],
                 flops_per_token=r["flops_per_token"], tokens_per_step=r["tokens_per_step"])
    return w


def base_record(p: TrainPoint, run_id: str, hardware: dict[str, Any], env: dict[str, Any]) -> Record:
    """What every record of the point holds, measured or failed."""
    return Record(run_id=run_id, point_key=p.key, kind="training",
                  backend=BackendInfo(name="pytorch"), model=ModelInfo(name=f"{p.workload}-{p.size}"),
                  hardware=HardwareInfo(**hardware), workload=workload_fields(p),
                  spec=p.model_dump(mode="json"), env=env)


def fill(rec: Record, p: TrainPoint, r: dict[str, Any], torch_version: str | None) -> Record:
    """The measurement `r` (loop.run's result) into the point's record."""
    times = r["step_times_s"]
    world = r["world"]
    tps = [r["tokens_per_step"] / t for t in times]
    tflops = [x * r["flops_per_token"] / 1e12 for x in tps]
    per_dev = [x / world for x in tflops]
    m: dict[str, MetricStats] = {
        "step_time_s": summarize(times, "s"),
        "tokens_per_s": summarize(tps, "tok/s"),
        "tokens_per_s_per_device": summarize([x / world for x in tps], "tok/s"),
        "samples_per_s": summarize([r["samples_per_step"] / t for t in times], "samples/s"),
        "tflops": summarize(tflops, "TFLOP/s"),
        "tflops_per_device": summarize(per_dev, "TFLOP/s"),
        "tflops_causal": summarize([x * r["flops_per_token_causal"] / 1e12 for x in tps], "TFLOP/s"),
        "mem_peak_gib": one(r["mem_peak_gib"], "GiB"),
        "first_step_s": one(r["first_step_s"], "s"),
    }
    notes = list(r.get("notes", []))
    peak, peak_src = hardware_peak(r["device_name"], p.precision)
    if peak:
        m["mfu"] = summarize([x * 1e12 / peak for x in per_dev], "ratio")
    else:
        notes.append(f"mfu absent: {peak_src}")
    meas = r.get("measured_peak")
    if meas:
        m.update(measured_peak_metrics(meas, per_dev))
        if (sp := meas.get("spread")) is not None and sp > SPREAD_GOAL:
            notes.append(f"measured matmul peak varied +-{sp:.1%} between its windows (goal "
                         f"+-{SPREAD_GOAL:.0%}): mfu_measured_peak is that uncertain")
        if note := power_state_note(meas, r.get("hardware_counters") or {}):
            notes.append(note)
    if p.compile:
        m["compile_time_s"] = one(max(0.0, r["first_step_s"] - statistics.median(times)), "s")
    if r.get("energy_j") is not None:
        m["energy_j"] = one(r["energy_j"], "J")
        m["avg_power_w"] = one(r["avg_power_w"], "W")
        m["energy_per_token_j"] = one(r["energy_j"] / (r["tokens_per_step"] * len(times)), "J/tok")
        if r.get("energy_window_s") is not None:
            m["energy_window_s"] = one(r["energy_window_s"], "s")
            if r["energy_window_s"] < reliable_window_s(r.get("power") or {}):
                notes.append(f"energy measured over {r['energy_window_s']:.2f} s only: its "
                             "power readings are too coarse for that; take more --steps for energy")
    if r["losses"]:
        m["loss_first"] = one(r["losses"][0], "nat")
        m["loss_last"] = one(r["losses"][-1], "nat")
    notes.append(f"peak memory: {r['mem_what']}")
    rec.backend = BackendInfo(
        name="pytorch", version=torch_version,
        options={"compile": p.compile, "compile_mode": p.compile_mode if p.compile else None,
                 "compile_scope": p.compile_scope if p.compile else None,
                 "parallel": r["parallel"], "loss": p.loss, "head_pad": p.head_pad,
                 "optimizer": f"AdamW ({r['optimizer']})" if r.get("optimizer") else None,
                 "autocast": p.precision in ("bf16", "fp8") and p.workload != "block"})
    rec.model = ModelInfo(name=r["model_name"], source="llmbench.train", params=r["total_params"],
                          synthetic_weights=True, flop_params=r["flop_params"], **{"info": r["info"]})
    rec.workload = workload_fields(p, r)
    rec.metrics.update(m)
    rec.power = r.get("power") or {"available": False, "reason": "no meter opened"}
    rec.observers.update(r.get("observers") or {})
    if (contention := r.get("contention")) is not None:
        rec.env = {**rec.env, "contention": contention}  # env may be shared by the kind's records
        if contention["contended"]:
            notes.append("contended: " + "; ".join(contention["reasons"]))
    rec.notes.extend(notes)
    from llmbench.measure.gpm import attach as gpm_attach

    gpm_attach(rec, r.get("hardware_counters") or {"absent": "no counters read (not rank 0's record)"})
    rec.spec = {**p.model_dump(mode="json"), "peak": {"hardware_flops": peak, "source": peak_src,
                                                      "measured": meas}}
    return rec


def power_state_note(meas: dict[str, Any], counters: dict[str, Any]) -> str | None:
    """A note when the peak and the steps ran under different enforced power limits (then
    mfu_measured_peak divides by a peak of another power state), else None."""
    peak_w = ((meas.get("power_state") or {}).get("power_limit_w") or {}).get("enforced")
    steps_w = (counters.get("power_limit_w") or {}).get("enforced")
    if peak_w is None or steps_w is None or peak_w == steps_w:
        return None
    return (f"power limit changed: the matmul peak was measured under {peak_w:.0f} W, the steps "
            f"ran under {steps_w:.0f} W; mfu_measured_peak divides by another power state's peak")


def measured_peak_metrics(meas: dict[str, Any], per_dev_tflops: list[float]) -> dict[str, MetricStats]:
    """`matmul_peak_tflops` (one sample per timed window; a record before windows has one)
    and `mfu_measured_peak` = TFLOP/s per device / the median window, carrying beside it the
    peak's median, min, max, spread, the MFU range the peak's spread allows, and (runs since
    issue 37) whether it settled, its first burst and the power state it was sustained under."""
    windows = [f / 1e12 for f in meas.get("windows_flops") or [meas["flops"]]]
    peak = meas["flops"] / 1e12
    mfu = summarize([x / peak for x in per_dev_tflops], "ratio")
    mfu.peak_tflops = {"median": peak, "min": min(windows), "max": max(windows),
                       "windows": len(windows), "spread": meas.get("spread")}
    if "settled" in meas:
        state = meas.get("power_state") or {}
        mfu.peak_tflops.update(
            settled=meas["settled"], burst_tflops=meas["burst_flops"] / 1e12,
            windows_taken=meas["windows_taken"],
            power_limit_w=(state.get("power_limit_w") or {}).get("enforced"),
            sm_clock_mhz=(state.get("sm_clock_mhz") or {}).get("mean"),
            throttle_fraction=state.get("throttle_fraction"), avg_power_w=state.get("avg_power_w"))
    if mfu.mean is not None:  # the mean MFU against the fastest and the slowest window
        mfu.range_over_peak_windows = [mfu.mean * peak / max(windows), mfu.mean * peak / min(windows)]
    return {"matmul_peak_tflops": summarize(windows, "TFLOP/s"), "mfu_measured_peak": mfu}


def add_ratio(rec: Record, name: str, base: Record, unit: str = "ratio", per: int = 1) -> None:
    """rec.metrics[name] = rec tokens_per_s / (per x base tokens_per_s): speed-up or scaling."""
    a, b = rec.metric("tokens_per_s"), base.metric("tokens_per_s")
    if a and b:
        rec.metrics[name] = one(a / (per * b), unit)
        rec.notes.append(f"{name} against record {base.point_key} of run {base.run_id}")
