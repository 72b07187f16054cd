"""Capacity under SLOs: the highest request rate at which a given fraction of requests meets
every SLO.

`RateSearch` walks rates: from the start rate it doubles while points meet the target (or
halves while they miss) until one rate meets and another misses, then bisects geometrically
until high / low <= 1 + tolerance. The answer is the highest rate that met, with the lowest
rate that missed as its upper uncertainty.

`PointWatch` ends one point early, during its load, when the verdict can no longer change or the
server is over-saturated. It only counts what is certain without parsing a stream: a request
whose first byte came after the TTFT SLO, or whose end came after the E2E SLO, or that failed,
surely misses; one that ended within both (when no TPOT SLO is set) surely meets.
- over: more sure misses than the target fraction allows of the point's requests;
- under: enough sure hits that the target fraction is met whatever the rest do;
- saturated: from the first answer on, the requests in flight grew by half over the second half
  of the time (at least 16 of them, at least 2 s after that answer): the queue grows without
  bound, and the latencies would only measure how long the point ran.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field

from llmbench.loadgen.http import Response


class PointWatch:
    def __init__(self, n_total: int, slo: dict[str, float], fraction: float):
        self.slo, self.fraction = slo, fraction
        self.allowed_misses = math.floor((1 - fraction) * n_total + 1e-9)
        self.needed_hits = math.ceil(fraction * n_total - 1e-9)
        self.sure_hits_possible = "tpot_s" not in slo
        self.misses = self.hits = self.in_flight = 0
        self._t: list[float] = []              # at each send: when, and how many in flight
        self._n: list[int] = []
        self.stop_reason: str | None = None
        self.cancelled = 0
        self.t_first_done: float | None = None

    def on_send(self, t: float) -> None:
        self.in_flight += 1
        self._t.append(t)
        self._n.append(self.in_flight)
        # Measured from the first answer on: before it the queue fills up to its steady size
        # (about rate x latency) whatever the server's capacity.
        t_c = self.t_first_done
        if self.stop_reason is None and t_c is not None and self.in_flight >= 16 and t - t_c >= 2.0:
            i = min(bisect_left(self._t, (t_c + t) / 2), len(self._n) - 1)
            if self.in_flight >= 1.5 * self._n[i]:
                self.stop_reason = "saturated"

    def on_done(self, resp: Response, t_sched: float) -> None:
        self.in_flight -= 1
        if self.t_first_done is None:
            self.t_first_done = resp.pieces[-1][0] if resp.pieces else t_sched
        if self.stop_reason is not None:
            return
        first = resp.pieces[0][0] if resp.pieces else None
        last = resp.pieces[-1][0] if resp.pieces else None
        ttft, e2e = self.slo.get("ttft_s", math.inf), self.slo.get("e2e_s", math.inf)
        if resp.error or resp.status != 200 or first is None or first - t_sched > ttft \
                or last - t_sched > e2e:
            self.misses += 1
        elif self.sure_hits_possible and resp.complete and last - t_sched <= min(ttft, e2e):
            self.hits += 1
        if self.misses > self.allowed_misses:
            self.stop_reason = "over"
        elif self.hits >= self.needed_hits and self.hits:
            self.stop_reason = "under"

    def describe(self) -> str | None:
        return {"over": "clearly over the SLO: more requests missed it than the target allows",
                "under": "clearly under the SLO: enough requests met it whatever the rest do",
                "saturated": "the server is over-saturated: requests in flight kept growing",
                None: None}[self.stop_reason]


@dataclass
class RateSearch:
    start_rate: float
    tolerance: float = 0.1
    max_points: int = 10
    min_rate: float = 1e-3
    max_rate: float = 1e5
    low: float | None = None          # the highest rate that met
    high: float | None = None         # the lowest rate that missed
    walked: list[dict] = field(default_factory=list)

    def next_rate(self) -> float | None:
        if len(self.walked) >= self.max_points:
            return None
        if not self.walked:
            return self.start_rate
        if self.high is None:
            r = self.low * 2
        elif self.low is None:
            r = self.high / 2
        elif self.high / self.low <= 1 + self.tolerance:
            return None
        else:
            r = math.sqrt(self.low * self.high)
        return r if self.min_rate <= r <= self.max_rate else None

    def add(self, rate: float, meets: bool, fraction_ok: float | None, stopped: str | None) -> None:
        self.walked.append({"rate": rate, "meets": meets, "fraction_ok": fraction_ok,
                            "stopped_early": stopped})
        if meets and (self.high is None or rate < self.high):
            self.low = max(self.low or 0.0, rate)
        elif not meets and (self.low is None or rate > self.low):
            self.high = min(self.high or math.inf, rate)

    def result(self) -> dict:
        done = self.low is not None and self.high is not None and \
            self.high / self.low <= 1 + self.tolerance
        why = "bracketed within the tolerance" if done else \
            ("no rate tried met the SLO" if self.low is None else
             "every rate tried met the SLO" if self.high is None else
             "stopped at the point limit before the tolerance")
        return {"max_rate_req_s": self.low, "low_req_s": self.low, "high_req_s": self.high,
                "tolerance": self.tolerance, "converged": done, "reason": why,
                "walked": list(self.walked)}
