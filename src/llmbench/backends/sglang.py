"""SGLang: llmbench reads the /metrics of an SGLang server the user started (`llmbench serve
URL`); launching it and running it in process come with the SGLang backend (issue 39)."""

from __future__ import annotations

from llmbench.backends.engine import Engine, PrometheusNames


class SglangEngine(Engine):
    name = "sglang"
    package = "sglang"
    distribution = "sglang"
    extra = "sglang"
    prometheus = PrometheusNames(
        prefix="sglang:",
        counters={"prompt_tokens": ("sglang:prompt_tokens_total",),
                  "generation_tokens": ("sglang:generation_tokens_total",),
                  "preemptions": ("sglang:num_retracted_reqs_total",),
                  # its cached tokens against its prompt tokens
                  "prefix_cache_queries": ("sglang:prompt_tokens_total",),
                  "prefix_cache_hits": ("sglang:cached_tokens_total",),
                  "requests_finished": ("sglang:num_requests_total",)},
        gauges={"requests_running": ("sglang:num_running_reqs",),
                "requests_waiting": ("sglang:num_queue_reqs",),
                "kv_cache_usage": ("sglang:token_usage",)},
        histograms={"ttft_s": ("sglang:time_to_first_token_seconds",),
                    "itl_s": ("sglang:inter_token_latency_seconds",
                              "sglang:time_per_output_token_seconds"),
                    "e2e_s": ("sglang:e2e_request_latency_seconds",)})
