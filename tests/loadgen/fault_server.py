"""A fault-injecting OpenAI-style streaming server, for tests only (never stands in for an engine
in a benchmark). Each request takes the next mode of `plan` (cycled):

ok        one SSE event per token, usage at the end (no per-chunk usage)
usage     one event per token with cumulative usage in every chunk (vLLM continuous_usage_stats)
multi     events carrying `k` tokens each, with cumulative usage (speculative decoding style)
burst     one token per event with cumulative usage, `k` events per write (a client that read late)
merged    every event written in one write (one TCP read on the client)
split     every event cut into pieces at awkward places (inside CRLF and a UTF-8 character)
crlf      CRLF line ends, comments and a multi-line data field
short     stops after half the asked tokens (an early EOS despite ignore_eos)
reasoning chat: the first half of the tokens as `reasoning_content`, then the answer as `content`
429 / 500 an HTTP error status with a JSON body
malformed an event whose data is not JSON
drop      a few events, then the connection is reset mid-stream
stall     one event, then nothing (the client's timeout must end it)
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

from aiohttp import web
from threaded_app import ThreadedApp

TOKEN = "é"   # two UTF-8 bytes: splitting a read inside it must not matter


class FaultServer(ThreadedApp):
    def __init__(self, plan: list[str] | None = None, ttft_s: float = 0.0, itl_s: float = 0.0,
                 k: int = 3, metrics: bool = False, serial: bool = False, slots: int | None = None):
        self.plan = plan or ["ok"]
        # serial=True: one answer at a time, the rest queue (a server with a capacity limit);
        # slots=c: c answers at a time, the rest wait first come first served (an M/D/c queue
        # under Poisson arrivals: each answer holds its slot ttft_s + (n - 1) * itl_s)
        self.serial = serial or slots is not None
        self.slots = slots or 1
        self.holds_s: list[float] = []   # slots: how long each answer held its slot (server clock)
        self.waiting = 0
        self._lock: asyncio.Semaphore | None = None
        # metrics=True: a vLLM-style Prometheus /metrics counting what this server really sent
        self.metrics = metrics
        self.gen_tokens = 0
        self.running = 0
        self.finished = 0
        self.metrics_scrapes = 0
        self.ttft_s, self.itl_s, self.k = ttft_s, itl_s, k
        self.count = 0
        self.seen_headers: list[dict[str, str]] = []
        self.bodies: list[dict] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle (threaded_app.py) ------------------------------------------------------------
    def on_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._stop = asyncio.Event()

    def before_stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)   # a stalled stream ends

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/completions", self._handle)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_get("/v1/models", self._models)
        if self.metrics:
            app.router.add_get("/metrics", self._metrics)

    # -- handlers --------------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        self.seen_headers.append(dict(request.headers))
        return web.json_response({"object": "list", "data": [{"id": "fault-model"}]})

    async def _metrics(self, request: web.Request) -> web.Response:
        self.metrics_scrapes += 1
        text = (
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
            "# TYPE vllm:generation_tokens_total counter\n"
            f'vllm:generation_tokens_total{{engine="0",model_name="fault-model"}} {self.gen_tokens}.0\n'
            "# TYPE vllm:prompt_tokens_total counter\n"
            f'vllm:prompt_tokens_total{{engine="0",model_name="fault-model"}} {5 * self.count}.0\n'
            "# TYPE vllm:request_success_total counter\n"
            f'vllm:request_success_total{{finished_reason="length",model_name="fault-model"}} {self.finished}.0\n'
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="fault-model"}} {self.running}.0\n'
            "# TYPE vllm:num_requests_waiting gauge\n"
            f'vllm:num_requests_waiting{{model_name="fault-model"}} {self.waiting}.0\n')
        return web.Response(text=text, content_type="text/plain")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.running += 1
        try:
            if self.serial:
                if self._lock is None:
                    self._lock = asyncio.Semaphore(self.slots)   # FIFO wake-ups
                self.waiting += 1
                try:
                    await self._lock.acquire()
                finally:
                    self.waiting -= 1
                t_held = time.perf_counter()
                try:
                    return await self._respond(request)
                finally:
                    self._lock.release()
                    self.holds_s.append(time.perf_counter() - t_held)
            return await self._respond(request)
        finally:
            self.running -= 1
            self.finished += 1

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        self.seen_headers.append(dict(request.headers))
        body = await request.json()
        self.bodies.append(body)
        mode = self.plan[self.count % len(self.plan)]
        self.count += 1
        n = int(body.get("max_tokens", 8))
        chat = request.path.endswith("chat/completions")
        if mode in ("429", "500"):
            return web.json_response({"error": {"message": f"injected {mode}"}}, status=int(mode))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if self.ttft_s:
            await asyncio.sleep(self.ttft_s)

        def event(i: int, k: int = 1, usage: int | None = None) -> bytes:
            self.gen_tokens += k
            text = TOKEN * k
            field = "reasoning_content" if mode == "reasoning" and i < n // 2 else "content"
            choice = {"index": 0, "delta": {field: text}} if chat else {"index": 0, "text": text}
            obj = {"id": "x", "choices": [choice]}
            if usage is not None:
                obj["usage"] = {"prompt_tokens": 5, "completion_tokens": usage}
            return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"

        final = b"data: " + json.dumps({"id": "x", "choices": [], "usage": {
            "prompt_tokens": 5, "completion_tokens": n if mode != "short" else n // 2}}).encode() \
            + b"\n\ndata: [DONE]\n\n"
        if mode == "merged":
            await resp.write(b"".join(event(i) for i in range(n)) + final)
        elif mode == "split":
            for i in range(n):
                ev = event(i).replace(b"\n\n", b"\r\n\r\n")
                cut1 = ev.index(b"\xc3") + 1          # inside the UTF-8 character
                cut2 = len(ev) - 3                    # between CR and LF
                for part in (ev[:cut1], ev[cut1:cut2], ev[cut2:]):
                    await resp.write(part)
                    await asyncio.sleep(0.001)
            await resp.write(final)
        elif mode == "crlf":
            await resp.write(b": ping\r\n\r\n")
            for i in range(n):
                obj = json.dumps({"id": "x", "choices": [{"index": 0, "text": TOKEN}]}, indent=1)
                lines = b"".join(b"data: " + ln.encode() + b"\r\n" for ln in obj.splitlines())
                await resp.write(b"event: message\r\n" + lines + b"\r\n")
                if self.itl_s:
                    await asyncio.sleep(self.itl_s)
            await resp.write(final.replace(b"\n", b"\r\n"))
        elif mode == "burst":     # one token per event, but `k` events in each write
            for i in range(0, n, self.k):
                await resp.write(b"".join(event(j, usage=j + 1) for j in range(i, min(n, i + self.k))))
                if self.itl_s:
                    await asyncio.sleep(self.itl_s * self.k)
            await resp.write(final)
        elif mode == "multi":
            done = 0
            while done < n:
                k = min(self.k, n - done)
                done += k
                await resp.write(event(done, k, usage=done))
                if self.itl_s:
                    await asyncio.sleep(self.itl_s * k)
            await resp.write(final)
        elif mode == "malformed":
            await resp.write(event(0))
            await resp.write(b"data: {not json\n\n")
            await resp.write(final)
        elif mode == "drop":
            for i in range(2):
                await resp.write(event(i))
            await asyncio.sleep(0.01)
            request.transport.abort()
            return resp
        elif mode == "stall":
            await resp.write(event(0))
            await self._stop.wait()
            return resp
        else:  # ok, usage, short, reasoning
            m = n // 2 if mode == "short" else n
            for i in range(m):
                if i and self.itl_s:
                    await asyncio.sleep(self.itl_s)
                await resp.write(event(i, usage=i + 1 if mode == "usage" else None))
            await resp.write(final)
        await resp.write_eof()
        return resp


def wait_port_free(port: int, timeout_s: float = 5.0) -> bool:
    t = time.time()
    while time.time() - t < timeout_s:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return True
        time.sleep(0.05)
    return False
