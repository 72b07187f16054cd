"""Open loop with gamma-distributed gaps: `--rate R` req/s (one level per rate, and per cap of
`--concurrency`/`--max-concurrency`), gap shape `--burstiness` (< 1 burstier, > 1 smoother;
mean gap 1/R either way); `--rate inf` sends every request at once."""

from __future__ import annotations

from llmbench.errors import SpecError
from llmbench.loadgen.patterns.base import LoadPattern
from llmbench.loadgen.schedule import Schedule


class Gamma(LoadPattern):
    name = "gamma"
    stationary = True

    @classmethod
    def implied_by(cls, cfg) -> bool:
        return bool(cfg.rate or cfg.find_max_rate) and cfg.burstiness != 1

    def check(self) -> None:
        if not (self.cfg.rate or self.cfg.find_max_rate):
            raise SpecError([("--rate", f"the {self.name} pattern sends at a rate: give --rate R[,R..]")])

    def schedules(self) -> list[Schedule]:
        cfg = self.cfg
        caps = cfg.concurrency or [cfg.max_concurrency]
        return [Schedule(rate=r, burstiness=cfg.burstiness, concurrency=c,
                         num_prompts=self.requests_per_level(), duration_s=cfg.duration_s,
                         seed=cfg.seed)
                for r in cfg.rate for c in caps]

    def at_rate(self, rate: float, num_prompts: int, seed: int) -> Schedule:
        return Schedule(rate=rate, burstiness=self.cfg.burstiness,
                        concurrency=self.cfg.max_concurrency, num_prompts=num_prompts, seed=seed)
