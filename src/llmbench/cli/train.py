"""`llmbench train`: the training study (block micro-benchmark, GPT-2, GenSLM).

Every factor takes a comma list and the sweep is their product, e.g.
`llmbench train --workload gpt2 --size small,medium --grad-accum 1,4 --compile false,true`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from llmbench.cli.common import console, out
from llmbench.cli.flags import parse_list
from llmbench.cli.tail import check_run_id, outcome, pick_point, pipeline_executor, run_points
from llmbench.errors import SpecError
from llmbench.hardware.device import DEVICE_HELP, resolve_device
from llmbench.kinds.training.kind import TrainingKind
from llmbench.numfmt import fmt
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("train")(train)


def _opt(help: str) -> Any:
    return typer.Option(None, help=help)


def train(
    workload: str = typer.Option("gpt2", "--workload", "-w", help="block | gpt2 | genslm | llama (list)"),
    size: Optional[str] = _opt("gpt2: small|medium|large|xl; genslm: 25m|250m|2.5b|25b; llama: 3.2-1b|3.2-3b|3-8b (list)"),
    seq_len: Optional[str] = typer.Option(None, "--seq-len", help="tokens per sequence (list)"),
    micro_batch: Optional[str] = typer.Option(None, "--micro-batch", help="sequences per micro-step (list)"),
    grad_accum: Optional[str] = typer.Option(None, "--grad-accum", help="micro-steps per optimizer step (list)"),
    nproc: Optional[str] = typer.Option(None, "--nproc", help="devices, through torchrun (list)"),
    parallel: Optional[str] = typer.Option(None, "--parallel", help="auto|ddp|fsdp (auto: FSDP2 when the model does not fit one device)"),
    precision: Optional[str] = typer.Option(None, "--precision", help="fp32|tf32|bf16|fp8 (list)"),
    sparsity: Optional[str] = typer.Option(None, "--sparsity", help="none|2:4 (list)"),
    compile: Optional[str] = typer.Option(None, "--compile", help="torch.compile: false,true (list)"),
    activation_checkpointing: Optional[str] = typer.Option(None, "--activation-checkpointing", help="false,true (list)"),
    hidden: Optional[str] = typer.Option(None, "--hidden", help="block hidden size; language models: override (list)"),
    heads: Optional[str] = typer.Option(None, "--heads", help="attention heads (list)"),
    kv_heads: Optional[str] = typer.Option(None, "--kv-heads", help="block llama style, llama: KV heads (list)"),
    layers: Optional[str] = typer.Option(None, "--layers", help="language models: fewer layers (list)"),
    style: Optional[str] = typer.Option(None, "--style", help="block: gpt|llama (list)"),
    mode: Optional[str] = typer.Option(None, "--mode", help="block: fwd|fwdbwd (list)"),
    attn_backend: Optional[str] = typer.Option(None, "--attn-backend", help="auto|flash|cudnn|efficient|math (list)"),
    compile_mode: Optional[str] = typer.Option(
        None, "--compile-mode", help="with --compile true: default|max-autotune-no-cudagraphs|max-autotune|reduce-overhead (list)"),
    compile_scope: Optional[str] = typer.Option(
        None, "--compile-scope", help="with --compile true: layers (one graph per layer) | model (one graph) (list)"),
    optimizer: Optional[str] = typer.Option(None, "--optimizer", help="language models AdamW: fused|foreach|for-loop (list)"),
    loss: Optional[str] = typer.Option(None, "--loss", help="language models loss: full|chunked logits (list)"),
    head_pad: Optional[str] = typer.Option(None, "--head-pad", help="pad attention heads to a multiple of 8 for fused kernels: true,false (list)"),
    learnable: bool = typer.Option(False, "--learnable", help="a learnable pattern instead of random tokens (loss must fall)"),
    lr: float = typer.Option(3e-4, "--lr"),
    steps: int = typer.Option(10, "--steps", help="timed steps"),
    warmup: int = typer.Option(2, "--warmup", help="untimed steps (the first holds compilation)"),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP),
    seed: int = typer.Option(0, "--seed"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    resume: bool = typer.Option(False, "--resume", help="skip points already stored"),
    redo_failed: bool = typer.Option(False, "--redo-failed", help="with --resume: rerun failed points"),
    isolate: bool = typer.Option(True, "--isolate/--in-process",
                                 help="run points in worker processes (crash-safe); N-device points always use torchrun"),
    executor: str = typer.Option("local", "--executor", help="local | ray"),
    point: Optional[int] = typer.Option(None, "--point", help="run only point K (job arrays)"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="record under this run id (e.g. one per job array)"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="per-point limit in seconds (default 3600)"),
    list_points: bool = typer.Option(False, "--list-points", help="validate, print the expanded points and exit (dry run)"),
) -> None:
    """Measure training steps: throughput, TFLOP/s, MFU, memory, energy.

    Exit status: 0 every point ok; 3 finished, but some points failed (their records say
    why); 2 bad input (nothing ran). See docs/clusters.md."""
    from llmbench.kinds.training.config import TrainSweep

    axes: dict[str, list[Any]] = {"workload": parse_list(workload)}
    for name, text, kind in (
            ("size", size, str), ("seq_len", seq_len, int), ("micro_batch", micro_batch, int),
            ("grad_accum", grad_accum, int), ("nproc", nproc, int), ("parallel", parallel, str),
            ("precision", precision, str), ("sparsity", sparsity, str), ("compile", compile, bool),
            ("activation_checkpointing", activation_checkpointing, bool), ("hidden", hidden, int),
            ("heads", heads, int), ("kv_heads", kv_heads, int), ("layers", layers, int),
            ("style", style, str), ("mode", mode, str), ("attn_backend", attn_backend, str),
            ("compile_mode", compile_mode, str), ("compile_scope", compile_scope, str),
            ("optimizer", optimizer, str), ("loss", loss, str),
            ("head_pad", head_pad, bool)):
        if text is not None:
            axes[name] = _values(text, kind, "--" + name.replace("_", "-"))
    executor = pipeline_executor(executor, isolate)
    check_run_id(run_id)
    device = resolve_device(device)
    fixed = dict(learnable=learnable, lr=lr, steps=steps, warmup=warmup, device=device, seed=seed,
                 timeout_s=timeout)
    points = pick_point(_dedupe(TrainSweep(axes=axes, fixed=fixed).points()), point)
    kind = TrainingKind()
    if list_points:  # a dry run: every check that happens before a real run, then the points
        kind.prepare(points, local_devices=executor != "ray")
        for i, p in enumerate(points, start=point or 0):
            print(f"{i}\t{p.key}\t{_describe(p)}")  # tab-separated for scripts (rich would expand tabs)
        return

    def progress(event, p, n):
        if event == "start":
            console.print(f"  {_describe(p)} ...", markup=False, highlight=False)

    run_points("train", kind, points, results, devices=device, run_id=run_id, resume=resume,
               redo_failed=redo_failed, progress=progress, summary=summary, executor=executor)


def _describe(p) -> str:
    """One line per point: the factors that make it, without defaults' noise."""
    size = f" {p.size}" if p.size else ""
    text = (f"{p.device} {p.workload}{size} seq={p.seq_len} mb={p.micro_batch} ga={p.grad_accum} "
            f"nproc={p.nproc} {p.precision}")
    extra = p.model_dump(exclude_defaults=True, exclude={
        "workload", "size", "device", "seq_len", "micro_batch", "grad_accum", "nproc", "precision",
        "timeout_s"})
    return text + "".join(f" {k}={v}" for k, v in extra.items())


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


def summary(result) -> None:
    t = Table(title=f"training run {result.run_id}")
    for c in ("model", "device", "seq", "mb", "ga", "n", "prec", "sparse", "compile", "status",
              "step s", "tok/s", "TFLOP/s", "MFU", "MFU meas.", "mem GiB", "J/tok", "extra"):
        t.add_column(c, justify="left" if c in ("model", "device", "status") else "right")
    for r, earlier in [(r, True) for r in result.earlier] + [(r, False) for r in result.records]:
        w = r.workload
        extra = ", ".join(f"{k}={fmt(r.metric(k))}" for k in ("scaling_efficiency", "speedup_vs_dense")
                          if r.metric(k) is not None)
        if r.status != "ok":
            extra = (r.error or "failed").splitlines()[0][:40]
        t.add_row(r.model.name, (r.spec or {}).get("device", "-"), str(w.get("seq_len")),
                  str(w.get("micro_batch")), str(w.get("grad_accum")), str(w.get("nproc")),
                  w.get("precision"), w.get("sparsity"), str(w.get("compile")),
                  ("ok" if r.status == "ok" else f"[red]{r.status}[/]") + (" (earlier)" if earlier else ""),
                  fmt(r.metric("step_time_s", "median")), fmt(r.metric("tokens_per_s")),
                  fmt(r.metric("tflops")), fmt(r.metric("mfu")), _mfu_measured(r),
                  fmt(r.metric("mem_peak_gib")), fmt(r.metric("energy_per_token_j")), extra)
    out.print(t)
    outcome(result, lambda r: f"{r.model.name} {r.point_key}")


def _mfu_measured(r) -> str:
    """MFU over the measured matmul peak, with that peak's spread between its windows."""
    m = r.metrics.get("mfu_measured_peak")
    if m is None or m.mean is None:
        return "-"
    sp = (getattr(m, "peak_tflops", None) or {}).get("spread")
    return fmt(m.mean) + (f" (peak ±{sp:.1%})" if sp is not None else "")
