"""The OpenAI-compatible streaming client: request bodies for /v1/completions and
/v1/chat/completions, and the reading of a recorded stream into a token timeline.

Tokens per event (a chunk may carry several tokens: speculative decoding, stream intervals):
1. the server's cumulative `usage.completion_tokens` in every chunk when it sends one (vLLM's
   `continuous_usage_stats`) -> exact counts;
2. else one token per event with text, when that agrees with the total: the final `usage`, or
   without one the tokenizer's count of the whole answer;
3. else the tokenizer's count of each chunk's text, the last event absorbing any difference to
   that total (so the sum always equals it).
The ITL split of a k-token event is `measure/timeline.py`'s: its gap is split evenly into k.
Events that arrive in the same read (merged by the network or the server) are one k-token
chunk in the same sense.

The API key travels only inside the pre-built request bytes; nothing here stores headers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from llmbench.loadgen.http import Endpoint, Response, build_request
from llmbench.loadgen.sse import parse_all
from llmbench.measure.timeline import RequestTimeline

Api = Literal["completions", "chat"]
PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass
class RequestSpec:
    prompt: str
    prompt_len: int          # tokens, by the benchmark's tokenizer (history included)
    output_len: int          # tokens asked for
    # A conversation's earlier turns, (user, assistant) pairs, sent before `prompt`.
    history: tuple[tuple[str, str], ...] = ()
    # What the request shape planned for this request where requests differ (loadgen/shapes/).
    tag: str | None = None

    def full_prompt(self) -> str:
        """The completions API's prompt: the history's texts then this turn's, concatenated,
        so each turn's prompt starts with the whole previous prompt and answer (a prefix cache
        can serve it)."""
        return "".join(u + a for u, a in self.history) + self.prompt


def request_body(spec: RequestSpec, model: str, api: Api, force_output: bool = True,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": spec.output_len, "stream": True,
                            "temperature": 0.0,
                            "stream_options": {"include_usage": True,
                                               "continuous_usage_stats": True}}
    if api == "chat":
        body["messages"] = [m for u, a in spec.history for m in (
            {"role": "user", "content": u}, {"role": "assistant", "content": a})] + \
            [{"role": "user", "content": spec.prompt}]
    else:
        body["prompt"] = spec.full_prompt()
    if force_output:
        body["ignore_eos"] = True
        body["min_tokens"] = spec.output_len
    body.update(extra or {})
    return body


def encode_request(ep: Endpoint, spec: RequestSpec, model: str, api: Api, *,
                   force_output: bool = True, extra: dict[str, Any] | None = None,
                   api_key: str | None = None, shape=None) -> bytes:
    """The request's bytes; a request shape (loadgen/shapes/) adds its fields and endpoint."""
    force_output = force_output and (shape is None or shape.forces_output)
    body = request_body(spec, model, api, force_output, extra)
    if shape is not None:
        body = shape.body(body, spec)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    path = shape.path(api) if shape is not None else PATHS[api]
    return build_request(ep, "POST", path, json.dumps(body).encode(), headers)


@dataclass
class Outcome:
    """One request as measured: its timeline plus what the server said about it."""

    timeline: RequestTimeline
    expected_output_len: int
    prompt_len_sent: int = 0         # the prompt's length by the benchmark's tokenizer
    error_kind: str | None = None
    detail: str | None = None
    text: str = ""
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    token_split: str = "none"       # continuous_usage | one_per_event | tokenizer
    token_source: str = "none"      # usage (the server's) | tokenizer (no usage sent)
    n_events: int = 0               # events that carried text or tokens
    n_reads: int = 0                # client reads that carried them (loadgen/bunching.py)
    finish_reason: str | None = None
    chunk_texts: list[str] = field(default_factory=list)
    # A server that streams reasoning apart (`reasoning_content` / `reasoning`): when its first
    # reasoning and first answer text came, and the reasoning text.
    t_first_reasoning: float | None = None
    t_first_answer: float | None = None
    reasoning_text: str = ""
    tag: str | None = None          # the request's RequestSpec.tag
    # Streamed tool calls (`delta.tool_calls`), by index: {"name", "arguments"} with the
    # argument fragments joined; a fragment is generated output, timed like text.
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    invalid: str | None = None      # a judged shape's cause of an answer not as asked

    @property
    def ok(self) -> bool:
        return self.error_kind is None


try:  # msgspec decodes the few fields needed ~5x faster than json (it ships with vLLM)
    import msgspec

    class _Function(msgspec.Struct):
        name: str | None = None
        arguments: str | None = None

    class _ToolCall(msgspec.Struct):
        index: int = 0
        function: _Function | None = None

    class _Delta(msgspec.Struct):
        content: str | None = None
        tool_calls: list[_ToolCall] | None = None
        reasoning_content: str | None = None
        reasoning: str | None = None        # newer vLLM's name for the same field

    class _Choice(msgspec.Struct):
        text: str | None = None
        delta: _Delta | None = None
        finish_reason: str | None = None

    class _Usage(msgspec.Struct):
        prompt_tokens: int | None = None
        completion_tokens: int | None = None

    class _Chunk(msgspec.Struct):
        choices: list[_Choice] | None = None
        usage: _Usage | None = None
        error: Any = None

    _fast = msgspec.json.Decoder(_Chunk).decode
except ImportError:  # pragma: no cover - the generic path below does the same
    _fast = None


Fragment = tuple[int, str, str]     # a streamed tool call's (index, name part, arguments part)


def _decode(payload: bytes) -> tuple[str | None, str, int | None, int | None, str | None, bool, str,
                                     list[Fragment]]:
    """(error, text, cumulative completion tokens, prompt tokens, finish reason, has choice,
    the part of text that is reasoning, tool-call fragments); raises ValueError for an event
    that is not a JSON object."""
    if _fast is not None:
        try:
            c = _fast(payload)
        except msgspec.ValidationError:   # valid JSON of an unusual shape: the generic path
            pass
        except msgspec.DecodeError as e:
            raise ValueError(str(e)) from None
        else:
            if c.error:
                e = c.error
                return str(e.get("message") if isinstance(e, dict) else e), "", None, None, None, False, "", []
            u = c.usage
            cum, prompt = (u.completion_tokens, u.prompt_tokens) if u else (None, None)
            if not c.choices:
                return None, "", cum, prompt, None, False, "", []
            ch = c.choices[0]
            reasoning, calls = "", []
            if ch.text is not None:
                text = ch.text
            elif ch.delta is not None:
                reasoning = ch.delta.reasoning_content or ch.delta.reasoning or ""
                text = (ch.delta.content or "") + reasoning
                calls = [(tc.index, tc.function.name or "", tc.function.arguments or "")
                         for tc in ch.delta.tool_calls or () if tc.function is not None]
            else:
                text = ""
            return None, text, cum, prompt, ch.finish_reason, True, reasoning, calls
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise ValueError("event is not a JSON object")
    if obj.get("error"):
        e = obj["error"]
        return str(e.get("message") if isinstance(e, dict) else e), "", None, None, None, False, "", []
    usage = obj.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    cum, prompt = _int_or_none(usage.get("completion_tokens")), _int_or_none(usage.get("prompt_tokens"))
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, "", cum, prompt, None, False, "", []
    text, reasoning = _text_of(choices[0])
    return (None, text, cum, prompt, choices[0].get("finish_reason"), True, reasoning,
            _tool_fragments(choices[0]))


def _int_or_none(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _text_of(choice: dict) -> tuple[str, str]:
    """(all text, its reasoning part)"""
    if "text" in choice:
        t = choice.get("text")
        return (t if isinstance(t, str) else ""), ""
    d = choice.get("delta")
    if not isinstance(d, dict):
        return "", ""
    content, reasoning = d.get("content"), d.get("reasoning_content") or d.get("reasoning")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    return (content if isinstance(content, str) else "") + reasoning, reasoning


def _tool_fragments(choice: dict) -> list[Fragment]:
    d = choice.get("delta")
    calls = d.get("tool_calls") if isinstance(d, dict) else None
    out = []
    for tc in calls if isinstance(calls, list) else ():
        fn = tc.get("function") if isinstance(tc, dict) else None
        if isinstance(fn, dict):
            idx = tc.get("index")
            name, args = fn.get("name"), fn.get("arguments")
            out.append((idx if isinstance(idx, int) else 0, name if isinstance(name, str) else "",
                        args if isinstance(args, str) else ""))
    return out


def answer_text(resp: Response) -> str:
    """A finished response's answer text (a conversation's next turn carries it)."""
    parts = []
    for _, payload in parse_all(resp.pieces):
        if payload.strip() == b"[DONE]":
            continue
        try:
            parts.append(_decode(payload)[1])
        except ValueError:
            continue
    return "".join(parts)


def interpret(resp: Response, t_ref: float, spec: RequestSpec,
              count_tokens: Callable[[str], int] | None = None) -> Outcome:
    tl = RequestTimeline(t_ref=t_ref, t_send=resp.t_send, prompt_tokens=spec.prompt_len)
    out = Outcome(timeline=tl, expected_output_len=spec.output_len, prompt_len_sent=spec.prompt_len)

    def fail(kind: str, detail: str | None) -> Outcome:
        out.error_kind, out.detail = kind, detail
        tl.error = kind
        return out

    if resp.error and resp.error != "connection_dropped":
        return fail(resp.error, resp.detail)
    if resp.status and resp.status != 200:
        return fail(f"http_{resp.status}", resp.body[:300].decode("utf-8", "replace"))
    if resp.error:
        return fail(resp.error, resp.detail)

    events: list[tuple[float, str, int | None]] = []   # (t, text, cumulative completion tokens)
    reasoning: list[str] = []
    answer: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    for t, payload in parse_all(resp.pieces):
        if payload == b"[DONE]" or payload.strip() == b"[DONE]":
            continue
        try:
            err, text, cum, prompt, finish, has_choice, thought, fragments = _decode(payload)
        except ValueError:
            return fail("malformed_sse", f"unparseable event {payload[:120]!r}")
        if err:
            return fail("stream_error", err[:300])
        if prompt is not None:
            out.usage_prompt_tokens = prompt
        if cum is not None:
            out.usage_completion_tokens = cum
        if not has_choice:
            continue
        if finish:
            out.finish_reason = finish
        for i, name, args in fragments:
            call = calls.setdefault(i, {"name": "", "arguments": ""})
            call["name"] += name
            call["arguments"] += args
        answer.append(text)
        # a tool call's fragment is output like text: the event's text for the token count
        generated = text + "".join(n + a for _, n, a in fragments)
        if generated or cum:
            events.append((t, generated, cum))
        if thought:
            reasoning.append(thought)
            if out.t_first_reasoning is None:
                out.t_first_reasoning = t
        if text != thought and out.t_first_answer is None:
            out.t_first_answer = t
    out.reasoning_text = "".join(reasoning)

    out.chunk_texts = [e[1] for e in events]
    out.text = "".join(answer)
    out.tool_calls = [calls[i] for i in sorted(calls)]
    if not events:
        return fail("no_tokens", "the stream carried no generated text")
    out.n_events = len(events)
    # The count: the server's usage when it sent one, else the tokenizer's count of the answer.
    total = out.usage_completion_tokens
    out.token_source = "usage"
    if total is None and count_tokens is not None:
        total, out.token_source = count_tokens(out.text), "tokenizer"
    if all(c is not None for _, _, c in events):
        prev = 0
        for t, _, c in events:
            tl.add(t, c - prev)
            prev = max(prev, c)
        out.token_split = "continuous_usage"
    elif total is None or total == len(events) or count_tokens is None:
        for t, _, _ in events:
            tl.add(t, 1)
        out.token_split = "one_per_event"
    else:
        ks = [max(1, count_tokens(x)) if x else 0 for _, x, _ in events]
        diff = total - sum(ks)
        for i in range(len(ks) - 1, -1, -1):   # give/take the difference from the end
            if diff == 0:
                break
            new = max(1 if ks[i] else 0, ks[i] + diff)
            diff -= new - ks[i]
            ks[i] = new
        for (t, _, _), k in zip(events, ks):
            tl.add(t, k)
        out.token_split = "tokenizer"
    # Events that arrived in one read reached the client together: they are one chunk of k
    # tokens, so the gap before that read is split evenly among them (timeline.py), never
    # credited to the first with zero gaps after it.
    merged: list[tuple[float, int]] = []
    for t, k in tl.events:
        if merged and merged[-1][0] == t:
            merged[-1] = (t, merged[-1][1] + k)
        else:
            merged.append((t, k))
    tl.events = merged
    out.n_reads = len(merged)
    if out.usage_prompt_tokens is not None:
        tl.prompt_tokens = out.usage_prompt_tokens
    return out
