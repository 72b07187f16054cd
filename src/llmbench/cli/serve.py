"""`llmbench serve`: load-test an OpenAI-compatible server (given by URL, or launched here)."""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

import typer
from rich.table import Table

from llmbench.cli.common import console, out
from llmbench.errors import SpecError
from llmbench.kinds.inference.spec import parse_list
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    url: Optional[str] = typer.Argument(None, help="server base URL, e.g. http://host:8000 or host:8000 (a trailing /v1 is fine)"),
    launch: Optional[str] = typer.Option(None, "--launch", help="start a server here: llamacpp | vllm"),
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="catalog name or local path"),
    served_model: Optional[str] = typer.Option(None, "--served-model",
                                               help="model name sent to the server (default: its first /v1/models entry)"),
    api: str = typer.Option("completions", "--api", help="completions | chat"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="NAME|PATH (default: the model's)"),
    dataset: Optional[Path] = typer.Option(None, "--dataset", help="ShareGPT-format JSON file"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="replay a timestamped trace: Mooncake JSONL, Azure or BurstGPT CSV"),
    trace_format: str = typer.Option("auto", "--trace-format", help="auto | mooncake | azure | burstgpt"),
    trace_speedup: float = typer.Option(1.0, "--trace-speedup", help="replay the trace this many times faster"),
    max_input_len: Optional[int] = typer.Option(None, "--max-input-len", help="cap on a trace request's prompt tokens"),
    max_output_len: Optional[int] = typer.Option(None, "--max-output-len", help="cap on a trace request's output tokens"),
    input_len: str = typer.Option("32", "--input-len", help="N | uniform:LO:HI | normal:MEAN:STD"),
    output_len: Optional[str] = typer.Option(None, "--output-len", help="N | uniform:LO:HI | normal:MEAN:STD (default 32, or the dataset's)"),
    shared_prefix: float = typer.Option(0.0, "--shared-prefix", help="fraction of each prompt shared by all (by its group)"),
    prefix_groups: int = typer.Option(1, "--prefix-groups", help="groups of prompts, each sharing its own --shared-prefix"),
    turns: int = typer.Option(1, "--turns", help="conversations: turns per session, each carrying the history (-n counts sessions)"),
    think_time: float = typer.Option(0.0, "--think-time", help="seconds between an answer and the next turn"),
    concurrency: Optional[str] = typer.Option(None, "--concurrency", "-c", help="closed-loop levels, e.g. 1,4,16 (a cap with --rate)"),
    rate: Optional[str] = typer.Option(None, "--rate", help="open-loop req/s, e.g. 1,2,inf"),
    burstiness: float = typer.Option(1.0, "--burstiness", help="gamma shape: 1 Poisson, <1 burstier"),
    max_concurrency: Optional[int] = typer.Option(None, "--max-concurrency", help="cap on in-flight requests with --rate"),
    num_prompts: Optional[int] = typer.Option(None, "--num-prompts", "-n", help="requests per point (default 100)"),
    duration: Optional[float] = typer.Option(None, "--duration", help="seconds per point instead of --num-prompts"),
    warmup: str = typer.Option("0", "--warmup", help="excluded start of each point: seconds or N%"),
    cooldown: str = typer.Option("0", "--cooldown", help="excluded end of each point: seconds or N%"),
    slo: Optional[str] = typer.Option(None, "--slo", help="goodput SLOs, e.g. ttft_s=0.5,tpot_s=0.05,e2e_s=10"),
    find_max_rate: bool = typer.Option(False, "--find-max-rate", help="search the highest request rate at which --slo-fraction of requests meet every --slo (start: --rate, default 1)"),
    slo_fraction: float = typer.Option(0.9, "--slo-fraction", help="fraction of requests that must meet every SLO (--find-max-rate)"),
    rate_tolerance: float = typer.Option(0.1, "--rate-tolerance", help="--find-max-rate stops when high/low <= 1 + this"),
    max_points: int = typer.Option(10, "--max-points", help="most rates --find-max-rate measures"),
    timeout: float = typer.Option(300.0, "--timeout", help="per-request limit, seconds"),
    seed: int = typer.Option(0, "--seed"),
    force_output: bool = typer.Option(True, "--force-output/--no-force-output",
                                      help="send ignore_eos + min_tokens so answers have output-len tokens"),
    extra_body: Optional[str] = typer.Option(None, "--extra-body", help="JSON merged into every request body"),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="environment variable holding the API key"),
    api_key_file: Optional[Path] = typer.Option(None, "--api-key-file", help="file holding the API key"),
    device: Optional[str] = typer.Option(None, "--device", help="where the server computes: cpu | cuda | cuda:N (for energy)"),
    device_count: int = typer.Option(1, "--device-count", help="GPUs the server uses"),
    server_arg: list[str] = typer.Option([], "--server-arg", help="extra argument for the launched server (repeat)"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    uvloop: bool = typer.Option(True, "--uvloop/--no-uvloop", help="use uvloop when installed"),
    workers: int = typer.Option(1, "--workers", help="client processes sharing each point's load "
                                "(for loads one event loop cannot drive; see docs/serving.md)"),
    server_metrics: bool = typer.Option(True, "--server-metrics/--no-server-metrics",
                                        help="scrape the server's Prometheus /metrics during each point"),
    metrics_interval: float = typer.Option(1.0, "--metrics-interval", help="seconds between scrapes"),
    resume: bool = typer.Option(False, "--resume", help="continue a run: skip load levels already stored"),
    redo_failed: bool = typer.Option(False, "--redo-failed", help="with --resume: rerun failed levels"),
    point: Optional[int] = typer.Option(None, "--point", help="run only load level K (job arrays)"),
    list_points: bool = typer.Option(False, "--list-points",
                                     help="validate, print the load levels and exit (contacts no server)"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="record under this run id (e.g. one per job array)"),
) -> None:
    """Load-test an OpenAI-compatible server; one serving record per concurrency/rate point.

    Exit status: 0 every point ok; 3 finished, but some points failed (their records say
    why); 2 bad input or no server (nothing ran); 130 interrupted. See docs/serving.md."""
    from llmbench.kinds.serving.config import LengthDist, parse_slo

    if (url is None) == (launch is None):
        raise SpecError([("URL / --launch", "give a server URL or --launch llamacpp|vllm (exactly one)")])
    if num_prompts is not None and duration is not None:
        raise SpecError([("--num-prompts / --duration", "give one of them, not both")])
    if api not in ("completions", "chat"):
        raise SpecError([("--api", f"{api!r} is not completions or chat")])
    try:
        extra = json.loads(extra_body) if extra_body else {}
    except ValueError as e:
        raise SpecError([("--extra-body", f"not JSON: {e}")]) from None
    if not isinstance(extra, dict):
        raise SpecError([("--extra-body", "must be a JSON object")])
    if not metrics_interval > 0:
        raise SpecError([("--metrics-interval", f"{metrics_interval} must be > 0 seconds")])
    if trace is not None:
        _check_trace(trace, trace_format, trace_speedup, max_input_len, max_output_len, rate=rate, dataset=dataset,
                     duration=duration, concurrency=concurrency)
    conc = _ints(concurrency, "--concurrency") if concurrency else []
    rates = _rates(rate) if rate else []
    if find_max_rate:
        clash = [f for f, v in (("--concurrency", concurrency), ("--duration", duration),
                                ("--trace", trace), ("--turns", turns if turns > 1 else None)) if v]
        if not slo or clash or len(rates) > 1:
            raise SpecError([("--find-max-rate", "needs --slo, at most one --rate (where to start), "
                              "-n requests per rate, and an open loop"
                              + (f"; drop {', '.join(clash)}" if clash else ""))])
    if workers < 1 or (workers > 1 and (turns > 1 or find_max_rate)):
        raise SpecError([("--workers", "must be >= 1; several workers drive independent requests: "
                                       "not with --turns or --find-max-rate")])
    if dataset is not None and not dataset.is_file():
        raise SpecError([("--dataset", f"{dataset} is not a file")])
    cfg = _config(
        model=model, served_model=served_model, api=api, tokenizer=tokenizer, dataset=dataset,
        input_len=LengthDist.parse(input_len, "--input-len"),
        output_len=LengthDist.parse(output_len, "--output-len") if output_len else None,
        shared_prefix=_fraction(shared_prefix), prefix_groups=prefix_groups, turns=turns,
        think_time_s=think_time, concurrency=conc, rate=rates,
        burstiness=burstiness, max_concurrency=max_concurrency, num_prompts=num_prompts,
        duration_s=duration, warmup=warmup, cooldown=cooldown, slo=parse_slo(slo),
        timeout_s=timeout, seed=seed, force_output=force_output, extra_body=extra,
        use_uvloop=uvloop, workers=workers, server_metrics=server_metrics, metrics_interval_s=metrics_interval,
        trace=trace, trace_format=trace_format, trace_speedup=trace_speedup,
        max_input_len=max_input_len, max_output_len=max_output_len, find_max_rate=find_max_rate,
        slo_fraction=slo_fraction, rate_tolerance=rate_tolerance, max_points=max_points)
    if max_concurrency is not None and conc and rates:
        raise SpecError([("--max-concurrency", "with --rate, give the cap by --concurrency or --max-concurrency, not both")])
    try:
        if trace is None and not find_max_rate:
            cfg.schedules()
    except ValueError as e:
        raise SpecError([("schedule", str(e))]) from None
    from llmbench.launch.pipeline import check_run_id, pick_point
    from llmbench.kinds.serving.kind import ServeTarget, serve_points

    check_run_id(run_id)
    if find_max_rate and (resume or redo_failed):
        raise SpecError([("--resume / --redo-failed", "a capacity search (--find-max-rate) picks each "
                          "rate from the ones before it: it is one unit, run it again whole")])
    if launch:
        target = ServeTarget(launch=launch, device=device or "cpu", device_count=device_count,
                             server_args=tuple(server_arg))
    else:
        from llmbench.loadgen.preflight import normalize_url

        url = normalize_url(url)
        target = ServeTarget(url=url, device=device or _auto_device(url), device_count=device_count)
    points = pick_point(serve_points(cfg, target), point)
    if list_points:  # a dry run: the checks above, then the levels (tab-separated for scripts)
        for i, p in enumerate(points, start=point or 0):
            print(f"{i}\t{p.key}\t{p.label}")
        return
    api_key = _api_key(api_key_env, api_key_file)
    from llmbench.store.store import register_secret

    register_secret(api_key)  # a key from a file has no env-var name for the redactor to find
    run(cfg, points, api_key=api_key, results=results, run_id=run_id, resume=resume,
        redo_failed=redo_failed)


def run(cfg, points, *, api_key, results: Path, run_id, resume: bool, redo_failed: bool) -> None:
    """The levels through the shared pipeline (launch/pipeline.py), in this process: see
    workloads/serving_kind.py for why a client is never isolated from its own timing."""
    from llmbench.launch.pipeline import resume_command, resume_run_id, run_sweep, stored_count
    from llmbench.store.record import new_run_id
    from llmbench.store.store import Store
    from llmbench.kinds.serving.kind import ServingKind

    store = Store(results)
    if run_id is None:  # fixed here so that an interrupted run can name it for --resume
        run_id = (resume_run_id(store, points) if resume or redo_failed else None) or new_run_id()

    def event(name, p, n):
        if name == "load" and p.target.launch:
            console.print(f"[bold]llmbench serve[/] starting {p.target.launch} server for {cfg.model} ...")
        elif name == "skip":
            console.print(f"[bold]serve[/] {p.label}: stored earlier (--resume)", highlight=False)

    kind = ServingKind(api_key, progress=lambda label: console.print(f"[bold]serve[/] {label}"),
                       on_launch=lambda engine, srv: console.print(
                           f"{engine} healthy at {srv.url} after {srv.startup_s:.1f} s"))
    try:
        result = run_sweep(kind, points, results, executor="in-process", run_id=run_id,
                           resume=resume, redo_failed=redo_failed, progress=event)
    except KeyboardInterrupt:
        # typer turns KeyboardInterrupt into a *returned* 130 that would exit 0; the launched
        # server is already stopped by now.
        args = sys.argv[1:] if sys.argv[1:2] == ["serve"] else ["serve", *sys.argv[1:]]
        console.print(f"interrupted: {stored_count(store, points)} of {len(points)} points stored in "
                      f"{results}; continue with `{resume_command(run_id, ['llmbench', *args])}`",
                      highlight=False, soft_wrap=True)
        raise SystemExit(130) from None
    summary([*result.earlier, *result.records], earlier=len(result.earlier))
    searched = [r for r in result.records if (getattr(r, "serving", None) or {}).get("capacity_search")]
    if searched:
        capacity(searched[-1].serving["capacity_search"], cfg)
    for r in result.failed:
        console.print(f"[red]failed[/] {r.workload.get('load_level') or r.point_key}: "
                      f"{(r.error or '').splitlines()[0]}", highlight=False)
    if result.skipped:
        console.print(f"skipped {result.skipped} point(s) already stored (--resume); the summary "
                      "marks them 'earlier'")
    out.print(f"results: {Path(results).resolve()} (run {result.run_id})")
    if result.failed:
        raise SystemExit(3)


def summary(records, earlier: int = 0) -> None:
    """One row per record; the first `earlier` were stored by an earlier invocation."""
    t = Table(title="serving", show_lines=False)
    for c in ("load", "status", "ok/err", "TTFT p50/p99 ms", "TPOT ms", "ITL ms", "out tok/s", "req/s",
              "goodput", "prefix hit", "client cpu"):
        t.add_column(c, justify="left" if c == "load" else "right")

    def ms(r, k, s="p50"):
        v = r.metric(k, s)
        return "-" if v is None else f"{v * 1e3:.1f}"

    def val(r, k, d=2):
        v = r.metric(k)
        return "-" if v is None else f"{v:.{d}f}"

    for i, r in enumerate(records):
        w, s = r.workload, getattr(r, "serving", None)
        status = ("ok" if r.status == "ok" else f"[red]{r.status}[/]") + (" (earlier)" if i < earlier else "")
        if "load" not in w:  # failed before its level was planned
            t.add_row(w.get("load_level", "?"), status, *["-"] * 9)
            continue
        load = f"c={w['concurrency']}" if w["load"] == "closed" else \
            ("trace " if w["load"] == "trace" else "") + f"r={w['request_rate_label']}" \
            + (f" cap={w['max_concurrency']}" if w["max_concurrency"] else "")
        if s is None:  # failed: measured nothing
            t.add_row(load, status, *["-"] * 9)
            continue
        t.add_row(load, status, f"{s['requests'] - s['errors_total']}/{s['errors_total']}",
                  f"{ms(r, 'ttft_s')}/{ms(r, 'ttft_s', 'p99')}", ms(r, "tpot_s"), ms(r, "itl_s"),
                  val(r, "output_throughput_tok_s", 1), val(r, "request_throughput_req_s", 3),
                  val(r, "goodput_req_s", 3), val(r, "prefix_cache_hit_rate", 2),
                  f"{s['client']['cpu_util']:.0%}")
    out.print(t)
    for r in records:
        for n in r.notes:
            console.print(f"[yellow]note[/] {n}")


def _check_trace(trace: Path, fmt: str, speedup: float, max_in, max_out, **others) -> None:
    from llmbench.loadgen.traces import FORMATS

    if fmt not in ("auto", *FORMATS):
        raise SpecError([("--trace-format", f"{fmt!r} is not one of auto, {', '.join(FORMATS)}")])
    if not trace.is_file():
        raise SpecError([("--trace", f"{trace} is not a file")])
    clash = [f"--{k}" for k, v in others.items() if v is not None]
    if clash:
        raise SpecError([("--trace", f"the trace sets the arrival times and lengths; drop "
                                     f"{', '.join(clash)} (--max-concurrency caps in-flight requests)")])
    if not speedup > 0:
        raise SpecError([("--trace-speedup", f"{speedup} must be > 0")])
    for flag, v in (("--max-input-len", max_in), ("--max-output-len", max_out)):
        if v is not None and v < 1:
            raise SpecError([(flag, f"{v} must be >= 1")])


def _config(**kw):
    """ServeConfig, its range checks reported as bad input (exit 2) naming the field."""
    from pydantic import ValidationError

    from llmbench.kinds.serving.config import ServeConfig

    try:
        return ServeConfig(**kw)
    except ValidationError as e:
        raise SpecError([("--" + str(err["loc"][0]).removesuffix("_s").replace("_", "-"), err["msg"])
                         for err in e.errors()]) from None


def capacity(result: dict, cfg) -> None:
    slo = ",".join(f"{k}={v:g}" for k, v in cfg.slo.items())
    lo, hi = result["low_req_s"], result["high_req_s"]
    span = f"met at {lo:.3g}, missed at {hi:.3g} req/s" if lo and hi else ""
    if lo is None:
        out.print(f"capacity: no rate tried had {cfg.slo_fraction:.0%} of requests meet {slo} "
                  f"({result['reason']})")
    else:
        out.print(f"capacity: {lo:.3g} req/s with {cfg.slo_fraction:.0%} of requests meeting {slo}"
                  + (f" ({span}; {result['reason']})" if span else f" ({result['reason']})"))


def _ints(text: str, flag: str) -> list[int]:
    try:
        vals = parse_list(text, int)
    except SpecError:
        raise SpecError([(flag, f"{text!r} must be a comma-separated list of integers")]) from None
    if not vals or any(v < 1 for v in vals):
        raise SpecError([(flag, f"{text!r}: every value must be >= 1")])
    return vals


def _rates(text: str) -> list[float]:
    vals = []
    for t in parse_list(text):
        try:
            v = float(t)
        except ValueError:
            raise SpecError([("--rate", f"{t!r} is not a number or inf")]) from None
        if not v > 0:
            raise SpecError([("--rate", f"{t!r}: rates must be > 0")])
        vals.append(v)
    return vals


def _fraction(v: float) -> float:
    if not 0 <= v < 1:
        raise SpecError([("--shared-prefix", f"{v} must be in [0, 1)")])
    return v


def _api_key(env_var: str, path: Optional[Path]) -> str | None:
    if path is not None:
        try:
            key = path.read_text().strip()
        except OSError as e:
            raise SpecError([("--api-key-file", f"cannot read {path}: {e.strerror}")]) from None
        return key or None
    return os.environ.get(env_var) or None


def _auto_device(url: str) -> str:
    """A server on this machine computes here: on the GPUs NVML sees, else the CPU."""
    host = urlsplit(url).hostname or ""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        return "unknown"
    try:
        import pynvml

        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() > 0:
            return "cuda"
    except Exception:
        pass
    return "cpu"
