"""A multi-adapter server of known timing, for tests only: a streamed completion to the base
model (BASE) waits a TTFT drawn from U(ttft_lo, ttft_hi), then sends its tokens `itl` apart
(itl drawn per request from U(itl_lo, itl_hi)); a request naming any other model (an adapter)
draws the same way and takes exactly `factor` times as long: the adapters' true cost ratio is
`factor` for TTFT and TPOT, 1/factor for the output rate. Token times are absolute deadlines
from the request's start, so the sleeps' overshoots do not add up. With `metrics`, /metrics
shows vLLM's LoRA state gauge: one series per state seen, valued by when it was set."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
from aiohttp import web
from threaded_app import ThreadedApp

BASE = "base-model"


class LoraServer(ThreadedApp):
    def __init__(self, factor: float, ttft=(0.10, 0.30), itl=(0.010, 0.030), seed: int = 0,
                 metrics: bool = False, max_loras: int = 2):
        self.factor, self.ttft, self.itl, self.metrics = factor, ttft, itl, metrics
        self.rng = np.random.default_rng(seed)
        self.models: list[str] = []
        self.max_loras = max_loras
        self.running: dict[str, int] = {}
        self.states: dict[tuple[str, str], float] = {}   # (running, waiting) -> time set

    def routes(self, app: web.Application) -> None:   # lifecycle: threaded_app.py
        app.router.add_post("/v1/completions", self._complete)
        app.router.add_get("/v1/models", self._models)
        if self.metrics:
            app.router.add_get("/metrics", self._metrics)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": BASE}]})

    def _set_state(self) -> None:
        running = ",".join(m for m, n in self.running.items() if n and m != BASE)
        self.states[running, ""] = time.time()

    async def _metrics(self, request: web.Request) -> web.Response:
        lines = ["# TYPE vllm:lora_requests_info gauge",
                 "# TYPE vllm:generation_tokens_total counter",
                 'vllm:generation_tokens_total{model_name="base-model"} 0.0']
        lines += [f'vllm:lora_requests_info{{max_lora="{self.max_loras}",running_lora_adapters="{r}",'
                  f'waiting_lora_adapters="{w}"}} {t!r}' for (r, w), t in self.states.items()]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        t0 = time.perf_counter()
        body = await request.json()
        model, n = body["model"], int(body.get("max_tokens", 4))
        self.models.append(model)
        scale = 1.0 if model == BASE else self.factor
        ttft, itl = self.rng.uniform(*self.ttft) * scale, self.rng.uniform(*self.itl) * scale
        self.running[model] = self.running.get(model, 0) + 1
        self._set_state()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for i in range(n):
                await asyncio.sleep(max(0.0, t0 + ttft + i * itl - time.perf_counter()))
                chunk = {"id": "x", "choices": [{"index": 0, "text": "a"}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": i + 1}}
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
        finally:
            self.running[model] -= 1
            self._set_state()
        await resp.write_eof()
        return resp
