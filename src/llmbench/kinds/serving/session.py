"""The serving workload: load-test an OpenAI-compatible server, one record per load level.

Prompts are built in the model's own tokenizer so that each has exactly the asked number of
tokens (decoded text re-encodes to the same length; checked, and the actual length recorded if
a text refuses to round-trip), different for every request (random windows of the bundled
English text) so no prefix cache helps unless a shared-prefix fraction asks for it. Or they
come from a ShareGPT-format JSON file. The output length is forced (ignore_eos + min_tokens)
and verified: short answers are counted and noted.

Warm-up and cool-down: the steady-state window is [start + warmup, end - cooldown]; the
headline metrics use it and every metric is also kept over the whole run as `all_<name>`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterator
from typing import Any, Callable

from llmbench.errors import SpecError
from llmbench.loadgen.client import RequestSpec, encode_request
from llmbench.loadgen.conversations import conversation_driver
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.preflight import check_server, normalize_url, safe_url
from llmbench.loadgen.run import LoadResult, run_load, run_sync, warm_up
from llmbench.loadgen.server_metrics import Scraper
from llmbench.loadgen.schedule import Schedule
from llmbench.measure.redact import redact_args
from llmbench.kinds.serving.prompts import sharegpt_prompts, synthetic_prompts
from llmbench.kinds.serving.config import LengthDist, ServeConfig
from llmbench.kinds.serving.speculation import speculation_view
from llmbench.kinds.serving.summary import (by_turn, server_view, slo_met_fraction, summarize_point,
                                            warm_prefix_cache)
from llmbench.kinds.serving.tokenizer import load_tokenizer

__all__ = ["LengthDist", "ServeConfig", "ServingSession", "Target", "load_tokenizer",
           "synthetic_prompts"]   # the last two also for benchmarks/client_fidelity.py


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class Target:
    """Where the server is and what it is (for the record)."""

    url: str
    backend: str = "openai-server"
    backend_version: str | None = None
    backend_options: dict[str, Any] | None = None
    device: str = "unknown"        # cpu | cuda | cuda:N | unknown (a remote server)
    device_count: int = 1
    api_key: str | None = None     # used for the request bytes only; never recorded
    server_pid: int | None = None  # a server llmbench launched (its work is the measured load)


class ServingSession:
    """One server's side of a serving sweep: checked, tokenizer loaded, every level's prompts
    planned (each level gets its own slice of one pool, so a level run alone -- `--point K`,
    `--resume` -- sends the prompts it would have sent in the whole sweep), then levels run
    one at a time by their index (kinds/serving/kind.py drives it)."""

    def __init__(self, cfg: ServeConfig, target: Target, listed: list[str] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        from llmbench.measure.env import capture, hardware
        from llmbench.measure.power import EnergyMeter, open_meter
        from llmbench.models.sources import resolve
        from llmbench.store.record import HardwareInfo, ModelInfo

        self.target, self.progress = target, progress
        self.url = normalize_url(target.url)
        if listed is None:
            listed = check_server(self.url, target.api_key)   # refuse now, not after a point of failures
        self.tok = load_tokenizer(cfg.tokenizer or cfg.model)
        cfg = cfg.load_pattern().recorded_config()   # e.g. the trace format read, for the record
        self.cfg, self.pattern = cfg, cfg.load_pattern()
        self.schedules, counts, self.specs, self.notes0 = _load_plan(cfg, self.tok)
        self.shape = cfg.request_shape()
        more = lambda n, seed: synthetic_prompts(self.tok, n, cfg.input_len, LengthDist(a=1),  # noqa: E731
                                                  0.0, seed)
        self.specs = self.shape.plan(self.specs, cfg.seed, more)
        self.offsets = [sum(counts[:k]) for k in range(len(counts))]
        self.counts = counts
        self.served = cfg.served_model or (listed[0] if listed else cfg.model)
        # Warm-up prompts: their own (another seed), so no measured prompt is cached by them.
        self.warmup_specs = self.shape.plan(_warmup_specs(cfg, self.tok, self.specs), cfg.seed + 7919, more) \
            if cfg.warmup_requests else []
        try:
            ref = resolve(cfg.model)
            self.model = ModelInfo(name=ref.name, source=ref.source, params=ref.params,
                                   synthetic_weights=ref.synthetic_weights)
        except SpecError:
            self.model = ModelInfo(name=cfg.model, source="server")
        if target.device == "unknown":
            self.hw = HardwareInfo(name="remote server (unknown hardware)", count=target.device_count)
            self.meter = EnergyMeter("the server's hardware is not on this machine")
        else:
            self.hw = HardwareInfo(**hardware(target.device, target.device_count))
            self.meter = open_meter(target.device, target.device_count, sampling=cfg.power_sampling) \
                if target.device.startswith("cuda") else open_meter("cpu", sampling=cfg.power_sampling)
        from llmbench.measure.gpm import CounterWatch
        from llmbench.measure.observers import observed

        self.watch = _contention_watch(target, self.url)
        # the server's GPUs when they are this machine's; else absent with the reason
        self.meter = observed(self.meter, self.watch,
                              CounterWatch.for_device(target.device, target.device_count)
                              if target.device != "unknown" else
                              CounterWatch(absent="the server's hardware is not on this machine"))
        self.env = capture()
        self.env["argv"] = redact_args(self.env.get("argv", []))

    def record(self, key: str, run_id: str, sch: Schedule, mine: list[RequestSpec], sent: int = 0):
        """A level's record before its measurement (a failed level keeps it, with the cause)."""
        from llmbench.store.record import BackendInfo, Record

        return Record(
            run_id=run_id, point_key=key, kind="serving",
            backend=BackendInfo(name=self.target.backend, version=self.target.backend_version,
                                options={"api": self.cfg.api, "served_model": self.served,
                                         **(self.target.backend_options or {})}),
            model=self.model, hardware=self.hw, workload=_workload(self.cfg, sch, mine, sent),
            power=self.meter.describe(), notes=list(self.notes0), env=self.env)

    def level_plan(self, index: int) -> tuple[Schedule, list[RequestSpec]]:
        """Level `index`'s schedule and its own prompts."""
        off, n = self.offsets[index], self.counts[index]
        return self.schedules[index], [self.specs[(off + i) % len(self.specs)] for i in range(n)]

    def level(self, key: str, run_id: str, index: int):
        sch, mine = self.level_plan(index)
        rec = self._point(key, run_id, sch, mine)
        reference = self.shape.reference(mine)
        if reference is not None and rec.status == "ok":
            self._reference(rec, sch, reference)
        return rec

    def _reference(self, rec, sch: Schedule, reference: list[RequestSpec]) -> None:
        """The point's requests again as the shape's reference (the lora shape's: to the base
        model), same schedule; the cost of the point against it goes in the record."""
        from llmbench.kinds.serving.lora_cost import lora_cost

        if self.progress:
            self.progress(f"{self.pattern.label(sch)}: the same requests to the base model")
        warm = self.shape.reference(self.warmup_specs) or []
        self.meter.counters.reset()
        self.meter.reset()
        try:
            _, metrics, _, _, base = _measure(self.cfg, self.target, self.url, self.served, sch,
                                              reference, self.tok, self.meter, None, warm)
        except Exception as e:   # the point itself was measured: it stays, without its cost
            rec.notes.append(f"the base-model reference failed: {e!r}")
            return
        base_tok_s = metrics.get("output_throughput_tok_s")
        rec.serving["lora_cost"] = lora_cost(
            self._outcomes, base, rec.metric("output_throughput_tok_s"),
            base_tok_s.mean if base_tok_s else None, seed=self.cfg.seed)

    def _point(self, key: str, run_id: str, sch: Schedule, mine: list[RequestSpec], watch=None,
               search: dict | None = None):
        if self.progress:
            self.progress(self.pattern.label(sch))
        self.meter.counters.reset()  # this point's windows only
        self.meter.reset()
        self.watch.reset()
        res, metrics, serving, notes, self._outcomes = _measure(
            self.cfg, self.target, self.url, self.served, sch, mine, self.tok, self.meter, watch,
            self.warmup_specs)
        rec = self.record(key, run_id, sch, mine, len(res.sent))
        if search is not None:
            rec.workload.update(find_max_rate=True, slo_fraction=self.cfg.slo_fraction,
                                search_point=search["point"])
        rec.status, rec.error = "ok", None
        n, err = serving["requests"], serving["errors_total"]
        if n and err == n:
            rec.error = f"every request failed: {serving['errors_by_kind']}"
        elif n and err / n > self.cfg.max_error_rate:
            rec.error = (f"{err} of {n} requests failed ({err / n:.0%}, more than --max-error-rate "
                         f"{self.cfg.max_error_rate:g}): {serving['errors_by_kind']}")
        if rec.error and watch is None:   # a capacity search judges its rates itself
            rec.status = "failed"
        rec.metrics, rec.serving = metrics, serving
        rec.power = self.meter.describe()
        rec.observers.update(self.observers())
        rec.notes.extend(notes)
        rec.env = {**rec.env, "contention": self.watch.result()}  # env is shared by the levels
        if rec.env["contention"]["contended"]:
            rec.notes.append("contended: " + "; ".join(rec.env["contention"]["reasons"]))
        from llmbench.measure.gpm import attach as gpm_attach

        gpm_attach(rec, self.meter.take())
        _annotate(rec)
        return rec

    def observers(self) -> dict[str, str]:
        """What ran in this client process beside the load during a level's window."""
        from llmbench.measure.observers import observers

        scrape = (f"the server's /metrics fetched every {self.cfg.metrics_interval_s:g} s by a "
                  "thread of the client during the window") if self.cfg.server_metrics else None
        return observers(self.meter, self.watch, self.meter.counters, server_metrics=scrape,
                         progress="told before each level's window opened, nothing inside it"
                         if self.progress else None)

    def search(self, key: str, run_id: str) -> Iterator:
        """Bisect on the request rate (loadgen/capacity.py), yielding one record per rate walked,
        each carrying the search so far (the last one the answer). The next rate depends on the
        previous records: the search is one unit (one point) of the pipeline."""
        from llmbench.loadgen.capacity import PointWatch, RateSearch

        cfg, specs = self.cfg, self.specs
        n = cfg.search_point_requests
        search = RateSearch(start_rate=cfg.rate[0] if cfg.rate else 1.0, tolerance=cfg.rate_tolerance,
                            max_points=cfg.max_points)
        k = 0
        while (rate := search.next_rate()) is not None:
            sch = self.pattern.at_rate(rate, n, cfg.seed + k)
            watch = PointWatch(n, cfg.slo, cfg.slo_fraction)
            rec = self._point(key, run_id, sch, specs[k * n:(k + 1) * n], watch, {"point": k})
            steady = rec.serving["steady"]
            # a point run in full is judged on its steady window; a stopped one by its stop
            meets = watch.verdict() if watch.stop_reason else steady["meets"]
            if meets is None and watch.judged:   # a window too short to judge (a tiny -n)
                whole = rec.serving["slo_met_fraction"]
                meets = whole is not None and whole >= cfg.slo_fraction
                rec.notes.append(f"steady window: {steady.get('reason')}; judged on the whole point")
            search.add(rate, meets, steady.get("fraction"), watch.stop_reason, side=watch.side,
                       wilson=steady.get("wilson"), settled=steady["settled"],
                       growing=steady.get("growing"))
            rec.serving["capacity_search"] = search.result()
            rec.serving["point_watch"] = _watch_view(watch, rec.serving)
            if watch.stop_reason and (watch.cancelled or rec.serving["requests"] < n):
                rec.notes.append(f"stopped early after {rec.serving['requests']} of {n} requests "
                                 f"({watch.cancelled} in flight cancelled: {watch.cancelled_late} "
                                 f"already late, {watch.cancelled_unknown} unknown): {watch.describe()}")
            yield rec
            k += 1


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _contention_watch(target: Target, url: str):
    """The client's contention watch. A server on this machine is part of the measured load,
    not contention: one llmbench launched is its child (ours already); one given by URL is
    found by the port it listens on. A remote server's GPUs are not ours to scan."""
    from urllib.parse import urlsplit

    from llmbench.measure.contention import ContentionWatch, listening_pid

    if target.device == "unknown":
        return ContentionWatch.for_device("cpu")
    u = urlsplit(url)
    server = target.server_pid or (listening_pid(u.port or 80) if u.hostname in LOOPBACK else None)
    watch = ContentionWatch.for_device(target.device, target.device_count,
                                       also_pids=(server,) if server else ())
    if server is None:
        watch.notes.append(f"the server's process at {safe_url(url)} was not found on this "
                           "machine: its work counts as other processes'")
    return watch


def _measure(cfg: ServeConfig, target: Target, url: str, served: str, sch: Schedule,
             mine: list[RequestSpec], tok, meter, watch=None,
             warmup: list[RequestSpec] = ()) -> tuple[LoadResult, dict, dict, list[str], list]:
    """One load point: warm-up requests (unmeasured, before the scrape and energy windows),
    then send, with the server's /metrics scraped meanwhile, then read (its outcomes too)."""
    ep = Endpoint.parse(url)
    shape = cfg.request_shape()

    def encode(spec: RequestSpec) -> bytes:
        return encode_request(ep, spec, served, cfg.api, force_output=cfg.force_output,
                              extra=cfg.extra_body, api_key=target.api_key, shape=shape)

    used: dict[int, RequestSpec] = {}
    driver = conversation_driver(mine, cfg.turns, sch.concurrency, cfg.think_time_s,
                                 cfg.timeout_s, encode, used) if cfg.turns > 1 else None
    reqs = [] if driver else [encode(s) for s in mine]
    warm = run_sync(warm_up(ep, [encode(w) for w in warmup], cfg.timeout_s), cfg.use_uvloop) \
        if warmup else None
    scraper = Scraper(url, cfg.metrics_interval_s, target.api_key) if cfg.server_metrics else None
    if scraper:
        scraper.start()
    try:
        with meter.window() as win:
            if cfg.executor == "ray":
                from llmbench.loadgen.shards import run_shards

                res = run_shards(ep, reqs, sch, cfg.workers, timeout_s=cfg.timeout_s,
                                 use_uvloop=cfg.use_uvloop)
            elif cfg.workers > 1:
                from llmbench.loadgen.workers import run_workers

                res = run_workers(ep, reqs, sch, cfg.workers, timeout_s=cfg.timeout_s,
                                  use_uvloop=cfg.use_uvloop)
            else:
                res = run_sync(run_load(ep, reqs, sch, timeout_s=cfg.timeout_s, driver=driver,
                                        watch=watch), cfg.use_uvloop)
    finally:
        if scraper:
            scraper.stop()
    sent_specs = [_as_sent(used[s.index], tok) if driver else mine[s.index % len(mine)]
                  for s in res.sent]
    outcomes = [shape.read(s.resp, s.t_sched, sp, tok.count) for s, sp in zip(res.sent, sent_specs)]
    metrics, serving, notes = summarize_point(outcomes, res, cfg, tok, win.energy_j)
    shape.summarize(outcomes, metrics, serving, notes)
    cfg.load_pattern().summarize(sch, [s.index for s in res.sent], outcomes, serving, notes)
    if warm is not None:
        serving["warmup"] = warm
        if warm["failed"]:
            notes.append(f"{warm['failed']} of {warm['requests']} warm-up request(s) failed")
    # Cancelled by an early stop: a miss only if already late; the others are unknown.
    serving["slo_met_fraction"] = slo_met_fraction(outcomes, cfg.slo,
                                                   watch.cancelled_late if watch else 0)
    if watch is not None and watch.cancelled_unknown and cfg.slo:
        judged = len(outcomes) + watch.cancelled_late
        met = (serving["slo_met_fraction"] or 0.0) * judged
        total = judged + watch.cancelled_unknown
        serving["slo_unknown_requests"] = watch.cancelled_unknown
        serving["slo_met_fraction_bounds"] = [met / total, (met + watch.cancelled_unknown) / total]
    if cfg.slo and not sch.closed_loop and cfg.load_pattern().stationary:
        serving["steady"] = _steady(res, outcomes, sch, cfg, watch)
        notes += [f"steady window: {f}" for f in serving["steady"].get("flags", [])]
    if driver:
        by_turn(outcomes, [s.index % cfg.turns for s in res.sent], cfg.turns, metrics, serving)
    server_view(scraper.summary(res.t_start) if scraper else
                {"available": False, "reason": "not asked (--no-server-metrics)"},
                metrics, serving, notes)
    # datasets, traces and copy prompts may share prefixes of their own: no verdict for them
    warm_prefix_cache(serving, notes, prompts_distinct=not (
        cfg.shared_prefix or cfg.turns > 1 or res.prompts_reused or cfg.dataset or cfg.trace
        or cfg.prompts == "copy"))
    speculation_view(outcomes, serving["server_metrics"], metrics, serving, notes)
    shape.server_view(serving, notes)
    return res, metrics, serving, notes, outcomes


def _steady(res: LoadResult, outcomes, sch: Schedule, cfg: ServeConfig, watch=None) -> dict:
    """The point's steady-state verdict (loadgen/steady.py) from its requests; those an early
    stop cancelled late are misses, the unknown ones are left out."""
    from llmbench.metrics import meets_slo
    from llmbench.loadgen.steady import Judged, judge

    judged = [Judged(s.index, s.t_sched, _t_end(s.resp), o.ok and meets_slo(o.timeline, cfg.slo))
              for s, o in zip(res.sent, outcomes)]
    if watch is not None:
        judged += [Judged(i, watch.live[i][0], None, False) for i in watch.late_indices
                   if i in watch.live]
    n_planned = sch.num_prompts or len(sch.arrivals())
    return judge(judged, n_planned, cfg.slo_fraction)


def _t_end(resp) -> float | None:
    """When a request's answer ended (its last byte; a failure's headers or send)."""
    return resp.pieces[-1][0] if resp.pieces else (resp.t_headers or resp.t_send)


def _watch_view(watch, serving: dict) -> dict:
    """What the point's early stop rested on, for the record; a server saturation verdict is
    set beside the server's own queue where its metrics exist."""
    v = {"stop": watch.stop_reason, "side": watch.side, "evidence": watch.evidence,
         "cancelled": watch.cancelled, "cancelled_late": watch.cancelled_late,
         "cancelled_unknown": watch.cancelled_unknown}
    gauges = (serving.get("server_metrics") or {}).get("gauges") or {}
    if "requests_waiting" in gauges:
        w = gauges["requests_waiting"]
        v["server_queue"] = {"requests_waiting_max": w.get("max"),
                             "requests_running_max": (gauges.get("requests_running") or {}).get("max")}
        if watch.side == "server" and not w.get("max"):
            v["server_queue"]["note"] = (
                "the engine's own queue stayed empty: what grew was its running batch (up to "
                "requests_running_max) or ahead of the engine (HTTP front end, tokenizer)")
    return v


def _warmup_specs(cfg: ServeConfig, tok, specs: list[RequestSpec]) -> list[RequestSpec]:
    """`cfg.warmup_requests` synthetic prompts of the point's mean lengths."""
    mean_in = max(1, round(sum(s.prompt_len for s in specs) / len(specs)))
    mean_out = max(1, round(sum(s.output_len for s in specs) / len(specs)))
    return synthetic_prompts(tok, cfg.warmup_requests, LengthDist(a=mean_in), LengthDist(a=mean_out),
                             0.0, cfg.seed + 7919)


def _as_sent(spec: RequestSpec, tok) -> RequestSpec:
    """A conversation turn as sent: its prompt length counts the history it carries."""
    return RequestSpec(spec.prompt, tok.count_prompt(spec.full_prompt()), spec.output_len, spec.history,
                       spec.tag)


def _load_plan(cfg: ServeConfig, tok) -> tuple[list[Schedule], list[int], list[RequestSpec], list[str]]:
    """The points to run, requests per point, the prompts (in order) and notes about them."""
    replay = cfg.load_pattern().replay()
    if replay is not None:
        return _replay_plan(cfg, tok, replay)
    # Every point gets its own prompts: a prompt seen at an earlier point would be a prefix-cache
    # hit at the next one. A capacity search makes its points as it goes: a pool for all.
    schedules = [] if cfg.find_max_rate else cfg.schedules()
    counts = [cfg.max_points * cfg.search_point_requests] if cfg.find_max_rate else \
        [s.num_prompts or _duration_pool(s) for s in schedules]
    pool_n = sum(counts)
    notes0: list[str] = []
    if cfg.dataset:
        specs, notes0 = sharegpt_prompts(cfg.dataset, tok, pool_n, cfg.output_len, cfg.seed)
    elif cfg.prompts != "text":
        from llmbench.kinds.serving.prompts import copy_prompts, random_id_prompts

        make = copy_prompts if cfg.prompts == "copy" else random_id_prompts
        specs = make(tok, pool_n, cfg.input_len, cfg.output_len or LengthDist(a=32), cfg.seed)
    else:
        specs = synthetic_prompts(tok, pool_n, cfg.input_len, cfg.output_len or LengthDist(a=32),
                                  cfg.shared_prefix, cfg.seed, groups=cfg.prefix_groups)
        off = sum(1 for s in specs if s.prompt_len != _nominal(cfg.input_len, s.prompt_len))
        if off:
            notes0.append(f"{off} prompt(s) could not be made exactly input_len tokens long; "
                          "their real length is used")
    if not cfg.dataset and pool_n > len(tok.encode(_corpus_text())) and cfg.shared_prefix == 0:
        notes0.append(f"{pool_n} prompts outnumber the start positions in the bundled text: "
                      "some prompts share a beginning")
    return schedules, counts, specs, notes0


def _replay_plan(cfg: ServeConfig, tok, replay):
    """A pattern's recorded requests (patterns/base.Replay) as prompts of their own lengths."""
    from llmbench.kinds.serving.prompts import trace_prompts

    specs = trace_prompts(tok, replay.requests, replay.block_tokens, cfg.seed)
    notes = list(replay.notes)
    off = sum(1 for r, s in zip(replay.requests, specs) if s.prompt_len != r.input_len)
    if off:
        notes.append(f"{off} trace prompt(s) could not be made exactly their length; the real "
                     "length is used")
    return [replay.schedule], [len(replay.requests)], specs, notes


def _annotate(rec) -> None:
    try:
        from llmbench.roofline import annotate
    except ImportError:
        return
    annotate(rec)


def _corpus_text() -> str:
    from llmbench.data import bundled_text

    return bundled_text()


def _nominal(d: LengthDist, actual: int) -> int:
    return int(d.a) if d.kind == "fixed" else actual


def _duration_pool(s: Schedule) -> int:
    # Enough distinct prompts for most runs; beyond it prompts repeat (noted in the record).
    if s.rate and not math.isinf(s.rate):
        return min(20000, int(s.rate * s.duration_s * 1.5) + 16)
    return 2000


def _workload(cfg: ServeConfig, sch: Schedule, specs: list[RequestSpec], requests_sent: int) -> dict:
    pattern = cfg.load_pattern()
    own_lens = bool(cfg.dataset) or pattern.replays   # lengths come from a file, not the flags
    mean_in = round(sum(s.prompt_len for s in specs) / len(specs))
    mean_out = round(sum(s.output_len for s in specs) / len(specs))
    source = pattern.name if pattern.replays else "dataset"
    w = {
        **pattern.workload(sch),
        "num_prompts": sch.num_prompts, "duration_s": sch.duration_s,
        "requests_sent": requests_sent,
        "input_len": mean_in if own_lens else int(cfg.input_len.mean),
        "output_len": mean_out if own_lens and cfg.output_len is None
        else int((cfg.output_len or LengthDist(a=32)).mean),
        "input_len_dist": source if own_lens else str(cfg.input_len),
        "output_len_dist": str(cfg.output_len) if cfg.output_len else (source if own_lens else "32"),
        "dataset": str(cfg.dataset) if cfg.dataset else (pattern.name if pattern.replays else "synthetic"),
        "shared_prefix": cfg.shared_prefix, "api": cfg.api, "warmup": cfg.warmup,
        "warmup_requests": cfg.warmup_requests,
        "cooldown": cfg.cooldown, "slo": ",".join(f"{k}={v:g}" for k, v in cfg.slo.items()) or None,
        "force_output": cfg.force_output, "seed": cfg.seed, "timeout_s": cfg.timeout_s,
        "batch_size": None,
    }
    # only when used: the point key of an ordinary point stays what it was
    if cfg.prefix_groups > 1:
        w["prefix_groups"] = cfg.prefix_groups
    if cfg.prompts != "text":
        w["prompts"] = cfg.prompts
    if cfg.workers > 1:
        w["client_workers"] = cfg.workers
    if cfg.executor != "local":
        w["client_executor"] = cfg.executor
    if cfg.turns > 1:
        w.update(turns=cfg.turns, think_time_s=cfg.think_time_s, sessions=sch.num_prompts // cfg.turns)
    w.update(cfg.request_shape().workload())
    return w


