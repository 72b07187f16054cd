"""Hugging Face text-generation-inference: llmbench reads the /metrics of a TGI server the user
started (`llmbench serve URL`); it neither launches nor runs it."""

from __future__ import annotations

from llmbench.backends.engine import Engine, PrometheusNames


class TgiEngine(Engine):
    name = "tgi"
    package = "text_generation_server"
    distribution = "text-generation-server"
    extra = "tgi"
    prometheus = PrometheusNames(
        prefix="tgi_",
        counters={"prompt_tokens": ("tgi_request_input_length_sum",),
                  "generation_tokens": ("tgi_request_generated_tokens_sum",),
                  "requests_finished": ("tgi_request_success", "tgi_request_success_total")},
        gauges={"requests_running": ("tgi_batch_current_size",),
                "requests_waiting": ("tgi_queue_size",)},
        histograms={"e2e_s": ("tgi_request_duration",),
                    "queue_s": ("tgi_request_queue_duration",)})
