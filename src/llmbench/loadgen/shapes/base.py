"""What a request shape owns: what one request asks of the server beyond its prompt and
lengths, and how its answer is judged.

A shape is one module here plus one line in the registry (shapes/__init__.py). It owns
- its options, an `Options` model filled from `--shape-opt KEY=VALUE` (or the shape's own
  flags, which fill the same model) and validated by it; named options join the point key;
- the APIs it can be sent on, and whether the forced output length (ignore_eos + min_tokens)
  applies to it (a grammar or a tool call ends where it ends);
- the endpoint and the body's extra fields (`path`, `body`);
- what each planned request carries (`plan`: e.g. the adapter it goes to), deterministic in
  the seed so a level run alone sends what it would have sent in the whole sweep;
- how a response is read (`read`; streamed chat/completions by default) and judged (`judge`:
  the cause of an answer that is not what was asked, None when it is);
- its fields of the record's workload and its summary of a point (`workload`, `summarize`).
The timing (send, first token, gaps) is the client's alone (loadgen/client.py); the config,
the session and the CLI read shapes only through this class.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from pydantic import BaseModel

from llmbench.errors import SpecError
from llmbench.loadgen.options import NoOptions, parse_options
from llmbench.loadgen.client import PATHS, Outcome, RequestSpec, interpret

if TYPE_CHECKING:
    from llmbench.loadgen.http import Response


class RequestShape:
    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    apis: ClassVar[tuple[str, ...]] = ("completions", "chat")
    forces_output: ClassVar[bool] = True    # ignore_eos + min_tokens apply (--force-output)
    judged: ClassVar[bool] = False          # whether `judge` checks anything (validity reported)
    pooling: ClassVar[bool] = False         # a launched server runs its pooling (embedding) mode

    def __init__(self, cfg):
        self.cfg = cfg      # the serving config (kinds/serving/config.py; not imported: it imports us)
        self.options = parse_options(self.Options, cfg.shape_options, "--shape-opt", self.name)

    def check(self) -> None:
        """The rules across this shape's options and the config; raise SpecError naming flags."""
        if self.cfg.api not in self.apis:
            raise SpecError([("--api", f"the {self.name} request shape is sent on "
                                       f"{' or '.join(self.apis)}, not {self.cfg.api}")])

    def plan(self, specs: list[RequestSpec], seed: int,
             prompts: Callable[[int, int], list[RequestSpec]] | None = None) -> list[RequestSpec]:
        """The planned requests as this shape sends them (a `tag` each where requests differ).
        `prompts(n, seed)` makes n more prompts of the point's input length in the served
        tokenizer (the session's own maker: a shape needing more texts asks it, not kinds/)."""
        return specs

    def server_mode(self) -> dict[str, Any]:
        """The EngineOptions fields a launched server needs to serve this shape (its mode)."""
        return {"embedding": True} if self.pooling else {}

    def server_view(self, serving: dict, notes: list[str]) -> None:  # noqa: B027 - optional
        """What the shape reads of the server's own /metrics view (serving["server_metrics"],
        in place once the point is measured)."""

    def reference(self, specs: list[RequestSpec]) -> list[RequestSpec] | None:
        """The same requests as this shape's reference, run after each point (None: none)."""
        return None

    def path(self, api: str) -> str:
        return PATHS[api]

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        """The request body with this shape's fields added (`body` is the plain request's)."""
        return body

    def read(self, resp: Response, t_ref: float, spec: RequestSpec,
             count_tokens: Callable[[str], int] | None = None) -> Outcome:
        """A finished response as measured; a judged shape's `judge` then sets its verdict."""
        out = interpret(resp, t_ref, spec, count_tokens)
        out.tag = spec.tag
        if out.ok:
            out.invalid = self.judge(out)
        return out

    def judge(self, out: Outcome) -> str | None:
        """Why the answer is not what the request asked for (a cause), or None. The base shape
        asks only for text, so every answer that came is valid."""
        return None

    def workload(self) -> dict[str, Any]:
        """The record's fields for the shape; none for the plain text shape (its keys stay)."""
        return {"request_shape": self.name,
                **({"request_shape_options": self.options.model_dump(mode="json")}
                   if self.options.model_fields_set else {})}

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        """A judged shape's validity: the share of the requests sent whose answer is valid, and
        the others by cause. A request that got no answer (an HTTP error, an empty stream) is
        not valid, cause `no_answer`: 1 valid answer of 40 requests is 1/40, never 1.0."""
        if not self.judged:
            return
        answered = [o for o in outcomes if o.ok]
        bad = Counter(o.invalid for o in answered if o.invalid)
        if len(outcomes) > len(answered):
            bad["no_answer"] = len(outcomes) - len(answered)
        valid = len(outcomes) - sum(bad.values())
        serving["validity"] = {"requests": len(outcomes), "answered": len(answered), "valid": valid,
                               "invalid_by_cause": dict(bad)}
        if outcomes:
            serving["validity"]["valid_fraction"] = valid / len(outcomes)
            if bad:
                notes.append(f"{sum(bad.values())} of {len(outcomes)} requests without a valid answer: "
                             + ", ".join(f"{c} {n}" for c, n in bad.most_common()))


def tagged(spec: RequestSpec, tag: str | None) -> RequestSpec:
    return replace(spec, tag=tag)


def by_tag(outcomes: list[Outcome], untagged: str,
           order: Callable[[str], Any]) -> tuple[float | None, list[tuple[str, list[Outcome], list[Outcome]]]]:
    """A point's requests grouped by their tag (`untagged` for none), in `order`: (the point's
    span, first scheduled send to last token of any request, or None; [(tag, requests,
    answered)]). Groups' output rates over this one span add up to the point's."""
    starts = [o.timeline.t_ref for o in outcomes]
    ends = [o.timeline.t_last for o in outcomes if o.ok and o.timeline.t_last is not None]
    span_s = (max(ends) - min(starts)) if ends else None
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.tag or untagged, []).append(o)
    return span_s, [(t, groups[t], [o for o in groups[t] if o.ok]) for t in sorted(groups, key=order)]
