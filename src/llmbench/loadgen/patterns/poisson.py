"""Open loop with Poisson arrivals: `--rate R` req/s, exponential gaps (gamma of shape 1)."""

from __future__ import annotations

from llmbench.errors import SpecError
from llmbench.loadgen.patterns.gamma import Gamma


class Poisson(Gamma):
    name = "poisson"

    @classmethod
    def implied_by(cls, cfg) -> bool:
        return bool(cfg.rate or cfg.find_max_rate) and cfg.burstiness == 1

    def check(self) -> None:
        super().check()
        if self.cfg.burstiness != 1:
            raise SpecError([("--burstiness", "Poisson arrivals have burstiness 1: use --pattern gamma")])
