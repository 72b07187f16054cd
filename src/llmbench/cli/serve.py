"""`llmbench serve`: load-test an OpenAI-compatible server (given by URL, or launched here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from llmbench.cli.common import console, out
from llmbench.cli.flags import int_list, parse_list
from llmbench.cli.tail import check_run_id, outcome, pick_point, run_points
from llmbench.backends import launchable
from llmbench.backends.speculation import parse_speculation
from llmbench.errors import SpecError
from llmbench.loadgen.patterns import PATTERNS
from llmbench.loadgen.shapes import SHAPES
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    url: Optional[str] = typer.Argument(None, help="server base URL, e.g. http://host:8000 or host:8000 (a trailing /v1 is fine)"),
    launch: Optional[str] = typer.Option(None, "--launch", help="start a server here: " + " | ".join(launchable())),
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="catalog name or local path"),
    served_model: Optional[str] = typer.Option(None, "--served-model",
                                               help="model name sent to the server (default: its first /v1/models entry)"),
    api: str = typer.Option("completions", "--api", help="completions | chat"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="NAME|PATH (default: the model's)"),
    dataset: Optional[Path] = typer.Option(None, "--dataset", help="ShareGPT-format JSON file"),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="load pattern: " + ", ".join(PATTERNS)
                                          + " (default: the one --trace, --rate or --concurrency implies)"),
    pattern_opt: list[str] = typer.Option([], "--pattern-opt", help="KEY=VALUE: an option of --pattern's own (repeat)"),
    shape: str = typer.Option("text", "--shape", help="request shape: " + ", ".join(SHAPES)
                              + " (what each request asks beyond its prompt; default plain text)"),
    shape_opt: list[str] = typer.Option([], "--shape-opt", help="KEY=VALUE: an option of --shape's own (repeat)"),
    structured: Optional[str] = typer.Option(None, "--structured", help="json-schema=FILE | regex=PATTERN | "
                                             "choice=A,B,C: the structured request shape (chat), each answer judged"),
    tools: Optional[Path] = typer.Option(None, "--tools", help="OpenAI tool definitions (JSON list): the tools "
                                         "request shape (chat), each tool call judged"),
    tool_choice: str = typer.Option("auto", "--tool-choice", help="auto | required (with --tools)"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="replay a timestamped trace: Mooncake JSONL, Azure or BurstGPT CSV"),
    trace_format: str = typer.Option("auto", "--trace-format", help="auto | mooncake | azure | burstgpt"),
    trace_speedup: float = typer.Option(1.0, "--trace-speedup", help="replay the trace this many times faster"),
    max_input_len: Optional[int] = typer.Option(None, "--max-input-len", help="cap on a trace request's prompt tokens"),
    max_output_len: Optional[int] = typer.Option(None, "--max-output-len", help="cap on a trace request's output tokens"),
    input_len: str = typer.Option("32", "--input-len", help="N | uniform:LO:HI | normal:MEAN:STD"),
    output_len: Optional[str] = typer.Option(None, "--output-len", help="N | uniform:LO:HI | normal:MEAN:STD (default 32, or the dataset's)"),
    prompts: str = typer.Option("text", "--prompts", help="synthetic prompts: text (windows of the bundled "
                                "text) | copy (ask to repeat a passage: n-gram speculation finds it) | "
                                "random (random token ids)"),
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
    warmup_requests: int = typer.Option(2, "--warmup-requests", help="requests sent one by one before each point, never measured (0: none)"),
    slo: Optional[str] = typer.Option(None, "--slo", help="goodput SLOs, e.g. ttft_s=0.5,tpot_s=0.05,e2e_s=10"),
    find_max_rate: bool = typer.Option(False, "--find-max-rate", help="search the highest request rate at which --slo-fraction of requests meet every --slo (start: --rate, default 1)"),
    slo_fraction: float = typer.Option(0.9, "--slo-fraction", help="fraction of requests that must meet every SLO (--find-max-rate)"),
    rate_tolerance: float = typer.Option(0.1, "--rate-tolerance", help="--find-max-rate stops when high/low <= 1 + this"),
    max_points: int = typer.Option(10, "--max-points", help="most rates --find-max-rate measures"),
    timeout: float = typer.Option(300.0, "--timeout", help="per-request limit, seconds"),
    max_error_rate: float = typer.Option(0.05, "--max-error-rate",
                                         help="a level whose failed requests exceed this share of "
                                         "those sent is a failed point (exit status 3); 1 accepts any"),
    seed: int = typer.Option(0, "--seed"),
    force_output: bool = typer.Option(True, "--force-output/--no-force-output",
                                      help="send ignore_eos + min_tokens so answers have output-len tokens"),
    extra_body: Optional[str] = typer.Option(None, "--extra-body", help="JSON merged into every request body"),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="environment variable holding the API key"),
    api_key_file: Optional[Path] = typer.Option(None, "--api-key-file", help="file holding the API key"),
    device: Optional[str] = typer.Option(None, "--device", help="where the server computes: cpu | cuda | cuda:N (for energy)"),
    device_count: int = typer.Option(1, "--device-count", help="GPUs the server uses"),
    server_arg: list[str] = typer.Option([], "--server-arg", help="extra argument for the launched server (repeat)"),
    speculative: Optional[str] = typer.Option(None, "--speculative", help="speculative decoding in the "
                                              "launched server: ngram:k=4[,min=N,max=N] | draft:MODEL[,k=N] "
                                              "(each engine says what it can do)"),
    check_speculation: int = typer.Option(0, "--check-speculation", help="with --speculative: send the "
                                          "first N prompts greedily to the server and to the same engine "
                                          "without speculation, and record whether every token agrees"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    uvloop: bool = typer.Option(True, "--uvloop/--no-uvloop", help="use uvloop when installed"),
    workers: int = typer.Option(1, "--workers", help="client processes sharing each point's load "
                                "(for loads one event loop cannot drive; see docs/serving.md)"),
    executor: str = typer.Option("local", "--executor", help="where the --workers client shards run: "
                                 "local (processes of this host) | ray (actors on the Ray cluster "
                                 "of RAY_ADDRESS, one CPU each, spread over its nodes)"),
    server_metrics: bool = typer.Option(True, "--server-metrics/--no-server-metrics",
                                        help="scrape the server's Prometheus /metrics during each point"),
    metrics_interval: float = typer.Option(1.0, "--metrics-interval", help="seconds between scrapes"),
    power_sampling: str = typer.Option("auto", "--power-sampling",
                                       help="auto | dense | off: the power-sampling thread of a local "
                                       "server's meter (auto: dense only where the energy counter "
                                       "fails); recorded, not part of the point"),
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

    try:
        extra = json.loads(extra_body) if extra_body else {}
    except ValueError as e:
        raise SpecError([("--extra-body", f"not JSON: {e}")]) from None
    cfg = _config(
        model=model, served_model=served_model, api=api, tokenizer=tokenizer, dataset=dataset,
        input_len=LengthDist.parse(input_len, "--input-len"),
        output_len=LengthDist.parse(output_len, "--output-len") if output_len else None,
        prompts=prompts, shared_prefix=shared_prefix, prefix_groups=prefix_groups, turns=turns,
        think_time_s=think_time,
        concurrency=int_list(concurrency, "--concurrency", at_least_one=True) if concurrency else [],
        rate=_rates(rate) if rate else [],
        burstiness=burstiness, max_concurrency=max_concurrency, num_prompts=num_prompts,
        duration_s=duration, warmup=warmup, warmup_requests=warmup_requests, cooldown=cooldown, slo=parse_slo(slo),
        timeout_s=timeout, max_error_rate=max_error_rate, seed=seed, force_output=force_output, extra_body=extra,
        use_uvloop=uvloop, workers=workers, executor=executor, server_metrics=server_metrics, metrics_interval_s=metrics_interval,
        power_sampling=power_sampling,
        pattern=pattern, pattern_options=_options(pattern_opt, "--pattern-opt"),
        **_shape_flags(shape, _options(shape_opt, "--shape-opt"), structured, tools, tool_choice, launch),
        trace=trace, trace_format=trace_format, trace_speedup=trace_speedup,
        max_input_len=max_input_len, max_output_len=max_output_len, find_max_rate=find_max_rate,
        slo_fraction=slo_fraction, rate_tolerance=rate_tolerance, max_points=max_points)
    from llmbench.hardware.device import server_device
    from llmbench.kinds.serving.kind import ServeTarget, read_api_key, serve_points
    from llmbench.loadgen.preflight import normalize_url

    check_run_id(run_id)
    if find_max_rate and (resume or redo_failed):
        raise SpecError([("--resume / --redo-failed", "a capacity search (--find-max-rate) picks each "
                          "rate from the ones before it: it is one unit, run it again whole")])
    url = normalize_url(url) if url is not None else None
    target = ServeTarget(url=url, launch=launch, device_count=device_count,
                         device=device or (server_device(url) if url and not launch else "cpu"),
                         server_args=tuple(server_arg) if launch else (),
                         speculative=parse_speculation(speculative), check_speculation=check_speculation)
    points = pick_point(serve_points(cfg, target), point)
    if list_points:  # a dry run: the checks above, then the levels (tab-separated for scripts)
        for i, p in enumerate(points, start=point or 0):
            print(f"{i}\t{p.key}\t{p.label}")
        return
    api_key = read_api_key(api_key_env, api_key_file)
    from llmbench.store.store import register_secret

    register_secret(api_key)  # a key from a file has no env-var name for the redactor to find
    run(cfg, points, api_key=api_key, results=results, run_id=run_id, resume=resume,
        redo_failed=redo_failed)


def run(cfg, points, *, api_key, results: Path, run_id, resume: bool, redo_failed: bool) -> None:
    """The levels through the shared pipeline (launch/pipeline.py), in this process: see
    kinds/serving/kind.py for why a client is never isolated from its own timing."""
    from llmbench.kinds.serving.kind import ServingKind

    def event(name, p, n):
        if name == "load" and p.target.launch:
            console.print(f"[bold]llmbench serve[/] starting {p.target.launch} server for {cfg.model} ...")
        elif name == "skip":
            console.print(f"[bold]serve[/] {p.label}: stored earlier (--resume)", highlight=False)

    def report(result) -> None:
        summary([*result.earlier, *result.records], earlier=len(result.earlier))
        searched = [r for r in result.records if (getattr(r, "serving", None) or {}).get("capacity_search")]
        if searched:
            capacity(searched[-1].serving["capacity_search"], cfg)
        outcome(result, lambda r: _load_label(r.workload) if "load" in r.workload
                else r.workload.get("load_level") or r.point_key)

    kind = ServingKind(api_key, progress=lambda label: console.print(f"[bold]serve[/] {label}"),
                       on_launch=lambda engine, srv: console.print(
                           f"{engine} healthy at {srv.url} after {srv.startup_s:.1f} s"))
    run_points("serve", kind, points, results, devices=points[0].target.device if points else "-",
               executor="in-process", run_id=run_id, resume=resume, redo_failed=redo_failed,
               progress=event, summary=report)


def summary(records, earlier: int = 0) -> None:
    """One row per record; the first `earlier` were stored by an earlier invocation."""
    t = Table(title="serving", show_lines=False)
    # a judged shape's validity and a speculating server's acceptance are what tells its points
    # apart from a plain one's: shown when any row has them
    judged = any((getattr(r, "serving", None) or {}).get("validity") for r in records)
    spec = any("spec_acceptance_rate" in r.metrics or "spec_greedy_match_fraction" in r.metrics
               or (r.backend.options or {}).get("speculative") for r in records)
    extra = (["valid"] if judged else []) + (["accept (tok/step)", "tok/chunk", "greedy same"] if spec else [])
    for c in ("load", "status", "ok/err", "TTFT p50/p99 ms", "TPOT ms", "ITL ms", "out tok/s", "req/s",
              "goodput", "prefix hit", "client cpu", *extra):
        t.add_column(c, justify="left" if c == "load" else "right")

    def ms(r, k, s="p50"):
        v = r.metric(k, s)
        if v is None:
            return "-"
        # an ITL that was the client's reading rhythm is never shown as the server's
        limited = getattr(r.metrics.get(k), "client_limited", False)
        return f"{v * 1e3:.1f}" + (" (client-limited)" if limited else "")

    def val(r, k, d=2):
        v = r.metric(k)
        return "-" if v is None else f"{v:.{d}f}"

    def extras(r, s) -> list[str]:
        cells = []
        if judged:
            v = (s or {}).get("validity")
            cells.append(f"{v['valid']}/{v.get('requests', v['answered'])}" if v else "-")
        if spec:
            acc = r.metric("spec_acceptance_rate")
            cells += [f"{acc:.2f} ({val(r, 'spec_accepted_len', 2)})" if acc is not None else "-",
                      val(r, "tokens_per_chunk", 2), val(r, "spec_greedy_match_fraction", 3)]
        return cells

    width = 9 + len(extra)
    for i, r in enumerate(records):
        w, s = r.workload, getattr(r, "serving", None)
        status = ("ok" if r.status == "ok" else f"[red]{r.status}[/]") + (" (earlier)" if i < earlier else "")
        if "load" not in w:  # failed before its level was planned
            t.add_row(w.get("load_level", "?"), status, *["-"] * width)
            continue
        load = _load_label(w)
        if s is None:  # failed: measured nothing
            t.add_row(load, status, *["-"] * width)
            continue
        t.add_row(load, status, f"{s['requests'] - s['errors_total']}/{s['errors_total']}",
                  f"{ms(r, 'ttft_s')}/{ms(r, 'ttft_s', 'p99')}", ms(r, "tpot_s"), ms(r, "itl_s"),
                  val(r, "output_throughput_tok_s", 1), val(r, "request_throughput_req_s", 3),
                  val(r, "goodput_req_s", 3), val(r, "prefix_cache_hit_rate", 2),
                  f"{s['client']['cpu_util']:.0%}", *extras(r, s))
    out.print(t)
    for r in records:
        said = _prompt_tokens_line(r)
        if said:
            out.print(said, highlight=False)
    for r in records:
        cost = (getattr(r, "serving", None) or {}).get("lora_cost")
        if cost:   # the lora shape's base-model reference (kinds/serving/lora_cost.py)
            from llmbench.kinds.serving.lora_cost import describe

            out.print(f"{_load_label(r.workload)}: {describe(cost)}", highlight=False)
    for r in records:
        stages = (getattr(r, "serving", None) or {}).get("by_stage")
        if stages:  # the stages pattern's per-stage view (loadgen/patterns/stages.py)
            out.print(_stage_table(stages))
    for r in records:
        for n in r.notes:
            console.print(f"[yellow]note[/] {n}")


def _prompt_tokens_line(r) -> str | None:
    """What the server counted as each prompt when it is not what --input-len asked (a chat
    template's tokens: 32 asked, 62 counted on llama.cpp's chat route), said beside the table
    rather than left in the parity note."""
    p = (getattr(r, "serving", None) or {}).get("token_parity") or {}
    ratio, n, used = p.get("prompt_tokens_usage_ratio"), p.get("requests"), p.get("usage_requests")
    from llmbench.kinds.serving.parity import PARITY_TOLERANCE

    if ratio is None or not n or not used or round(abs(ratio - 1), 12) <= PARITY_TOLERANCE:
        return None
    asked = p["prompt_tokens_asked"] / n
    why = ": the chat template and special tokens included" if ratio > 1 else ""
    return (f"{_load_label(r.workload)}: prompts of {asked:.1f} tokens on average were "
            f"{p['prompt_tokens_usage'] / used:.1f} at the server ({ratio:.2f}x, its usage count{why})")


def _stage_table(stages: dict) -> Table:
    t = Table(title="by stage (requests by their scheduled arrival)", show_lines=False)
    for c in ("stage", "requests (expected)", "ok", "arrivals req/s", "TTFT p50/p99 ms", "TPOT p50 ms",
              "E2E p50 ms"):
        t.add_column(c, justify="left" if c == "stage" else "right")

    def ms(st, k, q="p50"):
        v = (st.get(k) or {}).get(q)
        return "-" if v is None else f"{v * 1e3:.1f}"

    for label, st in stages.items():
        t.add_row(label, f"{st['requests']} ({st['expected_requests']:.1f})", str(st["answered"]),
                  f"{st['arrival_rate_req_s']:.2f}", f"{ms(st, 'ttft_s')}/{ms(st, 'ttft_s', 'p99')}",
                  ms(st, "tpot_s"), ms(st, "e2e_s"))
    return t


def _load_label(w: dict) -> str:
    if w["load"] == "stages":
        return "stages" + (f" cap={w['max_concurrency']}" if w["max_concurrency"] else "")
    return f"c={w['concurrency']}" if w["load"] == "closed" else \
        ("trace " if w["load"] == "trace" else "") + f"r={w['request_rate_label']}" \
        + (f" cap={w['max_concurrency']}" if w["max_concurrency"] else "")


def _config(**kw):
    """ServeConfig, its range checks reported as bad input (exit 2) naming the field."""
    from pydantic import ValidationError

    from llmbench.kinds.serving.config import ServeConfig

    try:
        return ServeConfig(**kw)
    except ValidationError as e:
        # a rule across fields (a model validator) has no location: it names its flags itself
        from llmbench.cli import _for_people   # pydantic's wording, said plainly

        raise SpecError([("--" + str(err["loc"][0]).removesuffix("_s").replace("_", "-")
                          if err["loc"] else "options", _for_people(err["msg"]))
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


def _shape_flags(shape: str, options: dict, structured: str | None, tools: Path | None,
                 tool_choice: str, launch: str | None = None) -> dict:
    """--structured / --tools as the shape and options they name (--shape-opt adds to them,
    e.g. dialect=json-object). A server llmbench launches gets its engine's grammar dialect
    and refuses, up front, what it cannot answer (the engine contract, backends/engine.py)."""
    flags = _shape_of_flags(shape, options, structured, tools, tool_choice)
    if launch:
        from llmbench.launch.servers import server_engine

        engine = server_engine(launch)
        if flags["shape"] == "structured" and "dialect" not in flags["shape_options"]:
            flags["shape_options"]["dialect"] = engine.structured_dialect
        engine.check_request_shape(flags["shape"], flags["shape_options"])
    return flags


def _shape_of_flags(shape: str, options: dict, structured: str | None, tools: Path | None,
                    tool_choice: str) -> dict:
    named = [f for f, v in (("--structured", structured), ("--tools", tools)) if v is not None]
    if len(named) > 1 or (named and shape != "text"):
        raise SpecError([(named[0], "one request shape at a time: "
                                    + ", ".join(named + (["--shape"] if shape != "text" else [])))])
    if structured is not None:
        from llmbench.loadgen.shapes.structured import parse_flag

        return {"shape": "structured", "shape_options": {**parse_flag(structured), **options}}
    if tools is not None:
        if tool_choice not in ("auto", "required"):  # named by its own flag, not as a --shape-opt
            raise SpecError([("--tool-choice", f"{tool_choice!r} is not one of: auto, required")])
        return {"shape": "tools", "shape_options": {"file": str(tools), "tool_choice": tool_choice, **options}}
    if tool_choice != "auto":
        raise SpecError([("--tool-choice", "goes with --tools")])
    return {"shape": shape, "shape_options": options}


def _options(items: list[str], flag: str) -> dict:
    """--pattern-opt / --shape-opt KEY=VALUE items; a value is read as JSON where it parses
    (numbers, lists), else kept as text; the pattern's or shape's own options model checks them."""
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SpecError([(flag, f"{item!r} is not KEY=VALUE")])
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _rates(text: str) -> list[float]:
    vals = []
    for t in parse_list(text):
        try:
            v = float(t)
        except ValueError:
            raise SpecError([("--rate", f"{t!r} is not a number or inf")]) from None
        vals.append(v)
    return vals
