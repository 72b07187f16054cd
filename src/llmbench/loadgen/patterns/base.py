"""What a load pattern owns: when requests are sent at each of its load levels.

A pattern is one module here plus one line in the registry (patterns/__init__.py). It owns
- its options: built-in patterns read their `llmbench serve` flags (fields of ServeConfig,
  which the point key has always held); a new pattern declares an `Options` model, filled from
  `--pattern-opt KEY=VALUE` and validated by it (its fields then join the point key);
- its rules across options (`check`, raising SpecError naming the flags);
- its levels: one Schedule each (closed loop: a concurrency; open loop: arrival offsets), and
  their labels;
- its fields of the record's workload (`workload`), and its own view of a level's requests
  (`summarize`: e.g. the stages pattern's per-stage latencies);
- optionally, recorded requests it replays with their own lengths (`replay`), and whether a
  capacity search may set its rate (`at_rate`) and whether its arrivals are stationary enough
  for a steady-state verdict (`stationary`).
The serving config, the session and the CLI read patterns only through this class.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from llmbench.errors import SpecError
from llmbench.loadgen.options import NoOptions, parse_options
from llmbench.loadgen.schedule import Schedule


@dataclass
class Replay:
    """Recorded requests a pattern replays: its one schedule, the requests (each with
    input_len, output_len and hash_ids, as loadgen/traces.TraceRequest), the tokens per hash
    id, and notes about reading them."""

    schedule: Schedule
    requests: list
    block_tokens: int | None
    notes: list[str]


class LoadPattern(ABC):
    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    stationary: ClassVar[bool] = False     # arrivals at a constant mean rate (a steady verdict)
    replays: ClassVar[bool] = False        # brings recorded requests with their lengths (replay)

    def __init__(self, cfg):
        self.cfg = cfg      # the serving config (kinds/serving/config.py; not imported: it imports us)
        self.options = parse_options(self.Options, cfg.pattern_options, "--pattern-opt", self.name)

    @classmethod
    def implied_by(cls, cfg) -> bool:
        """Chosen without --pattern when the flags say so (built-in patterns only)."""
        return False

    def check(self) -> None:
        """The rules across this pattern's options; raise SpecError naming the flags."""

    @abstractmethod
    def schedules(self) -> list[Schedule]:
        """One schedule per load level, in the order the levels run."""

    def levels(self) -> list[str]:
        """One label per load level, in order (contacts nothing, reads no file)."""
        return [self.label(s) for s in self.schedules()]

    def label(self, sch: Schedule) -> str:
        return sch.label()

    def workload(self, sch: Schedule) -> dict[str, Any]:
        """The record's load fields for a level run on `sch`."""
        rate = sch.rate
        return {
            "load": "closed" if sch.closed_loop else "open",
            "concurrency": sch.concurrency if sch.closed_loop else None,
            "max_concurrency": None if sch.closed_loop else sch.concurrency,
            "request_rate": rate if rate is not None and not math.isinf(rate) else None,
            "request_rate_label": "closed" if rate is None else ("inf" if math.isinf(rate) else f"{rate:g}"),
            "burstiness": None if sch.closed_loop or sch.offsets_s is not None else sch.burstiness,
        } | ({"load_pattern": self.name} if self.cfg.pattern else {})

    def summarize(self, sch: Schedule, indices: list[int], outcomes: list, serving: dict,
                  notes: list[str]) -> None:
        """A pattern's own view of a level's requests (`indices[i]` is the schedule position
        of `outcomes[i]`), added to the record's serving section; none by default."""

    def replay(self) -> Replay | None:
        """Recorded requests with their own lengths; None: the session builds the prompts."""
        return None

    def at_rate(self, rate: float, num_prompts: int, seed: int) -> Schedule:
        """A level at `rate` (a capacity search); only patterns that have a rate."""
        raise SpecError([("--find-max-rate", f"the {self.name} pattern has no request rate to search")])

    def recorded_config(self):
        """The config as the records name it (e.g. a trace's format, once detected)."""
        return self.cfg

    def requests_per_level(self) -> int | None:
        """-n (default 100) per level; None with --duration."""
        return None if self.cfg.duration_s else (self.cfg.num_prompts or 100)
