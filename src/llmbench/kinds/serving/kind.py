"""Serving points as a kind of the shared pipeline (launch/kind.py): `llmbench serve` gets
resume, --redo-failed, --point K and one record-writing path from it.

A serving point is one load level (a concurrency, a rate, a trace replay, or one whole
capacity search) against one target; the group is the points that share a target (one
launched server, or one URL), and run_group starts and stops a launched server once per
group. A capacity search is ONE point whose records are the rates it walked: each next rate
is decided from the previous ones, so its rates cannot be skipped or run alone; its records
all carry the point's key, and --resume / --redo-failed refuse a search (cli/serve.py).

Serving points run in the llmbench process (executor 'in-process'), never in an isolated
worker: the load generator is the clock, and a worker would put a process start, a tokenizer
load and a server check between the server's launch and the levels, and a second process
competing with the client for the cores its timestamps depend on. A crash of the client
is not a point's fault to contain; the server it measures runs in its own process anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from llmbench.backends.speculation import Speculation
from llmbench.errors import SpecError

from llmbench.kinds.base import Frozen, point_key
from llmbench.kinds.serving.config import ServeConfig
from llmbench.kinds.serving.speculation import attach_check
from llmbench.launch.failures import describe
from llmbench.launch.kind import PointKind
from llmbench.loadgen.preflight import safe_url
from llmbench.store.record import Record


class ServeTarget(Frozen):
    """Where the load goes: a given URL, or a server llmbench launches (`--launch`). A
    launched server's URL (a free port) is not part of its identity."""

    url: str | None = None
    launch: str | None = None
    device: str = "unknown"          # where the server computes (for hardware and energy)
    device_count: int = 1
    server_args: tuple[str, ...] = ()
    speculative: Speculation | None = None   # a launched server's speculative decoding
    # prompts sent greedily to it and to the same engine without speculation before the levels
    # (kinds/serving/speculation.py); what is recorded, not what is measured: not in the key
    check_speculation: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _one_server(self) -> ServeTarget:
        if (self.url is None) == (self.launch is None):
            raise SpecError([("URL / --launch", "give a server URL or --launch ENGINE (exactly one)")])
        if self.speculative is not None:
            if not self.launch:
                raise SpecError([("--speculative", "turns speculation on in a server llmbench launches "
                                                   "(--launch); a server at a URL runs as it was started")])
        elif self.check_speculation:
            raise SpecError([("--check-speculation", "compares a server with speculation (--speculative) "
                                                     "against one without: give --speculative")])
        if self.speculative is not None:
            from llmbench.launch.servers import server_engine

            server_engine(self.launch).speculation_args(self.speculative)  # refused now: exit 2
        return self

    def identity(self) -> dict:
        if self.launch:
            spec = {"speculative": self.speculative.model_dump(mode="json")} if self.speculative else {}
            return {"launch": self.launch, "device": self.device, "server_args": list(self.server_args),
                    **spec}
        return {"url": self.url}

    def launch_args(self) -> list[str]:
        """The launched server's extra arguments: --server-arg's, then its speculation's."""
        from llmbench.launch.servers import server_engine

        spec = server_engine(self.launch).speculation_args(self.speculative) if self.speculative else []
        return [*self.server_args, *spec]


class ServePoint(Frozen):
    """One load level of one `llmbench serve` call: level `index` of the config's schedules
    (its prompts follow from the index), or the capacity search (index 0, `search`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: int
    label: str
    search: bool = False
    target: ServeTarget
    cfg: ServeConfig

    @property
    def key(self) -> str:
        # the config as a whole: a level's prompts are its slice of a pool sized by all levels
        # (nor how many warm-up requests went first: a point measured after 0 or 2 is one point;
        # nor where the client ran, unless on Ray: the keys of local points stay what they were;
        # nor how the power was sampled: the record's `observers` say)
        # nor the load pattern when the flags imply it (named, it and its options are the point's)
        # nor the request shape when it is plain text, nor the prompts when the text's windows
        # nor the error rate a level may have and still be ok (a verdict on it, not the load)
        skip = {"use_uvloop", "metrics_interval_s", "warmup_requests", "power_sampling",
                "max_error_rate"} | \
            ({"executor"} if self.cfg.executor == "local" else set()) | \
            ({"pattern", "pattern_options"} if self.cfg.pattern is None else set()) | \
            ({"shape", "shape_options"} if self.cfg.shape == "text" else set()) | \
            ({"prompts"} if self.cfg.prompts == "text" else set())
        cfg = self.cfg.model_dump(mode="json", exclude=skip)
        return point_key([self.target.identity(), cfg, self.index, self.search])


def serve_points(cfg: ServeConfig, target: ServeTarget) -> list[ServePoint]:
    """The sweep: one point per load level, in the order the levels run."""
    if cfg.find_max_rate:
        start = cfg.rate[0] if cfg.rate else 1.0
        return [ServePoint(index=0, label=f"capacity search from rate={start:g}/s", search=True,
                           target=target, cfg=cfg)]
    return [ServePoint(index=k, label=label, target=target, cfg=cfg)
            for k, label in enumerate(cfg.load_pattern().levels())]


class ServingKind(PointKind):
    """In-process only (see the module's docstring); the API key stays in this object, never
    in a point, a job file or a record."""

    name = "serving"

    def __init__(self, api_key: str | None = None, progress: Callable[[str], None] | None = None,
                 on_launch: Callable[[str, Any], None] | None = None):
        self.api_key, self.progress = api_key, progress
        self.on_launch = on_launch    # (engine, launched server) once it is healthy

    def parse_point(self, doc: dict) -> ServePoint:
        return ServePoint.model_validate(doc)

    def prepare(self, points: list[ServePoint], *, local_devices: bool = True) -> dict:
        """A given URL is checked before anything runs (nothing listening: exit 2, no record);
        a launched server is checked once it is up, in run_group."""
        from llmbench.loadgen.preflight import check_server, normalize_url

        return {p.target: check_server(normalize_url(p.target.url), self.api_key)
                for p in points if p.target.url}

    def load_key(self, p: ServePoint) -> Hashable:
        return p.target

    def in_process_ok(self, group: list) -> bool:
        return True

    def base_record(self, p: ServePoint, run_id: str, ctx: Any = None) -> Record:
        from llmbench.store.record import BackendInfo, ModelInfo

        return Record(run_id=run_id, point_key=p.key, kind="serving",
                      backend=BackendInfo(name=p.target.launch or "openai-server"),
                      model=ModelInfo(name=p.cfg.model), workload={"load_level": p.label})

    def run_group(self, group, ctx, run_id, say, before_point=None):
        """Start the group's server (if launched), check it, plan every level's prompts, then
        run the levels in order. A level that raises becomes a failed record and the next
        level runs; a server that does not start or answer stops the sweep (nothing measured
        could be trusted), as before."""
        from llmbench.kinds.serving.session import ServingSession

        first = group[0]
        say("load", first, 0)
        with self._server(first) as target:
            session = ServingSession(first.cfg, target, (ctx or {}).get(first.target), self.progress)
            check = self._check_speculation(first, session) if first.target.check_speculation else None
            for p in group:
                say("start", p, 0)
                try:
                    if before_point:
                        before_point(p)
                    if p.search:
                        for rec in session.search(p.key, run_id):
                            yield p, rec
                        continue
                    rec = session.level(p.key, run_id, p.index)
                    say("measured", p, 0)
                except Exception as e:
                    sch, mine = session.level_plan(p.index) if not p.search else (None, None)
                    rec = session.record(p.key, run_id, sch, mine) if sch else self.base_record(p, run_id)
                    rec.status, rec.error = "failed", describe(e)
                if check is not None:
                    attach_check(rec, check)
                yield p, rec

    def _check_speculation(self, p: ServePoint, session) -> dict:
        """The first --check-speculation prompts of the sweep, greedy, against the launched
        server and against the same engine started without speculation (stopped again before
        the levels run)."""
        from llmbench.kinds.serving.speculation import check_greedy
        from llmbench.launch.servers import launched

        t = p.target
        prompts = [(s.full_prompt(), s.output_len) for s in session.specs[:t.check_speculation]]
        if self.progress:
            self.progress(f"speculation check: {len(prompts)} prompts, greedy, with and without "
                          f"{t.speculative.label}")
        with launched(t.launch, p.cfg.model, device=t.device, extra_args=list(t.server_args)) as ref:
            return check_greedy(ref.url, session.url, session.served, prompts, api_key=self.api_key,
                                tokenize=session.tok.encode)

    @contextmanager
    def _server(self, p: ServePoint):
        from llmbench.loadgen.preflight import normalize_url
        from llmbench.kinds.serving.session import Target

        t = p.target
        if not t.launch:
            yield Target(url=normalize_url(t.url), device=t.device, device_count=t.device_count,
                         api_key=self.api_key,
                         backend_options={"launched": False, "url": safe_url(normalize_url(t.url))})
            return
        from llmbench.backends.options import EngineOptions
        from llmbench.launch.servers import launched

        spec = {"speculative": t.speculative.model_dump(mode="json")} if t.speculative else {}
        mode = EngineOptions(**p.cfg.request_shape().server_mode())
        with launched(t.launch, p.cfg.model, device=t.device, extra_args=t.launch_args(),
                      options=mode) as srv:
            if self.on_launch:
                self.on_launch(t.launch, srv)
            yield Target(url=srv.url, backend=t.launch, backend_version=srv.version,
                         backend_options={**srv.options, "startup_s": round(srv.startup_s, 2), **spec},
                         device=t.device, device_count=t.device_count, api_key=self.api_key,
                         server_pid=srv.pid)


def read_api_key(env_var: str, path: Path | None) -> str | None:
    """The API key: from `path` if given (stripped), else the environment variable."""
    if path is not None:
        try:
            key = path.read_text().strip()
        except OSError as e:
            raise SpecError([("--api-key-file", f"cannot read {path}: {e.strerror}")]) from None
        return key or None
    return os.environ.get(env_var) or None
