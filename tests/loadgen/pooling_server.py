"""A pooling server of known behaviour, for tests only: /v1/embeddings, /v1/rerank and /score
answer after `delay_s` with one JSON object; every text counts `tokens_per_text(text)` tokens
in `usage.prompt_tokens`; the `nan_every`-th request (1-based) carries a NaN."""

from __future__ import annotations

import asyncio
import socket
import threading

from aiohttp import web


class PoolingServer:
    def __init__(self, tokens_per_text, delay_s: float = 0.0, dimension: int = 8,
                 nan_every: int = 0):
        self.tokens_per_text, self.delay_s, self.dimension = tokens_per_text, delay_s, dimension
        self.nan_every = nan_every
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.reported_tokens: list[int] = []

    def __enter__(self) -> PoolingServer:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10), "pooling server did not start"
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        for path in ("/v1/embeddings", "/v1/rerank", "/score"):
            app.router.add_post(path, self._handle)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        self._loop.run_until_complete(self._runner.setup())
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
        ready.set()
        self._loop.run_forever()

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
