"""The steady-state verdict of one open-loop point: does the server meet the SLO fraction at this
rate once the load has settled, and how sure is that?

- The window: of a point's N planned arrivals (in scheduled order), the requests with index
  floor(WARMUP_FRACTION N) <= i < ceil((1 - DRAIN_FRACTION) N) -- those whose scheduled send
  falls between the first and the last of them. The first ones found an empty server (warm-up:
  too good), the last ones a draining one (no load behind them: too good again).
- The fraction met over the window, its binomial standard error and its Wilson interval
  (scipy.stats.binomtest). Requests in a queue are correlated, so the record also gives the
  standard error of batch means (the window cut into BATCHES consecutive runs): where it is
  well above the binomial one, the binomial interval is too narrow and the record says so.
- In flight, by evidence: the time-averaged number in flight over the window beside Little's
  law (offered rate x mean E2E of the window's requests); and its trend: N(t) fitted by a line
  over the window, its growth across the window against a stable system's noise
  max(Z_SATURATED sqrt(2 m), MIN_GROWTH) (the same bound as the early stop, capacity.py). A
  growing queue is a rate past capacity whatever fraction met so far.
- Verdict: meets when the window's fraction >= the target and in flight does not grow; `settled`
  when the target lies outside the Wilson interval (a growing queue settles it too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WARMUP_FRACTION = 0.2    # of the planned arrivals, excluded at the start
DRAIN_FRACTION = 0.1     # ... and at the end
HALF_WIDTH = 0.02        # the 95% Wilson half-width a search point is sized for (at the target)
CONFIDENCE = 0.95
MIN_WINDOW_REQUESTS = 100
BATCHES = 10
Z_SATURATED = 4.0        # sds of a stable system's in-flight noise (also the early stop's)
MIN_GROWTH = 8           # requests: tiny systems (m ~ 1) need more than a few to say "grows"
LITTLE_TOLERANCE = 0.2   # |mean in flight / (rate x E2E) - 1| beyond this: not steady
TREND_SAMPLES = 400      # points of N(t) the trend is fitted on


@dataclass(frozen=True)
class Judged:
    """One request as the verdict sees it: its arrival index, scheduled send, end (None: never
    ended, e.g. cancelled unknown) and whether it met every SLO (None: unknown)."""

    index: int
    t_sched: float
    t_end: float | None
    met: bool | None


def window(n_planned: int) -> tuple[int, int]:
    """[first, end) arrival indices of the steady window of a point of `n_planned` arrivals."""
    return math.floor(WARMUP_FRACTION * n_planned), math.ceil((1 - DRAIN_FRACTION) * n_planned)


def requests_for(fraction: float, half_width: float = HALF_WIDTH) -> int:
    """Requests a point needs for its window's Wilson interval at `fraction` to be about
    +-`half_width` (normal approximation z^2 p (1 - p) / h^2, at least MIN_WINDOW_REQUESTS)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + CONFIDENCE / 2)
    n_window = max(MIN_WINDOW_REQUESTS, math.ceil(z * z * fraction * (1 - fraction) / half_width ** 2))
    return math.ceil(n_window / (1 - WARMUP_FRACTION - DRAIN_FRACTION))


def sampling_error(met: int, n: int) -> dict:
    """The SLO-met fraction's binomial standard error and Wilson interval."""
    from scipy.stats import binomtest

    p = met / n
    ci = binomtest(met, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return {"stderr": math.sqrt(p * (1 - p) / n), "wilson": [float(ci.low), float(ci.high)],
            "confidence": CONFIDENCE}


def batch_stderr(met: list[bool]) -> float | None:
    """Standard error of the fraction from BATCHES consecutive batches' fractions (counts the
    correlation between neighbours that the binomial error ignores)."""
    if len(met) < 2 * BATCHES:
        return None
    parts = np.array_split(np.asarray(met, dtype=float), BATCHES)
    return float(np.std([p.mean() for p in parts], ddof=1) / math.sqrt(BATCHES))


def in_flight(spans: list[tuple[float, float]], t_a: float, t_b: float) -> dict:
    """Mean number in flight over [t_a, t_b] (a request is in flight from its scheduled send to
    its end) and the growth of its fitted line across the window."""
    starts = np.sort([s for s, _ in spans])
    ends = np.sort([e for _, e in spans])
    grid = np.linspace(t_a, t_b, TREND_SAMPLES)
    n_t = np.searchsorted(starts, grid, side="right") - np.searchsorted(ends, grid, side="right")
    overlap = sum(max(0.0, min(e, t_b) - max(s, t_a)) for s, e in spans)
    mean = overlap / (t_b - t_a)
    slope = float(np.polyfit(grid - t_a, n_t, 1)[0])
    growth = slope * (t_b - t_a)
    bound = max(Z_SATURATED * math.sqrt(2 * mean), MIN_GROWTH)
    return {"mean": mean, "growth": growth, "growth_bound": bound, "growing": growth > bound}


def judge(requests: list[Judged], n_planned: int, fraction: float) -> dict:
    """The steady verdict of a point from its requests (any order); see the module's docstring."""
    first, end = window(n_planned)
    inside = sorted((r for r in requests if first <= r.index < end), key=lambda r: r.index)
    known = [r for r in inside if r.met is not None]
    out: dict = {"window_requests": [first, end], "target": fraction,
                 "warmup_fraction": WARMUP_FRACTION, "drain_fraction": DRAIN_FRACTION,
                 "judged": len(known), "unknown": len(inside) - len(known)}
    if len(known) < 2 or inside[-1].t_sched <= inside[0].t_sched:
        return {**out, "meets": None, "settled": False, "reason": "too few requests in the window"}
    met = sum(r.met for r in known)
    p = met / len(known)
    t_a, t_b = inside[0].t_sched, inside[-1].t_sched
    ended = [r for r in requests if r.t_end is not None]
    e2e = [r.t_end - r.t_sched for r in inside if r.t_end is not None]
    rate = (len(inside) - 1) / (t_b - t_a)
    flight = in_flight([(r.t_sched, r.t_end) for r in ended], t_a, t_b)
    little = rate * float(np.mean(e2e)) if e2e else None
    err = sampling_error(met, len(known))
    batch = batch_stderr([bool(r.met) for r in known])
    meets = p >= fraction and not flight["growing"]
    lo, hi = err["wilson"]
    out.update({
        "window_s": [t_a, t_b], "met": met, "fraction": p, **err, "batch_stderr": batch,
        "offered_req_s": rate, "in_flight_mean": flight["mean"], "littles_law_in_flight": little,
        "littles_law_ratio": flight["mean"] / little if little else None,
        "in_flight_growth": flight["growth"], "growth_bound": flight["growth_bound"],
        "growing": flight["growing"], "meets": meets,
        "settled": flight["growing"] or not lo <= fraction <= hi})
    out["flags"] = flags(out)
    return out


def flags(v: dict) -> list[str]:
    """What weakens a verdict, in words (for the record's notes)."""
    out = []
    if v["growing"]:
        out.append(f"in flight grew by {v['in_flight_growth']:.1f} across the steady window (a "
                   f"stable server's noise <= {v['growth_bound']:.1f}): past capacity")
    r = v["littles_law_ratio"]
    if r is not None and abs(r - 1) > LITTLE_TOLERANCE:
        out.append(f"mean in flight {v['in_flight_mean']:.1f} vs Little's law "
                   f"{v['littles_law_in_flight']:.1f} (rate x mean E2E): not a steady state")
    if v["batch_stderr"] is not None and v["batch_stderr"] > 2 * v["stderr"]:
        out.append(f"requests are correlated: batch-means standard error {v['batch_stderr']:.3f} "
                   f"vs binomial {v['stderr']:.3f}; the Wilson interval is too narrow")
    if not v["settled"]:
        lo, hi = v["wilson"]
        out.append(f"the target {v['target']:g} lies inside the SLO fraction's interval "
                   f"[{lo:.3f}, {hi:.3f}]: the verdict is within sampling error")
    return out
