"""One serving point's numbers from its measured requests: the metrics over the steady-state
window (and `all_*` over the whole run), the client's self-check, errors by kind, the
token-count cross-check and the token parity with the server (kinds/serving/parity.py)."""

from __future__ import annotations

from collections import Counter

from llmbench.loadgen.bunching import itl_fidelity
from llmbench.loadgen.client import Outcome
from llmbench.loadgen.run import LoadResult
from llmbench.kinds.serving.config import ServeConfig, parse_window
from llmbench.kinds.serving.parity import scraped_parity, usage_parity
from llmbench.kinds.serving.tokenizer import Tokenizer


def summarize_point(outcomes: list[Outcome], res: LoadResult, cfg: ServeConfig, tok: Tokenizer,
                    energy_j: float | None) -> tuple[dict, dict, list[str]]:
    from llmbench.measure.stats import summarize
    from llmbench.metrics import serving_metrics

    tls = [o.timeline for o in outcomes]
    ends = [t for tl in tls if (t := tl.t_last) is not None] + \
           [s.resp.t_headers or s.t_sched for s in res.sent]
    t_start = min((tl.t_ref for tl in tls), default=res.t_start)
    t_end = max(ends, default=res.t_end)
    run_s = t_end - t_start
    ws = t_start + parse_window(cfg.warmup, run_s, "--warmup")
    we = t_end - parse_window(cfg.cooldown, run_s, "--cooldown")
    notes: list[str] = []
    if we <= ws:
        # With no warm-up or cool-down asked, an empty window only means a run of zero length
        # (e.g. one request that failed at once): nothing to say about warm-up then.
        if (ws, we) != (t_start, t_end):
            notes.append("warm-up + cool-down cover the whole run: steady-state view = whole run")
        ws, we = t_start, t_end
    whole = (ws, we) == (t_start, t_end)
    metrics = serving_metrics(tls, (ws, we), slo=cfg.slo, energy_j=energy_j if whole else None)
    for k, v in serving_metrics(tls, (t_start, t_end), slo=cfg.slo, energy_j=energy_j).items():
        metrics[f"all_{k}"] = v
    if "ttft_s" not in metrics and "all_ttft_s" in metrics:
        notes.append("no request lies wholly inside the steady-state window; see all_* metrics")
    if energy_j is not None and not whole:
        notes.append("energy covers the whole run only (all_energy_j)")

    ok = [o for o in outcomes if o.ok]
    out_tokens = sum(o.timeline.output_tokens for o in ok)
    sc = res.selfcheck
    metrics["client_loop_lag_s"] = summarize(sc.lags_s, "s")
    metrics["client_cpu_util"] = summarize([sc.cpu_util], "fraction", keep_samples=False)
    if out_tokens:
        metrics["client_cpu_s_per_token"] = summarize([sc.cpu_s / out_tokens], "s/tok",
                                                      keep_samples=False)
    notes += sc.warnings()
    fidelity = itl_fidelity(outcomes, sc.lag_p99_s() if sc.lags_s else None)
    if fidelity:   # the same flag on the metric as an imported ITL's (importers/common.py)
        for k in ("itl_s", "all_itl_s"):   # never shown as the server's (loadgen/bunching.py)
            if k in metrics:
                metrics[k].client_limited = fidelity["client_limited"]
    if fidelity and fidelity["client_limited"]:
        notes.append("ITL is client-limited, not the server's: " + "; ".join(fidelity["reasons"]))

    reasoning_metrics(ok, tok, metrics)

    errors = Counter(o.error_kind for o in outcomes if not o.ok)
    examples = {}
    for o in outcomes:
        if not o.ok and o.error_kind not in examples:
            examples[o.error_kind] = (o.detail or "")[:200]
    forced = cfg.force_output and cfg.request_shape().forces_output   # else the length is a cap
    short = [o for o in ok if o.timeline.output_tokens < o.expected_output_len]
    if forced and short:
        notes.append(f"{len(short)} of {len(ok)} request(s) returned fewer tokens than asked "
                     f"(shortest {min(o.timeline.output_tokens for o in short)})")
    # Token counts: the server's usage when it sent one, else the tokenizer's re-count. The
    # cross-check: usage vs the tokenizer where usage came, else the stream's events vs it.
    sources = Counter(o.token_source for o in ok)
    src = "server usage" if sources.get("usage") == len(ok) else \
        ("tokenizer" if sources.get("tokenizer") == len(ok) else f"mixed {dict(sources)}")
    comp_diff = [(o.usage_completion_tokens if o.token_source == "usage" else o.n_events)
                 - tok.count(o.text) for o in ok]
    prompt_diff = [o.usage_prompt_tokens - o.prompt_len_sent for o in ok
                   if o.usage_prompt_tokens is not None]
    disagree = {
        "compared": "server usage vs tokenizer" if src == "server usage" else "stream events vs tokenizer",
        "completion_requests_differing": sum(1 for d in comp_diff if d),
        "completion_mean_diff_tokens": sum(comp_diff) / len(comp_diff) if comp_diff else None,
        "prompt_requests_differing": sum(1 for d in prompt_diff if d),
        "prompt_mean_diff_tokens": sum(prompt_diff) / len(prompt_diff) if prompt_diff else None,
    }
    if disagree["completion_requests_differing"]:
        notes.append(f"output token counts ({disagree['compared']}) differ in "
                     f"{disagree['completion_requests_differing']} request(s), mean "
                     f"{disagree['completion_mean_diff_tokens']:+.2f} tokens")
    if disagree["prompt_requests_differing"]:
        notes.append(f"the server counted prompts differently from the tokenizer in "
                     f"{disagree['prompt_requests_differing']} request(s), mean "
                     f"{disagree['prompt_mean_diff_tokens']:+.2f} tokens (chat template, BOS?)")
    parity, parity_notes = usage_parity(outcomes, metrics, forced)
    notes += parity_notes
    if errors:
        notes.append("errors: " + ", ".join(f"{k}={v}" for k, v in sorted(errors.items())))
    if errors.get("no_tokens") and cfg.concurrency and max(cfg.concurrency) > 1:
        # seen 2026-12-07 (issue 54 item 9): a llama-cpp-python server started by hand cut 39 of
        # 40 streams at -c 2; its default interrupt_requests=True aborts a stream when the next
        # request arrives (llmbench's --launch llamacpp turns it off)
        notes.append(f"{errors['no_tokens']} stream(s) ended without generated text: a server that "
                     "aborts a running stream when the next request arrives does this under "
                     "concurrency (llama-cpp-python's server does unless started with "
                     "--interrupt_requests False)")
    if res.prompts_reused:
        notes.append("the run outlasted the prompt pool: prompts repeated (prefix caches may help)")
    serving = {
        "requests": len(outcomes), "errors_total": sum(errors.values()),
        "errors_by_kind": dict(errors), "error_examples": examples,
        "short_outputs": len(short), "token_count_source": src,
        "output_tokens": out_tokens,      # the client's count over the whole point
        "prompt_tokens": sum(o.usage_prompt_tokens if o.usage_prompt_tokens is not None
                             else o.prompt_len_sent for o in ok),
        "token_split": dict(Counter(o.token_split for o in ok)),
        "tokenizer": tok.source, "token_count_disagreement": disagree, "token_parity": parity,
        "window_s": {"start": 0.0, "steady_start": ws - t_start, "steady_end": we - t_start,
                     "end": run_s},
        "client": {"loop": sc.loop, "cpu_s": sc.cpu_s, "wall_s": sc.wall_s,
                   "cpu_util": sc.cpu_util, "loop_lag_p99_s": sc.lag_p99_s(),
                   "bottleneck": bool(sc.warnings()), "connections_opened": res.connections_opened,
                   "processes": sc.processes, "busiest_cpu_util": sc.busiest_cpu_util},
        "itl_fidelity": fidelity,
    }
    if res.shards is not None:   # Ray client shards: each one's host, load, CPU, lag and clock
        serving["client"]["shards"] = res.shards
        notes += [f"client shard {s['shard']} ({s['host']}): {w}" for s in res.shards
                  for w in s["warnings"]]
    energy_per_token(energy_j, serving["output_tokens"], serving["prompt_tokens"], metrics)
    return metrics, serving, notes


def energy_per_token(energy_j: float | None, out_tokens: int, prompt_tokens: int,
                     metrics: dict) -> None:
    """Joules per output token and per token (prompt + output) under this load, over the whole
    point (the meter's window), where the server's hardware is metered here."""
    from llmbench.measure.stats import summarize

    if energy_j is None or not out_tokens:
        return
    metrics["energy_per_output_token_j"] = summarize([energy_j / out_tokens], "J/tok",
                                                     keep_samples=False)
    metrics["energy_per_token_j"] = summarize([energy_j / (out_tokens + prompt_tokens)], "J/tok",
                                              keep_samples=False)


def server_view(sm: dict, metrics: dict, serving: dict, notes: list[str]) -> None:
    """The server's own counts beside the client's: stored, the prefix-cache hit rate as a
    metric, and a note when the two disagree on the tokens generated."""
    from llmbench.measure.stats import summarize

    serving["server_metrics"] = sm
    if not sm["available"]:
        notes.append(f"no server metrics: {sm['reason']}")
        return
    # The server's own latency histograms beside the client's percentiles (bucket-interpolated:
    # only as fine as the server's bucket edges; see docs/serving.md for why they differ).
    from llmbench.measure.metric_stats import MetricStats

    for name, h in sm.get("histograms", {}).items():
        if h["count"]:
            metrics[f"server_{name}"] = MetricStats(
                unit="s", n=int(h["count"]), mean=h["mean_s"], median=h["p50_s"], p50=h["p50_s"],
                p90=h["p90_s"], p99=h["p99_s"], source="server histogram")
    if sm.get("prefix_cache_hit_rate") is not None:
        metrics["prefix_cache_hit_rate"] = summarize([sm["prefix_cache_hit_rate"]], "fraction",
                                                     keep_samples=False)
    if "token_parity" in serving:
        notes += scraped_parity(serving["token_parity"], sm["counters"], metrics)
    gen = sm["counters"].get("generation_tokens")
    if gen is not None and gen != serving["output_tokens"]:
        notes.append(f"the server counted {gen:g} generated tokens over the point, the client "
                     f"{serving['output_tokens']} (requests cut short, or other clients?)")


# Above this share of a point's prompt tokens answered from the server's prefix cache, prompts
# that share nothing among themselves were cached before the point: by an earlier run.
WARM_PREFIX_HIT_RATE = 0.5


def warm_prefix_cache(serving: dict, notes: list[str], prompts_distinct: bool) -> None:
    """Warn when a point whose prompts share no prefix (no --shared-prefix, no conversations,
    no repeats) still hit the server's prefix cache for most of its prompt tokens: an earlier
    run with the same prompts (same --seed) left them cached, and TTFT reads low (vLLM issue
    52884: up to 86%). Warm-up prompts have their own seed, so they never cause it."""
    sm = serving.get("server_metrics") or {}
    rate = sm.get("prefix_cache_hit_rate")
    warm = prompts_distinct and rate is not None and rate >= WARM_PREFIX_HIT_RATE
    serving["warm_prefix_cache"] = warm
    if warm:
        notes.append(f"warm prefix cache: the server answered {rate:.0%} of this point's prompt "
                     "tokens from its prefix cache, though its prompts share no prefix: an earlier "
                     "run with the same prompts left them cached, so TTFT reads low; use another "
                     "--seed or restart the server")


def by_turn(outcomes: list[Outcome], turn_of: list[int], turns: int, metrics: dict,
            serving: dict) -> None:
    """Conversations: TTFT and prompt length by turn (`ttft_s_turn1`, ...); later turns carry
    the history, so their TTFT shows what a prefix cache saves."""
    from llmbench.measure.stats import summarize

    serving["turns"] = {}
    for k in range(turns):
        mine = [o for o, t in zip(outcomes, turn_of) if t == k and o.ok]
        ttft = [v for o in mine if (v := o.timeline.ttft_s()) is not None]
        if ttft:
            metrics[f"ttft_s_turn{k + 1}"] = summarize(ttft, "s")
        serving["turns"][str(k + 1)] = {
            "requests": sum(1 for t in turn_of if t == k), "ok": len(mine),
            "mean_prompt_tokens": sum(o.prompt_len_sent for o in mine) / len(mine) if mine else None}


def slo_met_fraction(outcomes: list[Outcome], slo: dict[str, float], cancelled: int = 0) -> float | None:
    """Of the point's judged requests (failed ones and the `cancelled` ones -- cancelled by an
    early stop when already late -- count as missing), the fraction that met every SLO; None
    without SLOs."""
    from llmbench.metrics import meets_slo

    total = len(outcomes) + cancelled
    if not slo or not total:
        return None
    return sum(1 for o in outcomes if o.ok and meets_slo(o.timeline, slo)) / total


def reasoning_metrics(ok: list[Outcome], tok: Tokenizer, metrics: dict) -> None:
    """Servers that stream reasoning apart from the answer: time to the first reasoning token
    and to the first answer token (both from the scheduled send, as TTFT), and both token
    counts (reasoning by the tokenizer, answer = output tokens - reasoning), over every
    successful request of the point."""
    from llmbench.measure.stats import summarize

    thinking = [o for o in ok if o.t_first_reasoning is not None]
    if not thinking:
        return
    answered = [o for o in thinking if o.t_first_answer is not None]
    n_reason = [tok.count(o.reasoning_text) for o in thinking]
    metrics["ttft_reasoning_s"] = summarize([o.t_first_reasoning - o.timeline.t_ref for o in thinking],
                                            "s")
    if answered:
        metrics["ttft_answer_s"] = summarize([o.t_first_answer - o.timeline.t_ref for o in answered],
                                             "s")
    metrics["reasoning_tokens"] = summarize(n_reason, "tokens")
    metrics["answer_tokens"] = summarize([max(0, o.timeline.output_tokens - n)
                                          for o, n in zip(thinking, n_reason)], "tokens")
