"""A pooling server of known behaviour, for tests only: /v1/embeddings, /v1/rerank and /score
answer after `delay_s` with one JSON object; every text counts `tokens_per_text(text)` tokens
in `usage.prompt_tokens`; the `nan_every`-th request (1-based) carries a NaN."""

from __future__ import annotations

import asyncio

from aiohttp import web
from threaded_app import ThreadedApp


class PoolingServer(ThreadedApp):
    def __init__(self, tokens_per_text, delay_s: float = 0.0, dimension: int = 8,
                 nan_every: int = 0):
        self.tokens_per_text, self.delay_s, self.dimension = tokens_per_text, delay_s, dimension
        self.nan_every = nan_every
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.reported_tokens: list[int] = []

    def routes(self, app: web.Application) -> None:   # lifecycle: threaded_app.py
        for path in ("/v1/embeddings", "/v1/rerank", "/score"):
            app.router.add_post(path, self._handle)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "pool-model"}]})

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        self.paths.append(request.path)
        nan = self.nan_every and len(self.bodies) % self.nan_every == 0
        await asyncio.sleep(self.delay_s)
        if request.path == "/v1/embeddings":
            texts = body["input"]
            vec = lambda i: [float("nan") if nan and i == 0 else 0.5] * self.dimension  # noqa: E731
            out = {"data": [{"index": i, "embedding": vec(i)} for i in range(len(texts))]}
        else:
            query, docs = (body["query"], body["documents"]) if "query" in body else \
                (body["text_1"], body["text_2"])
            texts = [query, *docs]
            score = lambda i: float("nan") if nan and i == 0 else 0.25  # noqa: E731
            out = {"results": [{"index": i, "relevance_score": score(i)} for i in range(len(docs))]} \
                if "query" in body else {"data": [{"index": i, "score": score(i)} for i in range(len(docs))]}
        n = sum(self.tokens_per_text(t) for t in texts)
        self.reported_tokens.append(n)
        return web.json_response({**out, "usage": {"prompt_tokens": n, "total_tokens": n}})
