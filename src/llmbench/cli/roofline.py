"""`llmbench roofline`: the analytical bound for a model x hardware x workload."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import typer
from rich.table import Table

from llmbench.cli.common import fmt, out
from llmbench.errors import SpecError


def register(app: typer.Typer) -> None:
    app.command("roofline")(roofline)


def roofline(
    model: str = typer.Option(..., "--model", help="catalog model id (llmbench models), HF id, "
                              "or a local HF directory / .gguf file"),
    hardware: str = typer.Option(..., "--hardware", help="catalog id or device name, e.g. H100, "
                                 "'NVIDIA H200', MI300X, Gaudi2, cpu (this machine, measured)"),
    batch_size: int = typer.Option(1, "--batch-size", min=1),
    input_len: int = typer.Option(128, "--input-len", min=1),
    output_len: int = typer.Option(128, "--output-len", min=1),
    weight_dtype: str = typer.Option("bf16", "--weight-dtype", help="fp32|bf16|fp16|fp8|int8|q4_1|..."),
    kv_dtype: str = typer.Option(None, "--kv-dtype", help="default: 16-bit (fp32 for fp32 weights)"),
    tensor_parallel: int = typer.Option(1, "--tp", min=1),
    pipeline_parallel: int = typer.Option(1, "--pp", min=1),
    expert_parallel: int = typer.Option(1, "--ep", min=1),
    no_kv_cache: bool = typer.Option(False, "--no-kv-cache", help="every decode step recomputes the prefix"),
    training: bool = typer.Option(False, "--training", help="training step bound (seq = --input-len, "
                                  "devices = --tp, data parallel)"),
    format: str = typer.Option("table", "--format", help="table | json"),
    remeasure: bool = typer.Option(False, "--remeasure", help="measure this machine's CPU again "
                                   "(keeps the best of old and new)"),
) -> None:
    """Lower bounds on prefill, decode, TTFT, TPOT, batch latency and throughput (or a training
    step) from datasheet peaks, and which resource binds."""
    from llmbench.hardware import get
    from llmbench.models.catalog import canonical_name
    from llmbench.models.dtypes import dtype_bytes
    from llmbench.roofline.model import Workload, inference_bound, training_bound
    from llmbench.roofline.workload import facts

    if remeasure:
        from llmbench.hardware import cpu

        cpu.measure(force=True)
        cpu.local_cpu.cache_clear()
    if format not in ("table", "json"):
        raise SpecError([("--format", f"{format!r} is not one of table, json")])
    problems = []
    for opt, d in (("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)):
        if d is not None:
            try:
                dtype_bytes(d)
            except ValueError as e:
                problems.append((opt, str(e)))
    name = canonical_name(model)
    if name is None:  # a local model (HF dir, GGUF, cached Hub id) states its own architecture
        from llmbench.models.sources import resolve

        try:
            ref = resolve(model)
            if ref.arch is None:
                problems.append(("--model", f"{model}: {ref.arch_note}"))
            else:
                name = ref.arch.name
        except SpecError as e:
            problems.extend(("--model", m) for _, m in e.problems)
    try:
        hw = get(hardware)
    except SpecError as e:
        problems.extend(e.problems)
    if problems:
        raise SpecError(problems)
    arch, _, fx = facts(name, hardware)
    if training:
        b = training_bound(fx, batch_size=batch_size, seq_len=input_len,
                           devices=tensor_parallel, dtype=weight_dtype)
        wl = {"batch_size": batch_size, "seq_len": input_len, "devices": tensor_parallel,
              "dtype": weight_dtype}
    else:
        w = Workload(batch_size, input_len, output_len, weight_dtype.lower(),
                     kv_dtype.lower() if kv_dtype else None, None, None, tensor_parallel,
                     pipeline_parallel, expert_parallel, not no_kv_cache)
        b = inference_bound(fx, w)
        wl = asdict(w)
    doc = {"model": arch.name, "params": fx.shape.params, "hardware": hw.id,
           "hardware_name": hw.name, "hardware_source": hw.source, "workload": wl, **b.as_dict()}
    if format == "json":
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    t = Table(title=f"roofline: {arch.name} on {hw.id} x{b.devices}")
    t.add_column("bound")
    t.add_column("value", justify="right")
    for k, v in b.as_dict().items():
        if k == "notes":
            continue
        t.add_row(k, fmt(v, 4) if isinstance(v, float) else str(v))
    out.print(t)
    for n in b.notes:
        out.print(f"note: {n}")
