"""When requests are sent.

- Closed loop (`rate=None`): `concurrency` requests in flight; a slot that frees sends the next
  request at once. Its scheduled time is the moment the slot freed.
- Open loop (`rate=R` req/s): arrival times drawn in advance, exponential gaps (Poisson) when
  burstiness is 1, gamma gaps with shape=burstiness otherwise (mean gap 1/R either way; < 1 is
  burstier, > 1 smoother); `rate=inf` sends everything at t=0. An optional concurrency cap
  holds arrivals back while the cap is full; the wait stays inside their latency because
  latency is measured from the scheduled arrival, not the send (no coordinated omission).
- Given offsets (`offsets_s`): the arrivals a load pattern computed itself (a trace's, ...).
Which schedules a run's levels get is the load pattern's choice (loadgen/patterns/).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate: float | None = Field(None, gt=0, description="req/s; None = closed loop; inf allowed")
    burstiness: float = Field(1.0, gt=0)
    concurrency: int | None = Field(None, ge=1, description="closed-loop level, or cap on a rate")
    num_prompts: int | None = Field(None, ge=1)
    duration_s: float | None = Field(None, gt=0)
    seed: int = 0
    # Arrival offsets given whole (a replayed trace, or any pattern's own arrivals: loadgen/
    # patterns/); rate is then their mean, for labels and records.
    offsets_s: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> Schedule:
        if self.offsets_s is not None and (self.rate is None or self.num_prompts != len(self.offsets_s)):
            raise ValueError("given offsets need their mean rate and num_prompts = their count")
        if self.rate is None and self.concurrency is None:
            raise ValueError("a closed-loop schedule needs a concurrency")
        if (self.num_prompts is None) == (self.duration_s is None):
            raise ValueError("give exactly one of num_prompts and duration_s")
        return self

    @property
    def closed_loop(self) -> bool:
        return self.rate is None

    def arrivals(self) -> list[float]:
        """Open loop: offsets (s) from the start at which requests arrive."""
        assert self.rate is not None
        if self.offsets_s is not None:
            return list(self.offsets_s)
        if math.isinf(self.rate):
            n = self.num_prompts if self.num_prompts is not None else 0
            if self.duration_s is not None:
                raise ValueError("rate=inf with a duration has no end: use num_prompts")
            return [0.0] * n
        rng = np.random.default_rng(self.seed)
        scale = 1.0 / (self.rate * self.burstiness)
        if self.num_prompts is not None:
            gaps = rng.gamma(self.burstiness, scale, size=self.num_prompts)
            gaps[0] = 0.0  # the first request opens the run
            return np.cumsum(gaps).tolist()
        out, t = [0.0], 0.0
        while True:
            t += float(rng.gamma(self.burstiness, scale))
            if t >= self.duration_s:
                return out
            out.append(t)

    def label(self) -> str:
        if self.closed_loop:
            return f"concurrency={self.concurrency}"
        cap = f" cap={self.concurrency}" if self.concurrency else ""
        if self.offsets_s is not None:
            return f"trace: {self.num_prompts} requests, mean rate {self.rate:.3g}/s{cap}"
        return f"rate={self.rate:g}/s burstiness={self.burstiness:g}{cap}"
