"""Token parity: the prompt and output tokens the server counted beside what llmbench asked for
(issue 37). A benchmark whose prompts are not the length it says measures another workload
(llmbench's 512-token prompts read 554 on the H200 server: the synthetic tokenizer's special
tokens, kinds/serving/tokenizer.py). The server's counts come from two places: the `usage`
its stream ended with (per request, summed over the successful ones) and its /metrics
counters (`prompt_tokens`, `generation_tokens`: deltas over the point, where scraped). Each
is divided by what llmbench asked for over the same requests: the prompt lengths it built
(RequestSpec.prompt_len, special tokens such as BOS included, as the server counts them) and
the output lengths it forced. A ratio more than PARITY_TOLERANCE from 1 is flagged."""

from __future__ import annotations

from typing import Any

from llmbench.loadgen.client import Outcome

PARITY_TOLERANCE = 0.01   # 1%: a few tokens of a prompt, not a template or a tokenizer's worth


LABELS = {"prompt_tokens_usage_ratio": "prompt tokens (usage)",
          "output_tokens_usage_ratio": "output tokens (usage)",
          "prompt_tokens_metrics_ratio": "prompt tokens (/metrics)",
          "output_tokens_metrics_ratio": "output tokens (/metrics)"}


def usage_parity(outcomes: list[Outcome], metrics: dict,
                 output_forced: bool = True) -> tuple[dict[str, Any], list[str]]:
    """(serving["token_parity"], notes) from the usage the requests ended with; its ratios go
    into `metrics` (prompt_tokens_usage_ratio, output_tokens_usage_ratio). An output length
    that was not forced (--no-force-output, or a shape whose answer ends itself: JSON, a tool
    call) is a cap, not an ask: no output parity then."""
    ok = [o for o in outcomes if o.ok]
    # the usage sums cover only the requests that sent one: compared with those requests
    used = [o for o in ok if o.usage_prompt_tokens is not None]
    parity: dict[str, Any] = {
        "prompt_tokens_asked": sum(o.prompt_len_sent for o in ok),
        "output_tokens_asked": sum(o.expected_output_len for o in ok) if output_forced else None,
        "requests": len(ok), "usage_requests": len(used),
        "prompt_tokens_usage": sum(o.usage_prompt_tokens for o in used) if used else None,
        "output_tokens_usage": sum(o.usage_completion_tokens or 0 for o in used) if used else None,
        "tolerance": PARITY_TOLERANCE}
    parity["prompt_tokens_usage_ratio"] = _ratio(parity["prompt_tokens_usage"],
                                                 sum(o.prompt_len_sent for o in used))
    parity["output_tokens_usage_ratio"] = _ratio(parity["output_tokens_usage"],
                                                 sum(o.expected_output_len for o in used)
                                                 if output_forced else None)
    return parity, _judge(parity, ("prompt_tokens_usage_ratio", "output_tokens_usage_ratio"), metrics)


def scraped_parity(parity: dict[str, Any], counters: dict[str, float], metrics: dict) -> list[str]:
    """The /metrics counters' deltas over the point beside what was asked (`parity` from
    usage_parity, completed in place); notes. Ratios: prompt_tokens_metrics_ratio,
    output_tokens_metrics_ratio."""
    parity["prompt_tokens_metrics"] = counters.get("prompt_tokens")
    parity["output_tokens_metrics"] = counters.get("generation_tokens")
    parity["prompt_tokens_metrics_ratio"] = _ratio(parity["prompt_tokens_metrics"],
                                                   parity["prompt_tokens_asked"])
    parity["output_tokens_metrics_ratio"] = _ratio(parity["output_tokens_metrics"],
                                                   parity["output_tokens_asked"])
    return _judge(parity, ("prompt_tokens_metrics_ratio", "output_tokens_metrics_ratio"), metrics)


def _judge(parity: dict[str, Any], names: tuple[str, ...], metrics: dict) -> list[str]:
    """Each ratio of `names` as a metric; the parity flagged, with a note, past the tolerance."""
    from llmbench.measure.stats import summarize

    notes = []
    for name in names:
        r = parity[name]
        if r is None:
            continue
        metrics[name] = summarize([r], "ratio", keep_samples=False)
        if _off(r):
            notes.append(f"token parity: the server counted {LABELS[name]} {r:.4f}x what "
                         f"llmbench asked for (more than {PARITY_TOLERANCE:.0%} off; "
                         "serving.token_parity)")
    parity["flagged"] = any(r is not None and _off(r) for k, r in parity.items() if k in LABELS)
    return notes


def _off(r: float) -> bool:
    """More than the tolerance from parity (exactly 1% off, 101 of 100, is not: rounding)."""
    return round(abs(r - 1), 12) > PARITY_TOLERANCE


def _ratio(counted: float | None, asked: int | None) -> float | None:
    return None if counted is None or not asked else counted / asked
