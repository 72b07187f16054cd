"""Stages: an arrival rate that changes over the run, as a load test's stages or a ramp
(k6's ramping arrival rate, Locust's load shapes): `--pattern stages --pattern-opt
stages=30s:2,60s:8,30s:8` holds 2 req/s for 30 s, then 8 for 60 s and 30 s more;
`--pattern-opt ramp=true` moves the rate linearly from the previous stage's target (the first
from `start_rate`, default 0) to each stage's target over its duration. A stage at rate 0 is a
pause.

Arrivals are a non-homogeneous Poisson process drawn by time rescaling: unit-mean gaps
(gamma of shape `--burstiness`, exponential at 1) summed into S_k, each mapped through the
inverse of the cumulated rate, t_k = L^-1(S_k), L(t) = integral of rate(u) du over [0, t]. So
the expected number of requests in a stage is its duration times the mean of its two end
rates, and the stages set how many requests a run sends (-n and --duration do not apply).
One load level; the record's `serving.by_stage` gives each stage's requests, arrival rate and
latencies, so a user sees where the server stopped keeping up. Not stationary: no steady-state
verdict and no capacity search (use --find-max-rate with a rate for those)."""

from __future__ import annotations

import math
import re
from functools import cached_property

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmbench.errors import SpecError
from llmbench.loadgen.patterns.base import LoadPattern
from llmbench.loadgen.schedule import Schedule

_STAGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*:\s*(\d+(?:\.\d+)?)\s*$")
_UNIT_S = {"ms": 1e-3, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}


class Stage(BaseModel):
    model_config = ConfigDict(frozen=True)
    duration_s: float = Field(gt=0)
    rate: float = Field(ge=0, description="req/s at the stage's end (all through it without ramp)")


class StagesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    stages: tuple[Stage, ...] = Field(description="DURATION:RATE[,DURATION:RATE..]; durations in "
                                                  "ms, s (the default), m or h; rates in req/s")
    ramp: bool = False
    start_rate: float = Field(0.0, ge=0, description="req/s at t=0 when ramping")

    @field_validator("stages", mode="before")
    @classmethod
    def _parse(cls, v):
        if not isinstance(v, str):
            return v
        out = []
        for part in filter(None, (p.strip() for p in v.split(","))):
            m = _STAGE.match(part)
            if m is None:
                raise ValueError(f"{part!r} is not DURATION:RATE (e.g. 30s:2 or 1.5m:8)")
            out.append({"duration_s": float(m[1]) * _UNIT_S[m[2]], "rate": float(m[3])})
        return out

    @model_validator(mode="after")
    def _check(self) -> StagesOptions:
        if not self.stages:
            raise ValueError("give at least one stage, e.g. stages=30s:2,60s:8")
        if self.start_rate and not self.ramp:
            raise ValueError("start_rate is where a ramp starts: add ramp=true")
        return self

    def ends(self) -> list[tuple[float, float, float]]:
        """Per stage: (duration_s, rate at its start, rate at its end)."""
        out, before = [], self.start_rate
        for s in self.stages:
            out.append((s.duration_s, before if self.ramp else s.rate, s.rate))
            before = s.rate
        return out

    def text(self) -> str:
        return ",".join(f"{s.duration_s:g}s:{s.rate:g}" for s in self.stages)


def expected_requests(ends: list[tuple[float, float, float]]) -> list[float]:
    """The expected arrivals per stage: duration x the mean of its end rates (linear rate)."""
    return [d * (a + b) / 2 for d, a, b in ends]


def invert(ends: list[tuple[float, float, float]], s: np.ndarray) -> np.ndarray:
    """t = L^-1(s) for cumulated intensities `s` (each below L at the last stage's end).
    Inside a stage of duration D whose rate goes linearly from a to b, L grows by
    a*tau + (b - a)*tau^2 / (2D); tau = 2u / (a + sqrt(a^2 + 2(b - a)u/D)) solves it for u
    without cancellation (and is u/a when a == b)."""
    t = np.empty_like(s)
    t0, l0 = 0.0, 0.0
    left = np.ones(s.shape, dtype=bool)
    for (d, a, b), mass in zip(ends, expected_requests(ends)):
        here = left & (s < l0 + mass)
        u = s[here] - l0
        root = a + np.sqrt(np.maximum(a * a + 2 * (b - a) * u / d, 0.0))
        t[here] = t0 + np.where(root > 0, 2 * u / np.where(root > 0, root, 1.0), 0.0)
        left &= ~here
        t0, l0 = t0 + d, l0 + mass
    return t


class Stages(LoadPattern):
    name = "stages"
    Options = StagesOptions

    def check(self) -> None:
        cfg = self.cfg
        clash = [flag for flag, v in (("--rate", cfg.rate), ("-n", cfg.num_prompts),
                                      ("--duration", cfg.duration_s), ("--concurrency", cfg.concurrency),
                                      ("--find-max-rate", cfg.find_max_rate)) if v]
        if clash:
            raise SpecError([("--pattern", f"the stages set the arrival rate and the run's length; drop "
                                           f"{', '.join(clash)} (--max-concurrency caps in-flight requests)")])
        if not sum(expected_requests(self.options.ends())):
            raise SpecError([("--pattern-opt", "stages: every rate is 0, so no request would be sent")])

    @cached_property
    def offsets_s(self) -> tuple[float, ...]:
        ends = self.options.ends()
        total = sum(expected_requests(ends))
        b = self.cfg.burstiness
        rng = np.random.default_rng(self.cfg.seed)
        # enough unit-mean gaps to pass the total cumulated intensity, then cut there
        k = int(total + 10 * math.sqrt(total / b) + 20)
        s = np.cumsum(rng.gamma(b, 1.0 / b, size=k))
        while s[-1] < total:
            s = np.concatenate([s, s[-1] + np.cumsum(rng.gamma(b, 1.0 / b, size=k))])
        return tuple(invert(ends, s[s < total]).tolist())

    def schedules(self) -> list[Schedule]:
        offs = self.offsets_s
        if not offs:
            raise SpecError([("--pattern-opt", f"stages: the draw (seed {self.cfg.seed}) brought no "
                                               "request; raise the rates or durations")])
        span_s = sum(d for d, _, _ in self.options.ends())
        return [Schedule(rate=len(offs) / span_s, offsets_s=offs, num_prompts=len(offs),
                         concurrency=self.cfg.max_concurrency, seed=self.cfg.seed)]

    def label(self, sch: Schedule) -> str:
        cap = f" cap={sch.concurrency}" if sch.concurrency else ""
        how = "ramp " if self.options.ramp else ""
        return f"stages {how}{self.options.text()}: {sch.num_prompts} requests{cap}"

    def levels(self) -> list[str]:
        return [f"stages {'ramp ' if self.options.ramp else ''}{self.options.text()}"]

    def workload(self, sch: Schedule) -> dict:
        return {**super().workload(sch), "load": "stages", "request_rate_label": "stages"}

    def summarize(self, sch: Schedule, indices: list[int], outcomes: list, serving: dict,
                  notes: list[str]) -> None:
        serving["by_stage"] = by_stage(self.options.ends(), sch.offsets_s, indices, outcomes)
        for label, st in serving["by_stage"].items():
            if st["requests"] and st["answered"] < st["requests"]:
                notes.append(f"stage {label}: {st['requests'] - st['answered']} of "
                             f"{st['requests']} requests failed")


def by_stage(ends, offsets_s, indices: list[int], outcomes: list) -> dict[str, dict]:
    """Per stage, the requests whose scheduled arrival fell in it (by the schedule, no clock):
    requests, answered, the offered and the drawn arrival rate, TTFT, TPOT and E2E statistics."""
    out, t0 = {}, 0.0
    for k, ((d, a, b), mass) in enumerate(zip(ends, expected_requests(ends))):
        mine = [o for i, o in zip(indices, outcomes) if t0 <= offsets_s[i] < t0 + d]
        ok = [o for o in mine if o.ok]
        rate = f"{a:g}->{b:g}/s" if a != b else f"{b:g}/s"
        out[f"{k + 1}: {t0:g}-{t0 + d:g}s {rate}"] = {
            "start_s": t0, "duration_s": d, "rate_start": a, "rate_end": b,
            "expected_requests": mass, "requests": len(mine), "answered": len(ok),
            "arrival_rate_req_s": len(mine) / d,
            "ttft_s": _stats([o.timeline.ttft_s() for o in ok], "s"),
            "tpot_s": _stats([o.timeline.tpot_s() for o in ok], "s"),
            "e2e_s": _stats([o.timeline.e2e_s() for o in ok], "s")}
        t0 += d
    return out


def _stats(values: list, unit: str) -> dict | None:
    from llmbench.measure.stats import summarize

    xs = [v for v in values if v is not None]
    return summarize(xs, unit, keep_samples=False).model_dump(exclude_none=True) if xs else None
