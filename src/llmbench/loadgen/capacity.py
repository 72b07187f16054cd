"""Capacity under SLOs: the highest request rate at which a given fraction of requests meets
every SLO.

`RateSearch` walks rates: from the start rate it doubles while points meet the target (or
halves while they miss) until one rate meets and another misses, then bisects geometrically
until high / low <= 1 + tolerance. The answer is the highest rate that met, with the lowest
rate that missed as its upper uncertainty. A point whose client fell behind its schedule has
no verdict: the search stops there and says so.

A point that runs in full is judged by its steady window (loadgen/steady.py): warm-up and drain
excluded, the fraction's sampling error stated, a growing queue a miss.

`PointWatch` ends one point early, during its load, when the verdict can no longer change or
one side is over-saturated. It only counts what is certain without parsing a stream: a request
whose first byte came after the TTFT SLO, or whose end came after the E2E SLO, or that failed,
surely misses; one that ended within both (when no TPOT SLO is set) surely meets. Only requests
of the steady window count towards "over" and "under":
- over: more sure misses than the target fraction allows of the window's requests;
- under: enough sure hits that the target fraction is met whatever the rest do;
- saturated, side "client": the client sends behind its own schedule -- the last
  `CLIENT_LAG_SENDS` or more sends, over `CLIENT_LAG_SPAN_S` of the schedule, each later than
  `CLIENT_LAG_S` (the loop's timers are ~1 ms fine: no arrival process makes a healthy loop
  that late, and one stall of the machine does not last a second), so what it measures is
  itself;
- saturated, side "server": completions fall behind arrivals by more than Poisson noise allows.
  In a stable system the number in flight N(t) is stationary around m = rate x mean latency;
  with no queue (continuous batching below capacity) it is Poisson, Var N = m, so over a window
  [t1, t2] the growth N(t2) - N(t1) = arrivals - completions has mean 0 and sd <= sqrt(2 m).
  Saturated when, over the second half of the time since the first answer (>= 2 s of it), the
  growth exceeds Z_SATURATED * sqrt(2 m) and at least MIN_GROWTH requests -- equivalently the
  achieved completion rate is below the offered rate by more than that noise over the window.
  (Near capacity a queue makes Var N larger than m: a stop missed costs only time -- the point
  runs in full and is judged on all its requests -- while a false stop would misjudge it, so
  the bound is deliberately wide.)
The evidence (both rates, the growth, the bound, the send lags) goes into the record.

Requests cancelled by an early stop count as misses only when already late at the stop (no
first byte although the TTFT SLO had passed, a first byte after it, or the E2E SLO passed);
the others are unknown and are never counted as misses (`slo_met_fraction` is over the judged
requests; its bounds treat the unknown ones as all missing / all meeting).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from time import perf_counter

from llmbench.loadgen.http import Response
from llmbench.loadgen.steady import MIN_GROWTH, Z_SATURATED, window

MIN_WINDOW_S = 2.0     # seconds after the first answer before any saturation verdict
CLIENT_LAG_S = 0.05    # a send this late behind its schedule is the client's own delay
CLIENT_LAG_SENDS = 8   # ... for this many sends in a row
CLIENT_LAG_SPAN_S = 1.0  # ... over at least this much of the schedule (one stall is not saturation)


class PointWatch:
    def __init__(self, n_total: int, slo: dict[str, float], fraction: float):
        self.slo, self.fraction = slo, fraction
        self.first, self.end = window(n_total)     # the steady window's arrival indices
        n_window = self.end - self.first
        self.allowed_misses = math.floor((1 - fraction) * n_window + 1e-9)
        self.needed_hits = math.ceil(fraction * n_window - 1e-9)
        self.sure_hits_possible = "tpot_s" not in slo
        self.misses = self.hits = self.in_flight = 0
        self._t: list[float] = []              # scheduled send times, in order
        self._done: list[float] = []           # completion times, in order
        self._lat_sum = 0.0                    # of completed requests, from their schedule
        self._late_run = 0                     # consecutive sends later than CLIENT_LAG_S
        self._late_since = 0.0                 # ... the first one's scheduled time
        self._lags: list[float] = []
        self.stop_reason: str | None = None
        self.side: str | None = None           # saturated: "client" | "server"
        self.evidence: dict | None = None
        self.cancelled = 0                     # in flight at the stop, cancelled
        self.cancelled_late = 0                # ... of which already late: misses
        self.cancelled_unknown = 0             # ... the rest: no verdict possible
        self.late_indices: list[int] = []      # arrival indices of the cancelled late ones
        self.t_first_done: float | None = None
        # run.py keeps here each request in flight: key -> (t_sched, [its Response, once sent])
        self.live: dict[int, tuple[float, list]] = {}

    def on_send(self, t: float, t_now: float | None = None) -> None:
        """A request scheduled at `t` goes out (at `t_now`, default now)."""
        t_now = perf_counter() if t_now is None else t_now
        self.in_flight += 1
        self._t.append(t)
        lag = t_now - t
        self._lags.append(lag)
        if lag > CLIENT_LAG_S:
            if not self._late_run:
                self._late_since = t
            self._late_run += 1
        else:
            self._late_run = 0
        if self.stop_reason is not None:
            return
        if self._late_run >= CLIENT_LAG_SENDS and t - self._late_since >= CLIENT_LAG_SPAN_S:
            self._saturated("client", {
                "sends_late_in_a_row": self._late_run, "late_limit_s": CLIENT_LAG_S,
                "late_over_s": t - self._late_since,
                "last_send_lag_s": lag, "send_lag_max_s": max(self._lags)})
            return
        t_c = self.t_first_done
        if t_c is None or t - t_c < MIN_WINDOW_S:
            return
        t1 = (t_c + t) / 2
        arrivals = len(self._t) - bisect_right(self._t, t1)
        completions = len(self._done) - bisect_right(self._done, t1)
        growth = arrivals - completions
        if growth < MIN_GROWTH:
            return
        window_s = t - t1
        offered = arrivals / window_s
        mean_lat = self._lat_sum / len(self._done)
        m = offered * mean_lat
        bound = max(Z_SATURATED * math.sqrt(2 * m), MIN_GROWTH)
        if growth > bound:
            self._saturated("server", {
                "window_s": [t1, t], "offered_req_s": offered,
                "achieved_req_s": completions / window_s, "in_flight_growth": growth,
                "growth_bound": bound, "stable_in_flight_mean": m,
                "rule": f"growth > max({Z_SATURATED:g} sqrt(2 m), {MIN_GROWTH}), "
                        "m = offered rate x mean latency"})

    def _saturated(self, side: str, evidence: dict) -> None:
        self.stop_reason, self.side = "saturated", side
        self.evidence = {"side": side, **evidence,
                         "send_lag_p99_s": sorted(self._lags)[int(0.99 * (len(self._lags) - 1))]}

    def on_done(self, resp: Response, t_sched: float, index: int) -> None:
        """Request `index` (its place in the arrivals), scheduled at `t_sched`, ended."""
        self.in_flight -= 1
        t_end = resp.pieces[-1][0] if resp.pieces else (resp.t_headers or perf_counter())
        if self.t_first_done is None:
            self.t_first_done = t_end
        if not self._done or t_end >= self._done[-1]:
            self._done.append(t_end)
        else:
            self._done.insert(bisect_left(self._done, t_end), t_end)
        self._lat_sum += max(0.0, t_end - t_sched)
        if self.stop_reason is not None or not self.first <= index < self.end:
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

    def judge_cancelled(self, t_stop: float) -> None:
        """At the stop: each request still in flight is late (a miss) or unknown."""
        ttft, e2e = self.slo.get("ttft_s", math.inf), self.slo.get("e2e_s", math.inf)
        for i, (t_sched, box) in self.live.items():
            resp = box[-1] if box else None
            first = resp.pieces[0][0] if resp is not None and resp.pieces else None
            if (first is None and t_stop - t_sched > ttft) or \
                    (first is not None and first - t_sched > ttft) or t_stop - t_sched > e2e:
                self.late_indices.append(i)
        self.cancelled = len(self.live)
        self.cancelled_late = len(self.late_indices)
        self.cancelled_unknown = self.cancelled - self.cancelled_late

    def verdict(self) -> bool | None:
        """Does the point meet the target, judged from the stop alone? None: not stopped (judge
        it on its requests), or stopped because the client fell behind (no verdict at all);
        see `judged`."""
        return {"under": True, "over": False, None: None}.get(
            self.stop_reason, False if self.side == "server" else None)

    @property
    def judged(self) -> bool:
        return not (self.stop_reason == "saturated" and self.side == "client")

    def describe(self) -> str | None:
        if self.stop_reason == "saturated":
            e = self.evidence
            if self.side == "client":
                return (f"the client is saturated: {e['sends_late_in_a_row']} sends in a row went out "
                        f"more than {CLIENT_LAG_S * 1e3:.0f} ms behind schedule (last "
                        f"{e['last_send_lag_s'] * 1e3:.0f} ms): no verdict on the server")
            return (f"the server is saturated: over the last {e['window_s'][1] - e['window_s'][0]:.1f} s "
                    f"it completed {e['achieved_req_s']:.2f} req/s of {e['offered_req_s']:.2f} offered; "
                    f"in flight grew by {e['in_flight_growth']} (a stable server's noise: <= "
                    f"{e['growth_bound']:.1f})")
        return {"over": "clearly over the SLO: more requests missed it than the target allows",
                "under": "clearly under the SLO: enough requests met it whatever the rest do",
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
    client_limited: float | None = None   # the rate at which the client fell behind

    def next_rate(self) -> float | None:
        if len(self.walked) >= self.max_points or self.client_limited is not None:
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

    def add(self, rate: float, meets: bool | None, fraction_ok: float | None, stopped: str | None,
            **extra) -> None:
        """`meets` None: no verdict (the client fell behind): the search ends there."""
        self.walked.append({"rate": rate, "meets": meets, "fraction_ok": fraction_ok,
                            "stopped_early": stopped, **extra})
        if meets is None:
            self.client_limited = rate
        elif meets and (self.high is None or rate < self.high):
            self.low = max(self.low or 0.0, rate)
        elif not meets and (self.low is None or rate > self.low):
            self.high = min(self.high or math.inf, rate)

    def result(self) -> dict:
        done = self.low is not None and self.high is not None and \
            self.high / self.low <= 1 + self.tolerance
        why = "bracketed within the tolerance" if done else \
            (f"the client fell behind its schedule at {self.client_limited:g} req/s: no verdict "
             "there, search ended" if self.client_limited is not None else
             "no rate tried met the SLO" if self.low is None else
             "every rate tried met the SLO" if self.high is None else
             "stopped at the point limit before the tolerance")
        return {"max_rate_req_s": self.low, "low_req_s": self.low, "high_req_s": self.high,
                "tolerance": self.tolerance, "converged": done, "reason": why,
                "client_limited_req_s": self.client_limited,
                "walked": list(self.walked)}
