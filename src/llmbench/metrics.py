"""Every latency/throughput metric is computed here, once, from timelines (DESIGN.md).

Offline (one batch of B concurrent requests per repeat, the paper's setting):
- batch_latency_s          whole batch, start to last token (one value per repeat)
- ttft_s                   batch start -> request's first token (per request)
- tpot_s                   (t_last - t_first) / (output_tokens - 1) (per request)
- itl_s                    every gap between tokens, pooled (see measure/timeline.py)
- e2e_s                    batch start -> request's last token (per request)
- output_throughput_tok_s  generated tokens / batch latency (per repeat)
- total_throughput_tok_s   (prompt + generated tokens) / batch latency (per repeat)
- request_throughput_req_s requests / batch latency (per repeat)
- avg_power_w, energy_j, tokens_per_joule   per repeat, only where a meter read
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


def offline_metrics(batches: list[BatchTiming], input_len: int) -> dict[str, MetricStats]:
    pooled: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "itl_s": [], "e2e_s": []}
    per_batch: dict[str, list[float]] = {k: [] for k in (
        "batch_latency_s", "output_throughput_tok_s", "total_throughput_tok_s",
        "request_throughput_req_s", "avg_power_w", "energy_j", "tokens_per_joule")}
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
        if b.energy_j is not None:
            per_batch["energy_j"].append(b.energy_j)
            per_batch["avg_power_w"].append(b.energy_j / lat)
            if b.energy_j > 0:
                per_batch["tokens_per_joule"].append(out_tok / b.energy_j)
    units = {"ttft_s": "s", "tpot_s": "s", "itl_s": "s", "e2e_s": "s", "batch_latency_s": "s",
             "output_throughput_tok_s": "tok/s", "total_throughput_tok_s": "tok/s",
             "request_throughput_req_s": "req/s", "avg_power_w": "W", "energy_j": "J",
             "tokens_per_joule": "tok/J"}
    result = {}
    for k, v in {**pooled, **per_batch}.items():
        if v:
            result[k] = summarize(v, units[k])
    return result
