"""Closed loop: `--concurrency C` requests in flight, a slot that frees sends the next at once
(one level per C; conversations, --turns, run as closed-loop sessions)."""

from __future__ import annotations

from llmbench.errors import SpecError
from llmbench.loadgen.patterns.base import LoadPattern
from llmbench.loadgen.schedule import Schedule


class ClosedLoop(LoadPattern):
    name = "closed"

    @classmethod
    def implied_by(cls, cfg) -> bool:
        return True     # neither a trace nor a rate

    def check(self) -> None:
        if self.cfg.rate:
            raise SpecError([("--pattern", "the closed pattern keeps --concurrency requests in flight: "
                                           "drop --rate")])

    def schedules(self) -> list[Schedule]:
        cfg = self.cfg
        n = self.requests_per_level()
        if cfg.turns > 1:   # conversations (closed-loop, ServeConfig says): -n counts sessions
            n *= cfg.turns
        return [Schedule(concurrency=c, num_prompts=n, duration_s=cfg.duration_s, seed=cfg.seed)
                for c in cfg.concurrency or [1]]
