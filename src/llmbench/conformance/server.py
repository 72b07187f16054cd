"""The known-answer server: an OpenAI-compatible streaming server that follows a scenario's
script (scenarios.py) to the tick, for any client.

One thread per connection with blocking sockets and `time.sleep` to each token's due time
(nanosleep: ~0.1 ms late on an idle core, where an event loop's epoll rounds to whole ms). Due
times are absolute from the request's receipt (its headers and body read), so lateness never
accumulates. Every request is logged with what the server really did (GET /conformance/log):
its prompt count, whether it hit the prefix cache or the warm-up, and when each write left,
so a client's error can be told from the server's own lateness.

Routes: POST /v1/completions, /v1/chat/completions; GET /v1/models, /health, /metrics (vLLM's
counter names: prompt and generation tokens, prefix-cache queries and hits, running and
waiting requests), /conformance/log.

    python -m llmbench.conformance.server --scenario steady [--port 0] [--tokenizer DIR]

prints `listening http://127.0.0.1:PORT` once it serves.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import socketserver
import sys
import threading
import time
from pathlib import Path

from llmbench.conformance.scenarios import SCENARIOS, Scenario

MODEL = "known-answer"
TOKEN = " a"   # one token in byte-level BPE vocabularies (its own pre-token): n of them, n tokens
TOOL = "get_weather"


class Counter:
    """How the served tokenizer counts a prompt: a tokenizer.json's count (add_special_tokens as
    the file says), else words; token ids as sent; plus the scenario's extra (a chat template
    the client cannot see)."""

    def __init__(self, tokenizer: str | None, extra: int):
        self.extra = extra
        self.tok = None
        if tokenizer:
            from tokenizers import Tokenizer   # only where a tokenizer is asked for

            p = Path(tokenizer)
            self.tok = Tokenizer.from_file(str(p / "tokenizer.json" if p.is_dir() else p))

    def __call__(self, text: str | list) -> int:
        if isinstance(text, list):   # a prompt sent as token ids
            return len(text) + self.extra
        n = len(self.tok.encode(text).ids) if self.tok is not None else len(text.split())
        return n + self.extra


class State:
    def __init__(self, sc: Scenario, counter: Counter):
        self.sc, self.count = sc, counter
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(sc.slots) if sc.slots else None
        self.log: list[dict] = []
        self.seen: set[str] = set()
        self.started = 0
        self.running = self.waiting = 0
        self.prompt_tokens = self.generation_tokens = 0
        self.prefix_queries = self.prefix_hits = 0


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def _content(c) -> str:
    """A message's text: a string, or the text parts of a list of parts (OpenAI's
    [{"type": "text", "text": ...}], as vLLM's and guidellm's chat clients send it)."""
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in c)
    return "" if c is None else json.dumps(c)


def prompt_text(body: dict) -> str | list:
    if "messages" in body:   # the served template adds nothing: counts are the texts' own
        return "".join(_content(m.get("content")) for m in body["messages"] if isinstance(m, dict))
    p = body.get("prompt", "")
    if isinstance(p, list) and len(p) == 1:   # a batch of one
        p = p[0]
    return p if isinstance(p, str) or (isinstance(p, list) and all(isinstance(x, int) for x in p)) \
        else json.dumps(p)


def realtime() -> bool:
    """SCHED_FIFO for this thread where permitted (Linux: pid 0 is the calling thread): on a
    busy machine an ordinary thread wakes for its token milliseconds late, and the script's
    timing is the truth. It sleeps between writes, so it takes little from others."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return True
    except (OSError, AttributeError):
        return False


class Handler(socketserver.BaseRequestHandler):
    state: State

    def handle(self) -> None:
        realtime()
        s: socket.socket = self.request
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = s.makefile("rb")
        while True:   # keep-alive: one request after another on this connection
            line = f.readline()
            if not line:
                return
            headers = {}
            while (h := f.readline()) not in (b"\r\n", b"\n", b""):
                k, _, v = h.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers.get("content-length") or 0))
            t_recv = time.perf_counter()
            method, path = (line.decode("latin-1").split(" ") + ["", ""])[:2]
            path = path.split("?")[0]
            if method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
                self.stream(s, json.loads(body or b"{}"), path.endswith("chat/completions"), t_recv)
            elif path == "/v1/models":
                self.plain(s, {"object": "list", "data": [{"id": MODEL, "object": "model",
                                                           "owned_by": "llmbench", "max_model_len": 4096}]})
            elif path in ("/health", "/ping"):
                self.plain(s, {})
            elif path == "/metrics":
                self.plain(s, self.metrics().encode(), "text/plain; version=0.0.4")
            elif path == "/conformance/log":
                with self.state.lock:
                    self.plain(s, {"scenario": self.state.sc.model_dump(), "requests": self.state.log})
            else:
                self.plain(s, {"error": {"message": f"no route {path}"}}, status="404 Not Found")

    def plain(self, s, obj, ctype="application/json", status="200 OK") -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        s.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
                  f"\r\n".encode() + data)

    def metrics(self) -> str:
        st = self.state
        rows = [("vllm:prompt_tokens_total", "counter", st.prompt_tokens),
                ("vllm:generation_tokens_total", "counter", st.generation_tokens),
                ("vllm:prefix_cache_queries_total", "counter", st.prefix_queries),
                ("vllm:prefix_cache_hits_total", "counter", st.prefix_hits),
                ("vllm:num_requests_running", "gauge", st.running),
                ("vllm:num_requests_waiting", "gauge", st.waiting)]
        return "".join(f"# TYPE {n} {t}\n{n}{{model_name=\"{MODEL}\"}} {v}.0\n" for n, t, v in rows)

    # -- the scripted answer --------------------------------------------------------------------
    def stream(self, s: socket.socket, body: dict, chat: bool, t_recv: float) -> None:
        st, sc = self.state, self.state.sc
        text = prompt_text(body)
        n_prompt = st.count(text)
        n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        n -= n % sc.step   # whole events only: the count stays known
        so = body.get("stream_options") or {}
        usage_every = sc.usage == "every" or (sc.usage == "asked" and bool(so.get("continuous_usage_stats")))
        usage_end = sc.usage in ("every", "end") or (sc.usage == "asked" and bool(so.get("include_usage")))
        with st.lock:
            first = st.started == 0
            st.started += 1
            key = text if isinstance(text, str) else json.dumps(text)
            hit = sc.prefix_hit_ttft_s is not None and key in st.seen
            st.seen.add(key)
            st.prefix_queries += n_prompt
            st.prefix_hits += n_prompt if hit else 0
            st.prompt_tokens += n_prompt
            st.waiting += 1
            # logged now, filled in as it goes: a client that read its [DONE] finds it whole
            entry = {"t_recv": t_recv, "prompt_tokens": n_prompt, "max_tokens": n, "hit": hit,
                     "warmup": first and sc.warmup_extra_s > 0, "chat": chat, "writes": []}
            st.log.append(entry)
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                  b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")
        if st.slots:
            st.slots.acquire()
        # the answer starts at the request's receipt, or when a slot freed: counting the
        # prompt and the header's send happen inside the script's TTFT, not after it
        t0 = time.perf_counter() if st.slots else t_recv
        with st.lock:
            st.waiting -= 1
            st.running += 1
        entry["t_start"] = t0
        ttft = (sc.prefix_hit_ttft_s if hit else sc.ttft_s) + (sc.warmup_extra_s if entry["warmup"] else 0.0)
        rid = f"cmpl-{id(entry):x}"
        pending_keepalive = [t_recv + sc.keepalive_s] if sc.keepalive_s else []

        def wait_until(due: float) -> None:
            while True:   # keep-alive comments on their own schedule while waiting
                now = time.perf_counter()
                if pending_keepalive and pending_keepalive[0] <= min(due, now):
                    s.sendall(chunk(b": keep-alive\n\n"))
                    pending_keepalive[0] += sc.keepalive_s
                    continue
                nxt = min(due, pending_keepalive[0]) if pending_keepalive else due
                if nxt <= now:
                    if nxt == due:
                        return
                    continue
                time.sleep(nxt - now)

        def event(obj: dict) -> bytes:
            return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"

        def base(choices: list) -> dict:
            return {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                    "created": 0, "model": MODEL, "choices": choices}

        def token_event(i: int, k: int, done: int) -> bytes:
            """Tokens i..i+k-1 (done = tokens sent after it)."""
            finish = "length" if done == n else None
            if chat:
                if sc.tool_call:
                    fn = {"arguments": TOKEN * k}
                    call = {"index": 0, "function": fn}
                    if i == 0:
                        call.update(id="call-0", type="function")
                        fn["name"] = TOOL
                    delta = {"tool_calls": [call]}
                    if i == 0:
                        delta["role"] = "assistant"
                elif i < sc.reasoning_tokens:
                    delta = {"reasoning_content": TOKEN * k}
                else:
                    delta = {"content": TOKEN * k}
                ch = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                ch = {"index": 0, "text": TOKEN * k, "logprobs": None, "finish_reason": finish}
            obj = base([ch])
            if usage_every:
                obj["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": done,
                                "total_tokens": n_prompt + done}
            return event(obj)

        try:
            if sc.empty_first_s is not None:
                wait_until(t0 + sc.empty_first_s)
                ev = base([{"index": 0, "delta": {"role": "assistant", "content": ""},
                            "logprobs": None, "finish_reason": None}])
                s.sendall(chunk(event(ev)))
                entry["empty_first"] = time.perf_counter()
            k, m = sc.tokens_per_event, sc.events_per_write
            for w in range(n // sc.step):   # write w carries tokens w*step .. (w+1)*step-1
                due = t0 + ttft + w * sc.step * sc.itl_s
                # built before the wait: at its due time a write only sends
                data = b"".join(token_event(w * sc.step + j * k, k, w * sc.step + (j + 1) * k)
                                for j in range(m))
                if sc.split_events:   # 3 pieces: 2 ms and 1 ms early, the last on time
                    cuts = (len(data) // 3, 2 * len(data) // 3)
                    pieces = (data[:cuts[0]], data[cuts[0]:cuts[1]], data[cuts[1]:])
                    for j, piece in enumerate(pieces):
                        wait_until(due - (2 - j) * 0.001)
                        s.sendall(chunk(piece))
                else:
                    wait_until(due)
                    s.sendall(chunk(data))
                entry["writes"].append(time.perf_counter())
            tail = b""
            if usage_end:
                tail += event({**base([]), "usage": {"prompt_tokens": n_prompt, "completion_tokens": n,
                                                     "total_tokens": n_prompt + n}})
            with st.lock:
                st.generation_tokens += n
                entry["t_done"] = time.perf_counter()
            s.sendall(chunk(tail + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        finally:
            with st.lock:
                st.running -= 1
            if st.slots:
                st.slots.release()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


def make_server(sc: Scenario, host: str = "127.0.0.1", port: int = 0,
                tokenizer: str | None = None) -> Server:
    state = State(sc, Counter(tokenizer, sc.prompt_extra_tokens))
    handler = type("ScenarioHandler", (Handler,), {"state": state})
    return Server((host, port), handler)


class Running:
    """A server in a thread of this process, for `with` (tests): .url, .log()."""

    def __init__(self, sc: Scenario, tokenizer: str | None = None):
        self.srv = make_server(sc, tokenizer=tokenizer)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"

    def __enter__(self) -> Running:
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.srv.shutdown()
        self.srv.server_close()

    def log(self) -> list[dict]:
        with self.srv.RequestHandlerClass.state.lock:
            return list(self.srv.RequestHandlerClass.state.log)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the known-answer OpenAI-compatible server")
    ap.add_argument("--scenario", default="steady", choices=sorted(SCENARIOS))
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json or HF directory (default: count words)")
    a = ap.parse_args(argv)
    srv = make_server(SCENARIOS[a.scenario], a.host, a.port, a.tokenizer)
    print(f"listening http://{a.host}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    sys.exit(main())
