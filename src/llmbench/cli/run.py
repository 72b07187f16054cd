from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from llmbench.cli.common import console, out, pm
from llmbench.errors import SpecError
from llmbench.spec import load_spec, parse_assignments, parse_list
from llmbench.store.store import DEFAULT_RESULTS

DEFAULT_BACKENDS = ("llamacpp", "transformers", "vllm")


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    spec_file: Optional[Path] = typer.Argument(None, help="YAML sweep spec (flags override it)"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b", help="engines, e.g. llamacpp,transformers"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="catalog names or local paths"),
    batch_size: Optional[str] = typer.Option(None, "--batch-size", help="e.g. 1,4,16"),
    input_len: Optional[str] = typer.Option(None, "--input-len"),
    output_len: Optional[str] = typer.Option(None, "--output-len"),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="auto|fp32|fp16|bf16 (list)"),
    device: Optional[str] = typer.Option(None, "--device", help="cpu | cuda | cuda:N"),
    repeats: Optional[int] = typer.Option(None, "--repeats"),
    warmups: Optional[int] = typer.Option(None, "--warmups"),
    workload: Optional[str] = typer.Option(None, "--workload", help="offline | perplexity"),
    option: list[str] = typer.Option([], "--option", "-o",
                                     help="engine option KEY=V[,V..], e.g. compile=false,true"),
    backend_option: list[str] = typer.Option([], "--backend-option", "-B",
                                             help="BACKEND.KEY=V[,V..], e.g. llamacpp.n_threads=2"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="per-point limit, seconds"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    resume: bool = typer.Option(False, "--resume", help="skip points already stored"),
    redo_failed: bool = typer.Option(False, "--redo-failed", help="with --resume: rerun failed points"),
    isolate: bool = typer.Option(True, "--isolate/--in-process",
                                 help="run point groups in worker processes (crash-safe)"),
    executor: str = typer.Option("local", "--executor", help="local | ray"),
    point: Optional[int] = typer.Option(None, "--point", help="run only point K (job arrays)"),
    list_points: bool = typer.Option(False, "--list-points", help="validate, print the expanded points and exit (dry run)"),
    run_id: Optional[str] = typer.Option(None, "--run-id",
                                         help="record under this run id (e.g. one per job array)"),
) -> None:
    """Run an inference sweep (default: SmolLM2-135M on this CPU, every installed engine).

    Exit status: 0 every point ok; 3 finished, but some points failed (their records say
    why); 2 bad input (nothing ran). See docs/clusters.md."""
    from llmbench.backends import available_backends

    ov: dict = {}
    if backend is not None:
        ov["backends"] = parse_list(backend)
    elif spec_file is None:
        ov["backends"] = [b for b in available_backends() if b in DEFAULT_BACKENDS] or ["llamacpp"]
    for key, val in (("models", model), ("dtype", dtype)):
        if val is not None:
            ov[key] = parse_list(val)
    for key, val in (("batch_size", batch_size), ("input_len", input_len), ("output_len", output_len)):
        if val is not None:
            ov[key] = _ints(val, "--" + key.replace("_", "-"))
    for key, val in (("device", device), ("repeats", repeats), ("warmups", warmups),
                     ("workload", workload), ("timeout_s", timeout)):
        if val is not None:
            ov[key] = val
    if option:
        ov["options"] = parse_assignments(option, "--option")
    if backend_option:
        bo: dict = {}
        for k, v in parse_assignments(backend_option, "--backend-option").items():
            if "." not in k:
                raise SpecError([("--backend-option", f"{k!r} must be BACKEND.KEY")])
            b, key = k.split(".", 1)
            bo.setdefault(b, {})[key] = v
        ov["backend_options"] = bo
    if executor not in ("local", "ray"):
        raise SpecError([("--executor", f"{executor!r} is not one of: local, ray")])
    if run_id is not None and not _safe_run_id(run_id):
        raise SpecError([("--run-id", f"{run_id!r} may hold only letters, digits, '.', '_' and '-'")])
    spec = load_spec(spec_file, ov)
    points = spec.points()
    if point is not None:
        if not 0 <= point < len(points):
            raise SpecError([("--point", f"{point} is out of range: the sweep has {len(points)} points (0..{len(points) - 1})")])
        points = [points[point]]
    if list_points:  # a dry run: every check that happens before a real run, then the points
        from llmbench.runner import validate

        validate(points)
        for i, p in enumerate(points):
            out.print(f"{i}\t{p.key}\t{p.backend}\t{p.model}\tbs={p.batch_size}\tin={p.input_len}\tout={p.output_len}\t{p.options.model_dump(exclude_defaults=True)}")
        return
    execute(spec, points, results, resume=resume, redo_failed=redo_failed, isolate=isolate,
            executor=executor, run_id=run_id)


def _safe_run_id(text: str) -> bool:
    """A run id names a directory: no separators, no '..', nothing a shell would expand."""
    import re

    return bool(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", text)) and ".." not in text


def _ints(text: str, flag: str) -> list[int]:
    try:
        return parse_list(text, int)
    except SpecError:
        raise SpecError([(flag, f"{text!r} must be a comma-separated list of integers")]) from None


def execute(spec, points, results: Path, *, resume=False, redo_failed=False, isolate=True,
            executor="local", run_id=None) -> None:
    from llmbench.runner import run_sweep

    total = sum(p.warmups + p.repeats if p.workload == "offline" else 1 for p in points)
    console.print(f"[bold]llmbench[/] {len(points)} point(s) -> {results}")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        task = bar.add_task("validating", total=total)

        def progress(event, p, n):
            if p is not None:
                label = f"{p.backend} {p.model} bs={p.batch_size} in={p.input_len} out={p.output_len}"
                if event == "load":
                    bar.update(task, description=f"loading {p.backend} {p.model}")
                elif event == "start":
                    bar.update(task, description=label)
                elif event == "repeat":
                    bar.advance(task, n)
                elif event == "done" and p.workload != "offline":
                    bar.advance(task, 1)

        kw = dict(resume=resume, redo_failed=redo_failed, progress=progress, points=points,
                  run_id=run_id)
        if executor == "ray":
            from llmbench.launch.ray_executor import run_sweep_ray
            result = run_sweep_ray(spec, results, **kw)
        elif isolate:
            from llmbench.launch.isolated import run_sweep_isolated
            result = run_sweep_isolated(spec, results, **kw)
        else:
            result = run_sweep(spec, results, **kw)
    summary(result)
    if result.failed:
        sys.exit(3)


def summary(result) -> None:
    t = Table(title=f"run {result.run_id}", show_lines=False)
    for col in ("backend", "model", "bs", "in", "out", "status", "batch latency s",
                "TTFT p50 ms", "TPOT p50 ms", "out tok/s", "efficiency"):
        t.add_column(col, justify="right" if col not in ("backend", "model", "status") else "left")
    for r in result.records:
        w, m = r.workload, r.metrics
        eff = (r.roofline.efficiency or {}).get("output_throughput_tok_s") if r.roofline else None
        ttft, tpot = m.get("ttft_s"), m.get("tpot_s")
        row = [r.backend.name, r.model.name, str(w.get("batch_size", "")), str(w.get("input_len", "")),
               str(w.get("output_len", "")),
               "ok" if r.status == "ok" else f"[red]{r.status}[/]",
               pm(m.get("batch_latency_s")),
               f"{ttft.p50 * 1e3:.1f}" if ttft and ttft.p50 is not None else "-",
               f"{tpot.p50 * 1e3:.2f}" if tpot and tpot.p50 is not None else "-",
               pm(m.get("output_throughput_tok_s")),
               f"{eff:.0%}" if eff is not None else "-"]
        if r.kind == "perplexity":
            row[9] = f"ppl {pm(m.get('perplexity'))}"
        t.add_row(*row)
    out.print(t)
    for r in result.failed:
        console.print(f"[red]failed[/] {r.backend.name} {r.model.name} {r.workload.get('batch_size')}: "
                      f"{(r.error or '').splitlines()[0]}")
    if result.skipped:
        console.print(f"skipped {result.skipped} point(s) already stored (--resume)")
    out.print(f"results: {result.results_dir.resolve()} (run {result.run_id}); "
              f"query with: llmbench results --results {result.results_dir}")
