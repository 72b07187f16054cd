from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from llmbench.cli.common import console, out, pm
from llmbench.cli.flags import int_list, parse_assignments, parse_list
from llmbench.cli.tail import check_run_id, outcome, pick_point, pipeline_executor, run_points
from llmbench.errors import SpecError
from llmbench.hardware.device import DEVICE_HELP
from llmbench.kinds.inference.spec import SweepSpec, load_spec
from llmbench.store.store import DEFAULT_RESULTS

DEFAULT_BACKENDS = ("llamacpp", "transformers", "vllm")


def _default(field: str) -> str:
    """The spec's default for a flag's help, so the two never disagree."""
    f = SweepSpec.model_fields[field]
    v = f.default_factory() if f.default_factory else f.default
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def _spec_flag(field: str, help: str):
    """The flag --FIELD (None: the spec file's value, else the spec's default, shown in the help)."""
    return typer.Option(None, "--" + field.replace("_", "-"), help=help, show_default=_default(field))


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    spec_file: Optional[Path] = typer.Argument(None, help="YAML sweep spec (flags override it)"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b", help="engines, e.g. llamacpp,transformers"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="catalog names or local paths"),
    batch_size: Optional[str] = _spec_flag("batch_size", "list, e.g. 1,4,16"),
    input_len: Optional[str] = _spec_flag("input_len", "prompt tokens (list)"),
    output_len: Optional[str] = _spec_flag("output_len", "generated tokens (list)"),
    dtype: Optional[str] = _spec_flag("dtype", "auto|fp32|fp16|bf16 (list)"),
    device: Optional[str] = _spec_flag("device", DEVICE_HELP),
    repeats: Optional[int] = _spec_flag("repeats", "timed runs per point"),
    warmups: Optional[int] = _spec_flag("warmups", "untimed runs before them"),
    workload: Optional[str] = _spec_flag("workload", "offline | perplexity"),
    power_sampling: Optional[str] = _spec_flag(
        "power_sampling", "auto | dense | off: the power-sampling thread inside the window "
        "(auto: dense only where the energy counter fails); recorded, not part of the point"),
    fidelity: Optional[int] = typer.Option(
        None, "--fidelity", min=1, help="offline: compare greedy tokens and log-probabilities on N "
        "prompts with transformers fp32 on the CPU (cached; docs/fidelity.md)"),
    option: list[str] = typer.Option([], "--option", "-o",
                                     help="engine option KEY=V[,V..], e.g. compile=false,true"),
    speculative: Optional[str] = typer.Option(None, "--speculative",
                                              help="speculative decoding, swept over |: e.g. "
                                              "'none|ngram:k=4' or draft:MODEL,k=4 (engine option)"),
    backend_option: list[str] = typer.Option([], "--backend-option", "-B",
                                             help="BACKEND.KEY=V[,V..], e.g. llamacpp.n_threads=2"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="per-point limit, seconds"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    resume: bool = typer.Option(False, "--resume/--no-resume",
                                help="continue a run: skip points already stored"),
    redo_failed: bool = typer.Option(False, "--redo-failed/--keep-failed",
                                     help="with --resume: rerun failed points"),
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
            ov[key] = int_list(val, "--" + key.replace("_", "-"))
    for key, val in (("device", device), ("repeats", repeats), ("warmups", warmups),
                     ("workload", workload), ("timeout_s", timeout),
                     ("power_sampling", power_sampling), ("fidelity", fidelity)):
        if val is not None:
            ov[key] = val
    if option:
        ov["options"] = parse_assignments(option, "--option")
    if speculative is not None:   # its own flag: its text holds the commas --option splits at
        from llmbench.backends.speculation import parse_speculation

        specs = [parse_speculation(t) for t in speculative.split("|")]
        ov.setdefault("options", {})["speculative"] = [s.label if s else None for s in specs]
    if backend_option:
        bo: dict = {}
        for k, v in parse_assignments(backend_option, "--backend-option").items():
            if "." not in k:
                raise SpecError([("--backend-option", f"{k!r} must be BACKEND.KEY")])
            b, key = k.split(".", 1)
            bo.setdefault(b, {})[key] = v
        ov["backend_options"] = bo
    executor = pipeline_executor(executor, isolate)
    check_run_id(run_id)
    if spec_file is not None and spec_file.name.lower() in _FLAG_WORDS and not spec_file.exists():
        # `--resume true`: flags take no value, so the word landed in the spec-file slot
        raise SpecError([(str(spec_file), "is not a spec file; flags take no value: write "
                          "--resume, not --resume true (and --no-resume to turn one off)")])
    points = pick_point(_load(spec_file, ov), point)
    if list_points:  # a dry run: every check that happens before a real run, then the points
        from llmbench.kinds.inference.kind import validate

        validate(points)
        out.print(points_table(points, first=point or 0))
        return
    from llmbench.kinds.inference.kind import InferenceKind

    run_points("run", InferenceKind(), points, results, run_id=run_id, resume=resume,
               redo_failed=redo_failed, devices=", ".join(sorted({p.device for p in points})),
               executor=executor, progress=_bar(points), summary=summary)


_FLAG_WORDS = {"true", "false", "yes", "no", "on", "off", "1", "0"}


def _load(spec_file, ov):
    """The spec's points; a bad spec is reported whole: its own problems and those of
    the points its valid rest expands into (models, engines), in one message."""
    from llmbench.kinds.inference.kind import check

    try:
        return load_spec(spec_file, ov).points()
    except SpecError as e:
        if e.points:
            raise SpecError(e.problems + check(e.points)[1]) from None
        raise


def shape(w: dict) -> str:
    """A point's (or record workload's) shape: batch and lengths, or a perplexity window."""
    if "context_len" in w:
        return f"ctx={w.get('context_len')} stride={w.get('stride')}"
    return f"bs={w.get('batch_size')} in={w.get('input_len')} out={w.get('output_len')}"


def _point_shape(p) -> str:
    if p.workload == "perplexity" and p.perplexity is not None:
        return shape({"context_len": p.perplexity.context_len, "stride": p.perplexity.stride})
    return shape({"batch_size": p.batch_size, "input_len": p.input_len, "output_len": p.output_len})


def _kv(d: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items()) or "-"


def points_table(points, first: int = 0) -> Table:
    """--list-points: one row per point, options as KEY=VALUE (only those off their default)."""
    t = Table(title=f"{len(points)} point(s)")
    for col in ("#", "key", "workload", "backend", "model", "device", "dtype", "shape",
                "options", "backend options"):
        t.add_column(col, justify="right" if col == "#" else "left")
    for i, p in enumerate(points, start=first):
        t.add_row(str(i), p.key, p.workload, p.backend, p.model, p.device, p.dtype, _point_shape(p),
                  _kv(p.options.model_dump(exclude_defaults=True)), _kv(p.backend_options))
    return t


def _work(p) -> int:
    return p.warmups + p.repeats if p.workload == "offline" else 1


@contextmanager
def _bar(points):
    """A progress bar over the sweep's engine runs (warm-ups and repeats of offline points)."""
    # Redrawn on events only: an auto-refresh thread (10 Hz) would take CPU from the engine on a
    # small machine, in the middle of its measured windows.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False, auto_refresh=False) as bar:
        task = bar.add_task("validating", total=sum(_work(p) for p in points))

        def progress(event, p, n):
            if p is not None:
                label = f"{p.backend} {p.model} {p.device} {_point_shape(p)}"
                if event == "load":
                    bar.update(task, description=f"loading {p.backend} {p.model}")
                elif event == "start":
                    bar.update(task, description=label)
                elif event == "repeat":
                    bar.advance(task, n)
                elif event == "skip":  # stored by an earlier invocation (--resume)
                    bar.advance(task, _work(p))
                elif event == "done" and p.workload != "offline":
                    bar.advance(task, 1)
                bar.refresh()

        yield progress


def summary(result) -> None:
    """One table per record kind, earlier records of a resumed sweep included."""
    rows = [(r, True) for r in result.earlier] + [(r, False) for r in result.records]
    inference = [(r, e) for r, e in rows if r.kind != "perplexity"]
    ppl = [(r, e) for r, e in rows if r.kind == "perplexity"]
    if inference or not ppl:
        t = Table(title=f"run {result.run_id}", show_lines=False)
        # a GGUF's weight type and --fidelity's match and KL tell points apart: shown when any
        # point has them (the weight type when points differ in it or fidelity was asked)
        fidelity = any("fidelity_match_frac" in r.metrics for r, _ in inference)
        gguf = fidelity or len({r.workload.get("gguf_type") for r, _ in inference}) > 1
        for col in ("backend", "model", "device", *(["gguf"] if gguf else []), "bs", "in", "out",
                    "status", "batch latency s", "TTFT p50 ms", "TPOT p50 ms", "out tok/s", "efficiency",
                    *(["greedy match", "KL nats"] if fidelity else [])):
            t.add_column(col, justify="left" if col in ("backend", "model", "device", "gguf", "status")
                         else "right")
        for r, earlier in inference:
            w, m = r.workload, r.metrics
            eff = (r.roofline.efficiency or {}).get("output_throughput_tok_s") if r.roofline else None
            ttft, tpot = m.get("ttft_s"), m.get("tpot_s")
            match, kl = m.get("fidelity_match_frac"), m.get("fidelity_kl_nats")
            t.add_row(r.backend.name, r.model.name, _device(r),
                      *([str(w.get("gguf_type") or "-")] if gguf else []), str(w.get("batch_size", "")),
                      str(w.get("input_len", "")), str(w.get("output_len", "")), _status(r, earlier),
                      pm(m.get("batch_latency_s")),
                      f"{ttft.p50 * 1e3:.1f}" if ttft and ttft.p50 is not None else "-",
                      f"{tpot.p50 * 1e3:.2f}" if tpot and tpot.p50 is not None else "-",
                      pm(m.get("output_throughput_tok_s")), f"{eff:.0%}" if eff is not None else "-",
                      *([f"{match.mean:.3f}" if match and match.mean is not None else "-",
                         f"{kl.mean:.4f}" if kl and kl.mean is not None else "-"] if fidelity else []))
        out.print(t)
    if ppl:
        t = Table(title=f"run {result.run_id}: perplexity")
        for col in ("backend", "model", "device", "context", "stride", "text", "status",
                    "perplexity", "tokens scored"):
            t.add_column(col, justify="right" if col in ("context", "stride", "perplexity",
                                                          "tokens scored") else "left")
        for r, earlier in ppl:
            w, m = r.workload, r.metrics
            scored, ppl_stats = m.get("scored_tokens"), m.get("perplexity")
            t.add_row(r.backend.name, r.model.name, _device(r), str(w.get("context_len", "")),
                      str(w.get("stride", "")), str(w.get("text", "")), _status(r, earlier),
                      # two decimals: engines differ in the first (13.02 vs 12.86 on SmolLM2)
                      f"{ppl_stats.mean:.2f}" if ppl_stats and ppl_stats.mean is not None else "-",
                      f"{scored.mean:.0f}" if scored and scored.mean is not None else "-")
        out.print(t)
    outcome(result, lambda r: f"{r.backend.name} {r.model.name} {shape(r.workload)}")


def _device(r) -> str:
    """The device the point ran on as the spec resolved it, and the hardware's name."""
    dev = (r.spec or {}).get("device")
    return f"{dev} ({r.hardware.name})" if dev else r.hardware.name


def _status(r, earlier: bool) -> str:
    s = "ok" if r.status == "ok" else f"[red]{r.status}[/]"
    return f"{s} (earlier)" if earlier else s
