"""Every latency/throughput metric is computed here, once, from timelines (DESIGN.md).

Offline (one batch of B concurrent requests per repeat, the paper's setting):
- batch_latency_s          whole batch, start to its last token as the backend stamped it (one
                           value per repeat); what generate() does after that token (llama.cpp's
                           perf read-out, freeing the batch) is not in it
- generate_return_s        batch start -> generate() returned (>= batch_latency_s)
- ttft_s                   batch start -> request's first token (per request)
- tpot_s                   (t_last - t_first) / (output_tokens - 1) (per request)
- itl_s                    every gap between tokens, pooled (see measure/timeline.py)
- e2e_s                    batch start -> request's last token (per request)
- output_throughput_tok_s  generated tokens / batch latency (per repeat)
- total_throughput_tok_s   (prompt + generated tokens) / batch latency (per repeat)
- request_throughput_req_s requests / batch latency (per repeat)
- avg_power_w, energy_j, tokens_per_joule   per repeat, only where a meter read; energy_j is
                           per batch: the window's energy / the batches run inside it
- energy_window_s, energy_batches_per_window   the energy window behind each repeat
"""

from __future__ import annotations

from llmbench.measure.stats import summarize
from llmbench.measure.timeline import BatchTiming, RequestTimeline
from llmbench.store.record import MetricStats


def per_request(timelines: list[RequestTimeline]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "itl_s": [], "e2e_s": []}
    for r in timelines:
        if r.error or not r.events:
            continue
        out["ttft_s"].append(r.ttft_s())
        out["e2e_s"].append(r.e2e_s())
        if (t := r.tpot_s()) is not None:
            out["tpot_s"].append(t)
        out["itl_s"].extend(r.itl_s())
    return out


def last_token_time(timelines: list[RequestTimeline], default: float) -> float:
    """An offline batch's end: its last token's arrival, as the backend stamped it (`default`,
    e.g. when generate() returned, if no request produced a token)."""
    return max((t for r in timelines if (t := r.t_last) is not None), default=default)


def offline_metrics(batches: list[BatchTiming], input_len: int) -> dict[str, MetricStats]:
    pooled: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "itl_s": [], "e2e_s": []}
    per_batch: dict[str, list[float]] = {k: [] for k in (
        "batch_latency_s", "generate_return_s", "output_throughput_tok_s", "total_throughput_tok_s",
        "request_throughput_req_s", "avg_power_w", "energy_j", "tokens_per_joule",
        "energy_window_s", "energy_batches_per_window")}
    for b in batches:
        for k, v in per_request(b.requests).items():
            pooled[k].extend(v)
        lat = b.latency_s
        out_tok = sum(r.output_tokens for r in b.requests)
        prompt_tok = sum(r.prompt_tokens if r.prompt_tokens is not None else input_len
                         for r in b.requests)
        per_batch["batch_latency_s"].append(lat)
        per_batch["output_throughput_tok_s"].append(out_tok / lat)
        per_batch["total_throughput_tok_s"].append((prompt_tok + out_tok) / lat)
        per_batch["request_throughput_req_s"].append(len(b.requests) / lat)
        if b.t_return is not None:
            per_batch["generate_return_s"].append(b.t_return - b.t_start)
        if b.energy_j is not None:
            per_batch["energy_j"].append(b.energy_j)
            per_batch["avg_power_w"].append(b.avg_power_w if b.avg_power_w is not None
                                            else b.energy_j / lat)
            if b.energy_j > 0:
                per_batch["tokens_per_joule"].append(out_tok / b.energy_j)
            if b.energy_window_s is not None:
                per_batch["energy_window_s"].append(b.energy_window_s)
                per_batch["energy_batches_per_window"].append(b.energy_batches)
    units = {"ttft_s": "s", "tpot_s": "s", "itl_s": "s", "e2e_s": "s", "batch_latency_s": "s",
             "generate_return_s": "s",
             "output_throughput_tok_s": "tok/s", "total_throughput_tok_s": "tok/s",
             "request_throughput_req_s": "req/s", "avg_power_w": "W", "energy_j": "J",
             "tokens_per_joule": "tok/J", "energy_window_s": "s",
             "energy_batches_per_window": "batches"}
    result = {}
    for k, v in {**pooled, **per_batch}.items():
        if v:
            result[k] = summarize(v, units[k])
    return result


SERVING_UNITS = {"ttft_s": "s", "tpot_s": "s", "itl_s": "s", "e2e_s": "s", "send_lag_s": "s",
                 "output_throughput_tok_s": "tok/s", "total_throughput_tok_s": "tok/s",
                 "request_throughput_req_s": "req/s", "goodput_req_s": "req/s",
                 "duration_s": "s", "requests_completed": "req", "requests_failed": "req",
                 "error_rate": "fraction", "avg_power_w": "W", "energy_j": "J",
                 "tokens_per_joule": "tok/J", "inflight_mean": "requests"}


def inflight_mean(timelines: list[RequestTimeline], window: tuple[float, float]) -> float:
    """Time-weighted mean number of requests in flight over [t0, t1] (the load the server
    really carried; Little's law: request rate x mean latency). A request is in flight from
    its actual send (its scheduled send when unknown) to its last token; one that produced no
    token has no known end and is left out."""
    t0, t1 = window
    if t1 <= t0:
        return 0.0
    busy = 0.0
    for r in timelines:
        if not r.events:
            continue
        start = r.t_send if r.t_send is not None else r.t_ref
        busy += max(0.0, min(r.t_last, t1) - max(start, t0))
    return busy / (t1 - t0)


def meets_slo(r: RequestTimeline, slo: dict[str, float]) -> bool:
    got = {"ttft_s": r.ttft_s(), "tpot_s": r.tpot_s(), "e2e_s": r.e2e_s()}
    # A one-token answer has no TPOT: that SLO cannot be missed.
    return all(got[k] is None and k == "tpot_s" or got[k] is not None and got[k] <= v
               for k, v in slo.items())


def serving_metrics(timelines: list[RequestTimeline], window: tuple[float, float], *,
                    slo: dict[str, float] | None = None, energy_j: float | None = None,
                    keep_samples: bool = True) -> dict[str, MetricStats]:
    """Serving load metrics over a time window [t0, t1] (perf_counter seconds).

    Serving (an open or closed load, not a batch):
    - ttft_s / tpot_s / itl_s / e2e_s  per request, from the *scheduled* send time; only
      requests scheduled at or after t0 that finished by t1, so warm-up and cool-down can be cut
    - send_lag_s               actual - scheduled send (client queueing under a cap, or lag)
    - output_throughput_tok_s  output tokens that arrived inside the window / window length
    - total_throughput_tok_s   + prompt tokens of requests whose first token came in the window
    - request_throughput_req_s successful requests finishing inside the window / window length
    - goodput_req_s            of those, the ones meeting every SLO / window length
    - error_rate               failed / all requests scheduled in the window
    - inflight_mean            time-weighted mean of requests in flight (`inflight_mean()`);
      the roofline bounds serving throughput at this concurrency
    - energy_j, avg_power_w, tokens_per_joule   when a meter read over this window
    """
    t0, t1 = window
    span = max(t1 - t0, 1e-9)
    inside = [r for r in timelines if r.t_ref >= t0 and (r.t_last if r.t_last is not None else r.t_ref) <= t1]
    ok = [r for r in inside if not r.error and r.events]
    samples = per_request(ok)
    samples["send_lag_s"] = [x for r in inside if (x := r.send_lag_s()) is not None]
    out_tok = prompt_tok = done = good = 0
    for r in timelines:
        if r.error or not r.events:
            continue
        out_tok += sum(k for t, k in r.events if t0 <= t <= t1)
        if t0 <= r.t_first <= t1:
            prompt_tok += r.prompt_tokens or 0
        if t0 <= r.t_last <= t1:
            done += 1
            good += bool(slo) and meets_slo(r, slo)
    scheduled = [r for r in timelines if t0 <= r.t_ref <= t1]
    failed = sum(1 for r in scheduled if r.error or not r.events)
    single = {"output_throughput_tok_s": out_tok / span,
              "total_throughput_tok_s": (prompt_tok + out_tok) / span,
              "request_throughput_req_s": done / span, "duration_s": span,
              "requests_completed": done, "requests_failed": failed,
              "error_rate": failed / len(scheduled) if scheduled else 0.0,
              "inflight_mean": inflight_mean(timelines, window)}
    if slo:
        single["goodput_req_s"] = good / span
    if energy_j is not None:
        single["energy_j"] = energy_j
        single["avg_power_w"] = energy_j / span
        if energy_j > 0:
            single["tokens_per_joule"] = out_tok / energy_j
    result = {k: summarize(v, SERVING_UNITS[k], keep_samples=keep_samples)
              for k, v in samples.items() if v}
    result.update({k: summarize([v], SERVING_UNITS[k], keep_samples=False) for k, v in single.items()})
    return result
