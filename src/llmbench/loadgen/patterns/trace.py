"""Trace replay: the arrival times and lengths of a timestamped trace (`--trace FILE`, Mooncake
JSONL, Azure or BurstGPT CSV; loadgen/traces.py), sped up by `--trace-speedup`, lengths capped
by `--max-input-len`/`--max-output-len`, in-flight requests capped by `--max-concurrency`."""

from __future__ import annotations

import math
from functools import cached_property

from llmbench.errors import SpecError
from llmbench.loadgen.patterns.base import LoadPattern, Replay
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.traces import FORMATS


class TraceReplay(LoadPattern):
    name = "trace"
    replays = True

    @classmethod
    def implied_by(cls, cfg) -> bool:
        return cfg.trace is not None

    def check(self) -> None:
        cfg = self.cfg
        if cfg.trace is None:
            raise SpecError([("--trace", "the trace pattern replays a trace: give --trace FILE")])
        if cfg.trace_format not in ("auto", *FORMATS):
            raise SpecError([("--trace-format", f"{cfg.trace_format!r} is not one of auto, "
                                                f"{', '.join(FORMATS)}")])
        if not cfg.trace.is_file():
            raise SpecError([("--trace", f"{cfg.trace} is not a file")])
        clash = [flag for flag, v in (("--rate", cfg.rate), ("--dataset", cfg.dataset),
                                      ("--duration", cfg.duration_s),
                                      ("--concurrency", cfg.concurrency)) if v]
        if clash:
            raise SpecError([("--trace", f"the trace sets the arrival times and lengths; drop "
                                         f"{', '.join(clash)} (--max-concurrency caps in-flight requests)")])

    def levels(self) -> list[str]:
        return [f"trace {self.cfg.trace.name}"]

    def schedules(self) -> list[Schedule]:
        return [self.replay().schedule]

    def workload(self, sch: Schedule) -> dict:
        cfg = self.cfg
        return {**super().workload(sch), "load": "trace",
                "trace": str(cfg.trace), "trace_format": cfg.trace_format,
                "trace_speedup": cfg.trace_speedup, "max_input_len": cfg.max_input_len,
                "max_output_len": cfg.max_output_len}

    def recorded_config(self):
        if self.cfg.trace_format != "auto":
            return self.cfg
        from llmbench.loadgen.traces import detect_format

        return self.cfg.model_copy(update={"trace_format": detect_format(self.cfg.trace)})

    @cached_property
    def _replay(self) -> Replay:
        from llmbench.loadgen.traces import prepare, read_trace

        cfg = self.cfg
        trace = read_trace(cfg.trace, cfg.trace_format)
        reqs, notes = prepare(trace, speedup=cfg.trace_speedup, max_input_len=cfg.max_input_len,
                              max_output_len=cfg.max_output_len, limit=cfg.num_prompts)
        span_s = reqs[-1].t_s
        rate = (len(reqs) - 1) / span_s if span_s > 0 else math.inf
        sch = Schedule(rate=rate, offsets_s=tuple(r.t_s for r in reqs), num_prompts=len(reqs),
                       concurrency=cfg.max_concurrency, seed=cfg.seed)
        return Replay(sch, reqs, trace.block_tokens, notes)

    def replay(self) -> Replay:
        return self._replay
