"""The known-answer scenarios and their truth.

A scenario is a script for the server (server.py): when each token leaves, how tokens are
packed into SSE events and events into writes, what else the stream carries, how prompts are
counted. Its truth is computed here from the script alone, by the metric definitions of
docs/metrics.md written out afresh (token arrival times -> TTFT, pooled ITL with a k-token gap
split into k, TPOT, E2E; a closed-loop queue simulated for the capacity scenario): nothing here
imports llmbench's client, timeline or statistics, so a bug there cannot hide in the truth.
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from pydantic import Field, model_validator

from llmbench.kinds.base import Strict

Usage = Literal["asked", "every", "end", "none"]
Stat = Literal["p50", "mean"]


class Workload(Strict):
    """What every tool is asked to do, in llmbench's words (tools.py translates)."""

    prompt_tokens: int = Field(32, ge=1)
    output_tokens: int = Field(16, ge=2)
    requests: int = Field(8, ge=1)
    concurrency: int = Field(1, ge=1)
    api: Literal["completions", "chat"] = "completions"


class Scenario(Strict):
    name: str
    what: str                                  # one line for the table
    workload: Workload = Workload()
    ttft_s: float = Field(0.04, gt=0)          # request received -> first token event
    itl_s: float = Field(0.01, gt=0)           # per token: an event of k tokens follows k gaps
    tokens_per_event: int = Field(1, ge=1)     # k > 1: speculative decoding's chunks
    events_per_write: int = Field(1, ge=1)     # m > 1: m one-token events merged into one write
    split_events: bool = False                 # each event written in 3 pieces, the last on time
    usage: Usage = "asked"                     # asked: as vLLM (stream_options); else forced
    reasoning_tokens: int = Field(0, ge=0)     # the first R tokens as delta.reasoning_content
    tool_call: bool = False                    # the answer as one streamed tool call's arguments
    empty_first_s: float | None = Field(None, ge=0)   # an empty role-only chunk this soon
    keepalive_s: float | None = Field(None, gt=0)     # an SSE comment this often throughout
    prompt_extra_tokens: int = Field(0, ge=0)  # the served tokenizer counts this many more
    prefix_hit_ttft_s: float | None = Field(None, gt=0)  # a prompt seen before answers this fast
    warmup_extra_s: float = Field(0.0, ge=0)   # the first request after start is this much later
    slots: int | None = Field(None, ge=1)      # answers at once; the rest queue first come first served
    stats: dict[str, Stat] = Field(default_factory=dict)   # metric -> the statistic compared
    runs: int = Field(1, ge=1, le=2)           # 2: the tool runs twice, the second run is judged

    @model_validator(mode="after")
    def _consistent(self):
        o = self.workload.output_tokens
        step = self.tokens_per_event * self.events_per_write
        if o % step:
            raise ValueError(f"output_tokens {o} must be a multiple of tokens_per_event x "
                             f"events_per_write = {step} (every event full: a known count)")
        if (self.reasoning_tokens or self.tool_call or self.empty_first_s is not None) \
                and self.workload.api != "chat":
            raise ValueError("reasoning_tokens, tool_call and empty_first_s need api 'chat'")
        if self.reasoning_tokens >= o:
            raise ValueError(f"reasoning_tokens {self.reasoning_tokens} must leave answer tokens "
                             f"(output_tokens {o})")
        if self.tokens_per_event > 1 and self.events_per_write > 1:
            raise ValueError("one packing at a time: tokens_per_event or events_per_write")
        return self

    @property
    def step(self) -> int:
        """Tokens that reach the client at once (an event of k, or m events in one write)."""
        return self.tokens_per_event * self.events_per_write

    def hold_s(self) -> float:
        """How long one answer takes from its start to its last token."""
        return self.ttft_s + (self.workload.output_tokens - self.step) * self.itl_s


# -- truth -------------------------------------------------------------------------------------
def token_times(sc: Scenario) -> list[float]:
    """When each output token reaches the client, seconds after its answer starts (a token
    arrives with the write that completes it)."""
    return [sc.ttft_s + (i // sc.step) * sc.step * sc.itl_s for i in range(sc.workload.output_tokens)]


def itl_gaps(times: list[float], step: int) -> list[float]:
    """Pooled ITL by the documented definition: the gap before a write carrying k tokens
    counts k times as gap/k; the first write's extra tokens add none."""
    writes = sorted(set(times))
    return [(b - a) / step for a, b in zip(writes, writes[1:]) for _ in range(step)]


def queue(sc: Scenario) -> list[tuple[float, float]]:
    """(send, start) of each request of a closed loop of `concurrency` clients on a server of
    `slots` answer slots served first come first served, every answer holding its slot for
    hold_s(); sends at 0 and on each client's previous finish."""
    w, slots = sc.workload, sc.slots or 10**9
    hold = sc.hold_s()
    free = [0.0] * min(slots, w.requests)        # when each slot is next free
    clients = [0.0] * min(w.concurrency, w.requests)
    out = []
    for _ in range(w.requests):
        c = min(range(len(clients)), key=lambda i: clients[i])   # the next client to send
        send = clients[c]
        s = min(range(len(free)), key=lambda i: free[i])
        start = max(send, free[s])
        free[s] = clients[c] = start + hold
        out.append((send, start))
    return out


def _stat(values: list[float], stat: Stat) -> float:
    return statistics.median(values) if stat == "p50" else statistics.fmean(values)


def truth(sc: Scenario) -> dict[str, float]:
    """metric -> its true value (the statistic sc.stats names, p50 by default) for a tool
    that runs sc.workload against the server scripted by sc."""
    w = sc.workload
    times = token_times(sc)
    ttft, last = times[0], times[-1]
    per = queue(sc)
    waits = [start - send for send, start in per]
    ttfts = [wait + ttft for wait in waits]
    e2es = [wait + last for wait in waits]
    gaps = itl_gaps(times, sc.step)
    tpot = (last - ttft) / (w.output_tokens - 1)
    st = lambda m: sc.stats.get(m, "p50")   # noqa: E731
    out = {"ttft_s": _stat(ttfts, st("ttft_s")), "itl_s": _stat(gaps, st("itl_s")),
           "tpot_s": tpot, "e2e_s": _stat(e2es, st("e2e_s")),
           "output_tokens": float(w.output_tokens),
           "input_tokens": float(w.prompt_tokens + sc.prompt_extra_tokens)}
    if sc.slots:   # the run lasts from the first send to the last finish
        duration = max(start for _, start in per) + sc.hold_s()
        out["request_throughput_req_s"] = w.requests / duration
        out["output_throughput_tok_s"] = w.requests * w.output_tokens / duration
    return out


def _sc(name: str, what: str, **kw) -> Scenario:
    return Scenario(name=name, what=what, **kw)


CHAT = Workload(api="chat")
SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    _sc("steady", "one token per event at fixed gaps (TTFT 40 ms, ITL 10 ms), usage as asked"),
    _sc("chunks", "4-token events (speculative decoding): 16 tokens in 4 events 40 ms apart",
        tokens_per_event=4),
    _sc("merged", "one-token events, 4 written at once (a proxy or a late reader merges them)",
        events_per_write=4),
    _sc("split", "each event cut into 3 writes 1 ms apart (inside the JSON), the last on time",
        split_events=True),
    _sc("keepalive", "SSE comments (': keep-alive') every 5 ms before and between tokens",
        keepalive_s=0.005),
    _sc("usage-every", "cumulative usage in every chunk, asked or not", usage="every"),
    _sc("usage-end", "usage only in a final chunk, asked or not", usage="end"),
    _sc("usage-none", "no usage at all: output tokens must be counted from the text",
        usage="none"),
    _sc("empty-first", "an empty role-only chunk 1 ms after the request, tokens from 40 ms",
        workload=CHAT, empty_first_s=0.001),
    _sc("reasoning", "8 reasoning deltas (delta.reasoning_content) before 8 content deltas; "
        "TTFT is the first token of either", workload=CHAT, reasoning_tokens=8),
    _sc("tool-call", "the answer is one tool call whose arguments stream one token a delta",
        workload=CHAT, tool_call=True),
    _sc("parity", "the served tokenizer counts every prompt 5 tokens longer (a chat template)",
        prompt_extra_tokens=5),
    _sc("prefix-cache", "a prompt seen before answers in 5 ms, not 40; the tool runs twice, "
        "the second run judged against the cold truth", prefix_hit_ttft_s=0.005, runs=2),
    _sc("warm-up", "the first request after start takes 1 s more (a slow warm-up); TTFT mean "
        "judged", warmup_extra_s=1.0, stats={"ttft_s": "mean"}),
    _sc("capacity", "2 answer slots, 4 clients: requests queue; throughput known",
        slots=2, workload=Workload(concurrency=4, requests=8)),
)}
