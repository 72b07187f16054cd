"""Speculative decoding seen from a serving point: the server's own acceptance counters, the
client's tokens per streamed chunk beside them, and the greedy-equivalence check.

Server side (vLLM's `vllm:spec_decode_*` counters, deltas over the point; the names live in
backends/vllm.py): acceptance rate = accepted / proposed draft tokens; accepted length = 1 +
accepted / drafts, the tokens one verification step that had a draft yields (its accepted
proposals plus the token the target model adds: vLLM's "mean acceptance length").

Client side: a step that accepts a proposals streams as one chunk of 1 + a tokens, so over a
point the tokens each decode chunk carries beyond one (`chunk_surplus_tokens`; the first
chunk, the prefill's, left out) equal the server's accepted tokens when every step is its own
chunk, less what a request's last step accepted past max_tokens (counted by the server, never
sent: at most a draft's length per request). The two are recorded side by side, with a note
when they differ by more (merged reads, a server that streams several steps per chunk).

The check: the same prompts, greedy, against the server with speculation and against the same
engine without it; speculation must not change a token (verification keeps the target's own
argmax). Recorded per prompt as the first divergence, and as the matched fraction.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Sequence


def acceptance(counters: dict[str, float]) -> dict[str, float | None]:
    """Acceptance rate and accepted length from a point's spec counter deltas (None: no
    draft was proposed, or the server has no such counters)."""
    drafts, proposed = counters.get("spec_drafts"), counters.get("spec_draft_tokens")
    accepted = counters.get("spec_accepted_tokens")
    if accepted is None or not proposed or not drafts:
        return {"acceptance_rate": None, "accepted_len": None}
    return {"acceptance_rate": accepted / proposed, "accepted_len": 1.0 + accepted / drafts}


def chunk_view(events_per_request: Sequence[Sequence[tuple[float, int]]]) -> dict[str, float | int | None]:
    """Tokens per streamed decode chunk (every chunk after a request's first), pooled over the
    requests, and the tokens those chunks carried beyond one each."""
    chunks = sum(max(0, len(ev) - 1) for ev in events_per_request)
    tokens = sum(k for ev in events_per_request for _, k in ev[1:])
    return {"decode_chunks": chunks, "decode_tokens": tokens,
            "tokens_per_chunk": tokens / chunks if chunks else None,
            "chunk_surplus_tokens": tokens - chunks}


def speculation_view(outcomes, sm: dict, metrics: dict, serving: dict, notes: list[str]) -> None:
    """A point's speculation metrics into its record: the client's tokens per chunk always
    (1.0 without speculation: the cross-check's baseline), the server's acceptance when its
    /metrics counts drafts."""
    from llmbench.measure.stats import summarize

    chunks = chunk_view([o.timeline.events for o in outcomes if o.ok])
    if chunks["tokens_per_chunk"] is not None:
        metrics["tokens_per_chunk"] = summarize([chunks["tokens_per_chunk"]], "tokens", keep_samples=False)
    counters = (sm or {}).get("counters") or {}
    if "spec_draft_tokens" not in counters:
        return
    acc = acceptance(counters)
    serving["speculation"] = {**{k: counters.get(k) for k in
                                 ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")},
                              **acc, **chunks}
    if acc["acceptance_rate"] is not None:
        metrics["spec_acceptance_rate"] = summarize([acc["acceptance_rate"]], "fraction", keep_samples=False)
        metrics["spec_accepted_len"] = summarize([acc["accepted_len"]], "tokens", keep_samples=False)
    accepted = counters.get("spec_accepted_tokens") or 0.0
    # a request's last step may accept proposals past max_tokens that are never sent: up to a
    # draft's length short per request; more surplus than accepted means merged chunks
    per_draft = -(-(counters.get("spec_draft_tokens") or 0.0) // (counters.get("spec_drafts") or 1.0))
    surplus = chunks["chunk_surplus_tokens"]
    if surplus > accepted or surplus < accepted - len(outcomes) * per_draft:
        notes.append(f"speculation: the server accepted {accepted:g} draft tokens, the client's "
                     f"chunks carried {chunks['chunk_surplus_tokens']} tokens beyond one each "
                     "(merged reads, or a server that streams several steps per chunk)")


# -- the greedy-equivalence check --------------------------------------------------------------
def greedy_tokens(url: str, model: str, prompt: str, max_tokens: int, *, api_key: str | None = None,
                  tokenize: Callable[[str], list[int]] | None = None, timeout_s: float = 300.0) -> list[int]:
    """The server's greedy answer to `prompt` as token ids: its `token_ids` where it returns
    them (vLLM: return_token_ids), else `tokenize` of its text (llama-cpp-python)."""
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0,
            "stream": False, "ignore_eos": True, "min_tokens": max_tokens, "return_token_ids": True}
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        choice = json.loads(r.read())["choices"][0]
    if choice.get("token_ids") is not None:
        return list(choice["token_ids"])
    if tokenize is None:
        raise ValueError("the server returned no token ids and no tokenizer was given")
    return tokenize(choice["text"])


def compare_greedy(reference: Sequence[Sequence[int]], speculative: Sequence[Sequence[int]]) -> dict:
    """Per prompt the first position where the answers differ (None: identical); the matched
    fraction is the tokens before each first divergence over the reference's tokens."""
    first: list[int | None] = []
    matched = total = 0
    for ref, got in zip(reference, speculative, strict=True):
        n = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
        same = n == len(ref) == len(got)
        first.append(None if same else n)
        matched += n
        total += len(ref)
    return {"prompts": len(first), "identical": sum(f is None for f in first),
            "match_fraction": matched / total if total else None, "first_divergence": first}


def top2_margin(url: str, model: str, prompt: str, position: int, *, api_key: str | None = None,
                timeout_s: float = 300.0) -> float | None:
    """The reference's log-probability gap between its two likeliest tokens at `position` of
    its greedy answer (None where the server gives no top-2 log-probabilities): a gap near
    zero is a near tie, which another computation order (batched verification) may flip."""
    body = {"model": model, "prompt": prompt, "max_tokens": position + 1, "temperature": 0.0,
            "stream": False, "ignore_eos": True, "logprobs": 2}
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    req = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            top = json.loads(r.read())["choices"][0]["logprobs"]["top_logprobs"][position]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    best = sorted(top.values(), reverse=True)
    return best[0] - best[1] if len(best) >= 2 else None


def check_greedy(reference_url: str, speculative_url: str, model: str, prompts: Sequence[tuple[str, int]],
                 *, api_key: str | None = None, tokenize: Callable[[str], list[int]] | None = None) -> dict:
    """Send each (prompt, output_len) greedily to both servers and compare the tokens; where
    they differ, the reference's top-2 margin at the first divergence says whether it was a
    near tie."""
    ref = [greedy_tokens(reference_url, model, p, n, api_key=api_key, tokenize=tokenize) for p, n in prompts]
    got = [greedy_tokens(speculative_url, model, p, n, api_key=api_key, tokenize=tokenize) for p, n in prompts]
    out = compare_greedy(ref, got)
    # the reference's margin; where it gives no log-probabilities (llama-cpp-python computes
    # them only with logits_all, which its speculating server has on), the speculating
    # server's own: both read the same tokens up to the divergence, and a near tie is one on
    # either side
    margins, source = [], []
    for d, (p, _) in zip(out["first_divergence"], prompts):
        m = None if d is None else top2_margin(reference_url, model, p, d, api_key=api_key)
        src = "reference" if m is not None else None
        if d is not None and m is None:
            m = top2_margin(speculative_url, model, p, d, api_key=api_key)
            src = "speculative" if m is not None else None
        margins.append(m)
        source.append(src)
    out["top2_logprob_margin_at_divergence"] = margins
    out["top2_logprob_margin_from"] = source
    return out


def attach_check(rec, check: dict) -> None:
    """The check's result into a point's record (every level of the checked server)."""
    from llmbench.measure.stats import summarize

    if rec.serving is None or check.get("match_fraction") is None:
        return
    rec.serving["speculation_check"] = check
    rec.metrics["spec_greedy_match_fraction"] = summarize([check["match_fraction"]], "fraction",
                                                          keep_samples=False)
    if check["identical"] < check["prompts"]:
        margins = [m for m in check.get("top2_logprob_margin_at_divergence", []) if m is not None]
        rec.notes.append(f"speculation changed the greedy answer of {check['prompts'] - check['identical']} "
                         f"of {check['prompts']} prompts (first divergences {check['first_divergence']}"
                         + (f"; the top-2 log-prob margin there {', '.join(f'{m:.2g}' for m in margins)} nats"
                            if margins else "") + ")")
