"""The `train` command (registered by llmbench.cli.train; also `python -m llmbench.train`,
which imports no other command): the training study (block micro-benchmark, GPT-2, GenSLM).

Every factor takes a comma list and the sweep is their product, e.g.
`llmbench train --workload gpt2 --size small,medium --grad-accum 1,4 --compile false,true`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from rich.console import Console

from llmbench.numfmt import fmt
from llmbench.errors import SpecError
from llmbench.spec import parse_list
from llmbench.store.store import DEFAULT_RESULTS


console = Console(stderr=True)
out = Console(width=200)


def _opt(help: str) -> Any:
    return typer.Option(None, help=help)


def train(
    workload: str = typer.Option("gpt2", "--workload", "-w", help="block | gpt2 | genslm (list)"),
    size: Optional[str] = _opt("gpt2: small|medium|large|xl; genslm: 25m|250m|2.5b|25b (list)"),
    seq_len: Optional[str] = typer.Option(None, "--seq-len", help="tokens per sequence (list)"),
    micro_batch: Optional[str] = typer.Option(None, "--micro-batch", help="sequences per micro-step (list)"),
    grad_accum: Optional[str] = typer.Option(None, "--grad-accum", help="micro-steps per optimizer step (list)"),
    nproc: Optional[str] = typer.Option(None, "--nproc", help="devices, through torchrun (list)"),
    parallel: Optional[str] = typer.Option(None, "--parallel", help="auto|ddp|fsdp (auto: FSDP2 when the model does not fit one device)"),
    precision: Optional[str] = typer.Option(None, "--precision", help="fp32|tf32|bf16|fp8 (list)"),
    sparsity: Optional[str] = typer.Option(None, "--sparsity", help="none|2:4 (list)"),
    compile: Optional[str] = typer.Option(None, "--compile", help="torch.compile: false,true (list)"),
    activation_checkpointing: Optional[str] = typer.Option(None, "--activation-checkpointing", help="false,true (list)"),
    hidden: Optional[str] = typer.Option(None, "--hidden", help="block hidden size; gpt2/genslm: override (list)"),
    heads: Optional[str] = typer.Option(None, "--heads", help="attention heads (list)"),
    kv_heads: Optional[str] = typer.Option(None, "--kv-heads", help="block llama style: KV heads (list)"),
    layers: Optional[str] = typer.Option(None, "--layers", help="gpt2/genslm: fewer layers (list)"),
    style: Optional[str] = typer.Option(None, "--style", help="block: gpt|llama (list)"),
    mode: Optional[str] = typer.Option(None, "--mode", help="block: fwd|fwdbwd (list)"),
    attn_backend: Optional[str] = typer.Option(None, "--attn-backend", help="auto|flash|cudnn|efficient|math (list)"),
    learnable: bool = typer.Option(False, "--learnable", help="a learnable pattern instead of random tokens (loss must fall)"),
    lr: float = typer.Option(3e-4, "--lr"),
    steps: int = typer.Option(10, "--steps", help="timed steps"),
    warmup: int = typer.Option(2, "--warmup", help="untimed steps (the first holds compilation)"),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N"),
    seed: int = typer.Option(0, "--seed"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    isolate: bool = typer.Option(False, "--isolate/--in-process", help="each 1-device point in its own process"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="per-point limit in seconds (worker processes)"),
    list_points: bool = typer.Option(False, "--list-points", help="print the expanded points and exit"),
) -> None:
    """Measure training steps: throughput, TFLOP/s, MFU, memory, energy."""
    from llmbench.train.config import TrainSweep

    axes: dict[str, list[Any]] = {"workload": parse_list(workload)}
    for name, text, kind in (
            ("size", size, str), ("seq_len", seq_len, int), ("micro_batch", micro_batch, int),
            ("grad_accum", grad_accum, int), ("nproc", nproc, int), ("parallel", parallel, str),
            ("precision", precision, str), ("sparsity", sparsity, str), ("compile", compile, bool),
            ("activation_checkpointing", activation_checkpointing, bool), ("hidden", hidden, int),
            ("heads", heads, int), ("kv_heads", kv_heads, int), ("layers", layers, int),
            ("style", style, str), ("mode", mode, str), ("attn_backend", attn_backend, str)):
        if text is not None:
            axes[name] = _values(text, kind, "--" + name.replace("_", "-"))
    fixed = dict(learnable=learnable, lr=lr, steps=steps, warmup=warmup, device=device, seed=seed)
    points = _dedupe(TrainSweep(axes=axes, fixed=fixed).points())
    if list_points:
        for i, p in enumerate(points):
            out.print(f"{i}\t{p.key}\t{p.model_dump(exclude_defaults=True)}")
        return
    from llmbench.train.runner import run_points

    console.print(f"[bold]llmbench train[/] {len(points)} point(s) -> {results}")

    def progress(event, p, rec):
        if event == "start":
            console.print(f"  {p.workload} {p.size} seq={p.seq_len} mb={p.micro_batch} "
                          f"ga={p.grad_accum} nproc={p.nproc} {p.precision} sparsity={p.sparsity} "
                          f"compile={p.compile} ac={p.activation_checkpointing} ...")
        elif rec is not None and rec.status != "ok":
            console.print(f"    [red]failed[/]: {rec.error}")

    recs = run_points(points, results, isolate=isolate, timeout_s=timeout, progress=progress)
    summary(recs)
    failed = sum(r.status != "ok" for r in recs)
    if failed:
        console.print(f"[yellow]{failed} of {len(recs)} point(s) failed[/]")
        sys.exit(3 if failed < len(recs) else 1)


def _values(text: str, kind: type, flag: str) -> list[Any]:
    items = parse_list(text, Any)
    if kind is int and not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise SpecError([(flag, f"{text!r} must be a comma-separated list of integers")])
    if kind is bool and not all(isinstance(v, bool) for v in items):
        raise SpecError([(flag, f"{text!r} must be a comma-separated list of true/false")])
    if kind is str:
        items = [str(v) for v in parse_list(text)]
    return items


def _dedupe(points):
    seen, outp = set(), []
    for p in points:
        if p.key not in seen:
            seen.add(p.key)
            outp.append(p)
    return outp


def summary(recs) -> None:
    t = Table(title="training")
    for c in ("model", "seq", "mb", "ga", "n", "prec", "sparse", "compile", "step s",
              "tok/s", "TFLOP/s", "MFU", "MFU meas.", "mem GiB", "J/tok", "extra"):
        t.add_column(c, justify="right")
    for r in recs:
        w = r.workload
        extra = ", ".join(f"{k}={fmt(r.metric(k))}" for k in ("scaling_efficiency", "speedup_vs_dense")
                          if r.metric(k) is not None)
        if r.status != "ok":
            extra = (r.error or "failed")[:40]
        t.add_row(r.model.name, str(w.get("seq_len")), str(w.get("micro_batch")), str(w.get("grad_accum")),
                  str(w.get("nproc")), w.get("precision"), w.get("sparsity"), str(w.get("compile")),
                  fmt(r.metric("step_time_s", "median")), fmt(r.metric("tokens_per_s")),
                  fmt(r.metric("tflops")), fmt(r.metric("mfu")), fmt(r.metric("mfu_measured_peak")),
                  fmt(r.metric("mem_peak_gib")), fmt(r.metric("energy_per_token_j")), extra)
    out.print(t)
