"""Per-request token timelines and the latency metrics defined on them (DESIGN.md).

All times are `time.perf_counter()` seconds (monotonic). A request's timeline is its reference
time (the offline batch start, or the serving request's *scheduled* send time), the actual send
time, and the arrival events of its output tokens, each carrying k >= 1 tokens.

ITL convention: the gap before an event carrying k tokens is split evenly into k gaps (a
k-token chunk counts as k tokens, never one); extra tokens in the very first event add zero
gaps. So every request contributes output_tokens - 1 ITL values whose sum is
t_last - t_first, and the mean ITL of a request equals its TPOT.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RequestTimeline:
    t_ref: float                      # batch start (offline) or scheduled send (serving)
    t_send: float | None = None       # when the request actually went out
    events: list[tuple[float, int]] = field(default_factory=list)  # (arrival time, tokens)
    prompt_tokens: int | None = None
    error: str | None = None

    def add(self, t: float, k: int = 1) -> None:
        if k > 0:
            self.events.append((t, k))

    @property
    def output_tokens(self) -> int:
        return sum(k for _, k in self.events)

    @property
    def t_first(self) -> float | None:
        return self.events[0][0] if self.events else None

    @property
    def t_last(self) -> float | None:
        return self.events[-1][0] if self.events else None

    def ttft_s(self) -> float | None:
        return None if not self.events else self.events[0][0] - self.t_ref

    def e2e_s(self) -> float | None:
        return None if not self.events else self.events[-1][0] - self.t_ref

    def send_lag_s(self) -> float | None:
        return None if self.t_send is None else self.t_send - self.t_ref

    def tpot_s(self) -> float | None:
        n = self.output_tokens
        if n < 2:
            return None
        return (self.events[-1][0] - self.events[0][0]) / (n - 1)

    def itl_s(self) -> list[float]:
        if not self.events:
            return []
        gaps = [0.0] * (self.events[0][1] - 1)
        for (t0, _), (t1, k) in zip(self.events, self.events[1:]):
            gaps.extend([(t1 - t0) / k] * k)
        return gaps


@dataclass
class BatchTiming:
    """One timed offline batch (one repeat)."""

    t_start: float
    t_end: float                        # the batch's last token (metrics.last_token_time)
    requests: list[RequestTimeline]
    energy_j: float | None = None       # per batch (the window's energy / energy_batches)
    avg_power_w: float | None = None    # over the energy window
    t_return: float | None = None       # when generate() returned (>= t_end)
    energy_window_s: float | None = None
    energy_batches: int = 1             # batches run inside the energy window

    @property
    def latency_s(self) -> float:
        return self.t_end - self.t_start
