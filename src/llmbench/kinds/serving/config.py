"""What a serving benchmark runs: length distributions, SLOs, warm-up windows, and the load
points (schedules) of one `llmbench serve` call. Imports nothing heavy."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from llmbench.errors import SpecError
from llmbench.kinds.base import Frozen, Strict
from llmbench.loadgen.client import Api
from llmbench.loadgen.schedule import Schedule
from llmbench.measure.power import PowerSampling

SLO_KEYS = ("ttft_s", "tpot_s", "e2e_s")


class LengthDist(Frozen):
    """'32' (fixed), 'uniform:16:64', 'normal:64:16' (clipped to >= 1)."""

    kind: Literal["fixed", "uniform", "normal"] = "fixed"
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, text: str | int, flag: str = "length") -> LengthDist:
        s = str(text).strip()
        try:
            if ":" not in s:
                d = cls(kind="fixed", a=int(s))
            else:
                kind, a, b = s.split(":")
                d = cls(kind=kind, a=float(a), b=float(b))
        except (ValueError, TypeError):
            raise SpecError([(flag, f"{s!r} is not N, uniform:LO:HI or normal:MEAN:STD")]) from None
        if d.a < 1 or (d.kind == "uniform" and d.b < d.a) or (d.kind == "normal" and d.b < 0):
            raise SpecError([(flag, f"{s!r}: lengths must be >= 1 (and HI >= LO, STD >= 0)")])
        return d

    def sample(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        return max(1, round(rng.gauss(self.a, self.b)))

    @property
    def mean(self) -> float:
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a

    def __str__(self) -> str:
        return str(int(self.a)) if self.kind == "fixed" else f"{self.kind}:{self.a:g}:{self.b:g}"


class ServeConfig(Strict):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "smollm2-135m"
    served_model: str | None = Field(None, description="name the server knows the model by")
    api: Api = "completions"
    tokenizer: str | None = None
    dataset: Path | None = None
    # the load pattern (loadgen/patterns/): None = the one the flags imply; its own options
    pattern: str | None = None
    pattern_options: dict[str, Any] = Field(default_factory=dict)
    # what each request asks beyond its prompt (loadgen/shapes/): plain text unless named
    shape: str = "text"
    shape_options: dict[str, Any] = Field(default_factory=dict)
    trace: Path | None = None                   # a timestamped trace to replay (loadgen/traces.py)
    trace_format: str = "auto"
    trace_speedup: float = Field(1.0, gt=0)
    max_input_len: int | None = Field(None, ge=1)    # trace length caps
    max_output_len: int | None = Field(None, ge=1)
    input_len: LengthDist = LengthDist(a=32)
    output_len: LengthDist | None = None       # None: 32, or the dataset's own lengths
    # synthetic prompts: windows of the bundled text, or ones that ask to repeat a passage
    # (copy: n-gram speculation has something to find), or random token ids (nothing to find)
    prompts: Literal["text", "copy", "random"] = "text"
    shared_prefix: float = Field(0.0, ge=0.0, lt=1.0)
    prefix_groups: int = Field(1, ge=1)         # groups each sharing its own prefix
    turns: int = Field(1, ge=1)                 # > 1: conversations of this many turns
    think_time_s: float = Field(0.0, ge=0)      # between an answer and the next turn
    concurrency: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)
    rate: list[Annotated[float, Field(gt=0)]] = Field(default_factory=list)
    burstiness: float = Field(1.0, gt=0)
    max_concurrency: int | None = Field(None, ge=1)
    num_prompts: int | None = Field(None, ge=1)
    duration_s: float | None = Field(None, gt=0)
    warmup: str = "0"                           # seconds, or "10%" of the run
    warmup_requests: int = Field(2, ge=0)       # sent one by one before each point, unmeasured
    cooldown: str = "0"
    slo: dict[str, float] = Field(default_factory=dict)
    find_max_rate: bool = False                 # search the highest rate meeting the SLOs
    slo_fraction: float = Field(0.9, gt=0, le=1)   # of requests that must meet every SLO
    rate_tolerance: float = Field(0.1, gt=0)    # search ends when high / low <= 1 + this
    max_points: int = Field(10, ge=2)
    timeout_s: float = Field(300.0, gt=0)
    # a level whose failed requests are more than this share of those sent is a failed point
    # (exit status 3): its figures describe the few that came back, not the load asked for
    max_error_rate: float = Field(0.05, ge=0, le=1)
    seed: int = 0
    force_output: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)
    use_uvloop: bool = True
    workers: int = Field(1, ge=1)               # client processes (loadgen/workers.py)
    # where the client shards run: "local" processes of this host, or "ray" actors wherever
    # the cluster places them (loadgen/shards.py)
    executor: Literal["local", "ray"] = "local"
    server_metrics: bool = True                 # scrape the server's Prometheus /metrics
    metrics_interval_s: float = Field(1.0, gt=0)
    power_sampling: PowerSampling = "auto"      # the local server's meter (measure/power.py)

    # The rules across fields. They raise SpecError naming the `llmbench serve` flag (pydantic
    # passes it through untouched): a ValueError here would name no field.
    @model_validator(mode="after")
    def _load(self) -> ServeConfig:
        if self.num_prompts is not None and self.duration_s is not None:
            raise SpecError([("--num-prompts / --duration", "give one of them, not both")])
        if self.dataset is not None and not self.dataset.is_file():
            raise SpecError([("--dataset", f"{self.dataset} is not a file")])
        if self.max_concurrency is not None and self.concurrency and self.rate:
            raise SpecError([("--max-concurrency", "with --rate, give the cap by --concurrency or "
                                                   "--max-concurrency, not both")])
        if self.prompts != "text":
            clash = [flag for flag, v in (("--dataset", self.dataset), ("--trace", self.trace),
                                          ("--shared-prefix", self.shared_prefix), ("--turns", self.turns > 1))
                     if v]
            if clash:
                raise SpecError([("--prompts", f"{self.prompts} prompts are synthetic, one turn each: "
                                               f"drop {', '.join(clash)}")])
        if self.turns > 1 and (self.rate or self.duration_s):
            raise SpecError([("--turns", "conversations (--turns) run closed-loop sessions: give "
                              "--concurrency and --num-prompts (sessions), not --rate/--duration")])
        if self.workers > 1 and (self.turns > 1 or self.find_max_rate):
            raise SpecError([("--workers", "several client workers drive independent requests: not "
                              "conversations (--turns) nor --find-max-rate (one watch sees every request)")])
        if self.executor == "ray" and (self.turns > 1 or self.find_max_rate):
            raise SpecError([("--executor", "client shards on Ray drive independent requests: not "
                              "conversations (--turns; each turn needs the last answer in the same "
                              "client) nor --find-max-rate (its early stop watches every request "
                              "in one loop)")])
        return self

    @model_validator(mode="after")
    def _pattern(self) -> ServeConfig:
        if self.pattern_options and self.pattern is None:
            raise SpecError([("--pattern-opt", "options belong to a pattern: give --pattern NAME")])
        pattern = self.load_pattern()
        pattern.check()
        if not self.find_max_rate:
            try:
                pattern.levels()
            except ValueError as e:
                raise SpecError([("schedule", str(e))]) from None
        return self

    @model_validator(mode="after")
    def _shape(self) -> ServeConfig:
        self.request_shape().check()
        if self.turns > 1 and self.shape != "text":
            raise SpecError([("--shape", "conversations (--turns) send plain text turns")])
        return self

    @model_validator(mode="after")
    def _search(self) -> ServeConfig:
        if not self.find_max_rate:
            return self
        clash = [flag for flag, v in (("--concurrency", self.concurrency), ("--duration", self.duration_s),
                                      ("--trace", self.trace), ("--turns", self.turns > 1)) if v]
        if not self.slo or clash or len(self.rate) > 1:
            raise SpecError([("--find-max-rate", "needs --slo, at most one --rate (where to start), "
                              "-n requests per rate, and an open loop"
                              + (f"; drop {', '.join(clash)}" if clash else ""))])
        self.load_pattern().at_rate(1.0, 1, self.seed)   # a pattern with a rate to search
        return self

    @field_validator("slo")
    @classmethod
    def _slo(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in SLO_KEYS]
        if bad:
            raise ValueError(f"unknown SLO {bad}; allowed: {', '.join(SLO_KEYS)}")
        return v

    @property
    def search_point_requests(self) -> int:
        """Requests per rate of a capacity search: -n, else enough for the steady window's
        SLO fraction to be known to about +-2 points (loadgen/steady.py)."""
        from llmbench.loadgen.steady import requests_for

        return self.num_prompts or requests_for(self.slo_fraction)

    def load_pattern(self):
        """The load pattern of these levels (loadgen/patterns/)."""
        from llmbench.loadgen.patterns import pattern_for

        return pattern_for(self)

    def request_shape(self):
        """The request shape of this config (loadgen/shapes/)."""
        from llmbench.loadgen.shapes import shape_for

        return shape_for(self)

    def schedules(self) -> list[Schedule]:
        return self.load_pattern().schedules()


def parse_window(text: str, run_s: float, flag: str) -> float:
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100 * run_s if s.endswith("%") else float(s.rstrip("s"))
    except ValueError:
        raise SpecError([(flag, f"{s!r} is not seconds (e.g. 2 or 2s) or a percentage (10%)")]) from None
    if v < 0:
        raise SpecError([(flag, "must be >= 0")])
    return v


def parse_slo(text: str | None) -> dict[str, float]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        k, _, v = item.partition("=")
        k = k.strip()
        if k not in SLO_KEYS:
            raise SpecError([("--slo", f"unknown SLO {k!r}; allowed: {', '.join(SLO_KEYS)}")])
        try:
            out[k] = float(v.rstrip("s"))
        except ValueError:
            raise SpecError([("--slo", f"{item!r} is not KEY=SECONDS")]) from None
    return out
