"""What the pooling shapes (embeddings, rerank) share: requests of several texts, a
non-streamed JSON answer read as one event, and a point's numbers in inputs rather than
generated tokens.

A request's first text is its planned prompt; the others are prompts of their own (another
seed's windows of the bundled text, the same length distribution, --input-len), so no two
texts of a point repeat; the request's prompt_len counts them all.

The answer is one event at its last byte: the request's e2e is its latency; it generates no
token, so TTFT, TPOT, ITL and the output-token throughputs are not defined for it and are
taken out of the point (never reported as 0). In their place: inputs/s and input tokens/s,
over the same steady window as request_throughput_req_s (requests answered inside it)."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmbench.errors import SpecError
from llmbench.loadgen.client import Outcome, RequestSpec
from llmbench.loadgen.shapes.base import RequestShape
from llmbench.measure.timeline import RequestTimeline

if TYPE_CHECKING:
    from llmbench.loadgen.http import Response

# Generation's metrics, undefined for an answer that generates nothing (and their all_* twins).
UNDEFINED = ("ttft_s", "tpot_s", "itl_s", "output_throughput_tok_s", "total_throughput_tok_s",
             "client_cpu_s_per_token", "tokens_per_joule", "energy_per_output_token_j",
             "energy_per_token_j")


class PooledShape(RequestShape, ABC):
    """A shape whose requests carry `texts_per_request` texts and whose answer is one JSON
    object, judged by `judge_answer`."""

    apis = ("completions",)     # the default --api; the shape posts to its own endpoint
    forces_output = False
    judged = True
    pooling = True

    @property
    @abstractmethod
    def texts_per_request(self) -> int:
        """How many texts one request carries."""

    def check(self) -> None:
        if self.cfg.api not in self.apis:
            raise SpecError([("--api", f"the {self.name} shape posts to {self.path(self.cfg.api)}; "
                                       "--api does not apply to it")])

    def plan(self, specs: list[RequestSpec], seed: int, prompts=None) -> list[RequestSpec]:
        return plan_texts(specs, seed, self.texts_per_request - 1, prompts)

    def read(self, resp: Response, t_ref: float, spec: RequestSpec,
             count_tokens=None) -> Outcome:
        out, obj = read_json(resp, t_ref, spec)
        if out.ok:
            out.invalid = self.judge_answer(obj, len(texts_of(spec)))
        return out

    @abstractmethod
    def judge_answer(self, obj: dict, n_texts: int) -> str | None:
        """Why the answer to `n_texts` texts is invalid, or None."""

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        super().summarize(outcomes, metrics, serving, notes)
        summarize_pooled(outcomes, metrics, serving, self.inputs_per_request)

    @property
    def inputs_per_request(self) -> int:
        """What inputs/s counts: every text (embeddings) or the documents (rerank)."""
        return self.texts_per_request


@dataclass
class PooledSpec(RequestSpec):
    """A request's texts: `prompt` first, then `more`."""
    more: tuple[str, ...] = ()


def texts_of(spec: RequestSpec) -> list[str]:
    return [spec.prompt, *spec.more] if isinstance(spec, PooledSpec) else [spec.prompt]


def plan_texts(specs: list[RequestSpec], seed: int, k: int, prompts) -> list[RequestSpec]:
    """Each planned request with `k` more texts (module doc)."""
    fields = lambda s: {"prompt": s.prompt, "prompt_len": s.prompt_len,   # noqa: E731
                        "output_len": s.output_len, "history": s.history, "tag": s.tag}
    if not k:
        return [PooledSpec(**fields(s)) for s in specs]
    extra = prompts(len(specs) * k, seed + 104729)     # another seed: windows of their own
    out = []
    for i, s in enumerate(specs):
        mine = extra[i * k:(i + 1) * k]
        out.append(PooledSpec(**{**fields(s), "prompt_len": s.prompt_len + sum(e.prompt_len for e in mine)},
                              more=tuple(e.prompt for e in mine)))
    return out


def read_json(resp: Response, t_ref: float, spec: RequestSpec) -> tuple[Outcome, Any]:
    """(the outcome, the decoded answer or None): one event at the answer's last byte carrying
    the server's usage.prompt_tokens; no output tokens are asked or counted."""
    tl = RequestTimeline(t_ref=t_ref, t_send=resp.t_send, prompt_tokens=spec.prompt_len)
    out = Outcome(timeline=tl, expected_output_len=0, prompt_len_sent=spec.prompt_len, tag=spec.tag)

    def fail(kind: str, detail: str | None) -> tuple[Outcome, None]:
        out.error_kind, out.detail, tl.error = kind, detail, kind
        return out, None

    if resp.error:     # a cut answer is no JSON to read
        return fail(resp.error, resp.detail)
    if resp.status and resp.status != 200:
        return fail(f"http_{resp.status}", resp.body[:300].decode("utf-8", "replace"))
    try:
        obj = json.loads(resp.body)
    except ValueError:
        return fail("malformed_json", f"unparseable answer {resp.body[:120]!r}")
    if not isinstance(obj, dict):
        return fail("malformed_json", "the answer is not a JSON object")
    if obj.get("error"):
        e = obj["error"]
        return fail("server_error", str(e.get("message") if isinstance(e, dict) else e)[:300])
    tl.add(resp.pieces[-1][0], 1)     # the answer, as one event (its k is no token count)
    out.n_events = out.n_reads = 1
    out.usage_completion_tokens = 0   # nothing generated
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
    if isinstance(usage.get("prompt_tokens"), int):
        out.usage_prompt_tokens = tl.prompt_tokens = usage["prompt_tokens"]
        out.token_source = "usage"
    return out, obj


def summarize_pooled(outcomes: list[Outcome], metrics: dict, serving: dict,
                     inputs_per_request: int) -> None:
    """Replace generation's numbers by the inputs' (module doc)."""
    from llmbench.measure.stats import summarize

    for name in UNDEFINED:
        metrics.pop(name, None)
        metrics.pop(f"all_{name}", None)
    serving["output_tokens"] = 0
    ok = [o.timeline for o in outcomes if o.ok]
    if not outcomes:
        return
    t_start = min(o.timeline.t_ref for o in outcomes)
    w = serving["window_s"]
    def rates(a: float, b: float) -> tuple:
        t0, t1 = t_start + a, t_start + b
        done = [tl for tl in ok if t0 <= tl.t_last <= t1]
        span = max(t1 - t0, 1e-9)
        return (summarize([len(done) * inputs_per_request / span], "inputs/s", keep_samples=False),
                summarize([sum(tl.prompt_tokens or 0 for tl in done) / span], "tok/s",
                          keep_samples=False))

    metrics["input_throughput_inputs_per_s"], metrics["input_throughput_tok_s"] = \
        rates(w["steady_start"], w["steady_end"])
    metrics["all_input_throughput_inputs_per_s"], metrics["all_input_throughput_tok_s"] = \
        rates(0.0, w["end"])
    serving["pooled"] = {"inputs_per_request": inputs_per_request,
                         "inputs": len(ok) * inputs_per_request,
                         "input_tokens": sum(tl.prompt_tokens or 0 for tl in ok)}
