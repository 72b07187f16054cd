"""A minimal HTTP/1.1 client on asyncio protocols, built for timing streamed responses.

Why not aiohttp/httpx: their readers hand bytes to a coroutine that runs only after the event
loop has worked through everything else that is ready, so under load the recorded arrival time
drifts later than the real one and the client burns tens of microseconds per token. Here the
arrival time is read in `data_received`, the moment the loop hands over the bytes, and the hot
path only stamps, de-chunks and appends; SSE and JSON parsing happen after the request ends.

Supports what OpenAI-compatible servers speak: keep-alive, chunked or Content-Length or
close-delimited bodies, TLS (https://). Requests are pre-serialised bytes.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from dataclasses import dataclass, field
from time import perf_counter
from urllib.parse import urlsplit


@dataclass
class Endpoint:
    host: str
    port: int
    tls: bool
    base_path: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        tls = u.scheme == "https"
        return cls(u.hostname, u.port or (443 if tls else 80), tls, u.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        default = 443 if self.tls else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"


@dataclass
class Response:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    t_send: float | None = None       # just before the request bytes were written
    t_headers: float | None = None
    pieces: list[tuple[float, bytes]] = field(default_factory=list)  # body bytes, as they came
    complete: bool = False
    error: str | None = None      # error kind: connection_dropped, connect_failed, ...
    detail: str | None = None

    @property
    def body(self) -> bytes:
        return b"".join(p for _, p in self.pieces)


class _Conn(asyncio.Protocol):
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = 0
        self.prewarmed = False
        self._resp: Response | None = None
        self._done: asyncio.Future | None = None
        self._head = b""
        self._mode = ""          # "chunked" | "length" | "close"
        self._left = 0           # bytes left in the current chunk / body
        self._state = 0          # chunked: 0 size line, 1 data, 2 CRLF after data, 3 trailers
        self._line = b""
        self.keep_alive = True

    # -- protocol callbacks -------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        self.closed = True
        if self._resp is not None and not self._done.done():
            r = self._resp
            if self._mode == "close" and r.t_headers is not None:
                r.complete = True
            else:
                r.error = "connection_dropped"
                r.detail = f"connection closed {'before the response' if r.t_headers is None else 'mid-stream'}" \
                    + (f": {exc}" if exc else "")
            self._finish()

    def data_received(self, data: bytes):
        t = perf_counter()
        r = self._resp
        if r is None:  # bytes nobody asked for: the connection is no longer trustworthy
            self.keep_alive = False
            self.transport.close()
            return
        if r.t_headers is None:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                if len(self._head) > 65536:
                    self._fail("bad_response", "response head too long")
                return
            head, data = self._head[:end], self._head[end + 4:]
            self._head = b""
            if not self._parse_head(head, t):
                return
            if not data:
                if self._mode == "length" and self._left == 0:
                    r.complete = True
                    self._finish()
                return
        if self._mode == "chunked":
            self._dechunk(data, t)
        elif self._mode == "length":
            if len(data) >= self._left:
                data = data[:self._left]
                r.pieces.append((t, data))
                self._left = 0
                r.complete = True
                self._finish()
            else:
                self._left -= len(data)
                r.pieces.append((t, data))
        else:
            r.pieces.append((t, data))

    # -- parsing --------------------------------------------------------------------------------
    def _parse_head(self, head: bytes, t: float) -> bool:
        r = self._resp
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        try:
            r.status = int(parts[1])
        except (IndexError, ValueError):
            self._fail("bad_response", f"bad status line {lines[0][:80]!r}")
            return False
        for line in lines[1:]:
            k, _, v = line.partition(":")
            r.headers[k.strip().lower()] = v.strip()
        r.t_headers = t
        h = r.headers
        if "close" in h.get("connection", "").lower():
            self.keep_alive = False
        if "chunked" in h.get("transfer-encoding", "").lower():
            self._mode, self._state = "chunked", 0
        elif "content-length" in h:
            try:
                self._mode, self._left = "length", int(h["content-length"])
            except ValueError:
                self._fail("bad_response", f"bad Content-Length {h['content-length'][:20]!r}")
                return False
        else:
            self._mode, self.keep_alive = "close", False
        return True

    def _dechunk(self, data: bytes, t: float) -> None:
        r = self._resp
        n = len(data)
        if self._state == 0 and not self._line:   # the common case: exactly one whole chunk
            j = data.find(b"\r\n")
            if 0 < j < 10:
                try:
                    size = int(data[:j], 16)
                except ValueError:
                    size = -1
                if size > 0 and n == j + size + 4 and data.endswith(b"\r\n"):
                    r.pieces.append((t, data[j + 2:n - 2]))
                    return
        i = 0
        while i < n:
            if self._state == 1:                      # chunk data
                take = min(self._left, n - i)
                r.pieces.append((t, data[i:i + take]))
                i += take
                self._left -= take
                if self._left == 0:
                    self._state, self._line = 2, b""
            else:                                     # a CRLF-terminated line
                j = data.find(b"\n", i)
                if j < 0:
                    self._line += data[i:]
                    return
                line = (self._line + data[i:j]).strip()
                self._line = b""
                i = j + 1
                if self._state == 0:
                    try:
                        self._left = int(line.split(b";", 1)[0], 16)
                    except ValueError:
                        self._fail("bad_response", f"bad chunk size {line[:40]!r}")
                        return
                    self._state = 1 if self._left else 3
                elif self._state == 2:
                    self._state = 0
                elif not line:                        # state 3: blank line ends the trailers
                    r.complete = True
                    self._finish()
                    return

    def _fail(self, kind: str, detail: str) -> None:
        self._resp.error, self._resp.detail = kind, detail
        self.keep_alive = False
        self.transport.close()
        self._finish()

    def _finish(self) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(self._resp)

    # -- use ------------------------------------------------------------------------------------
    def send(self, request: bytes) -> tuple[Response, asyncio.Future]:
        self._resp = Response()
        self._done = self.loop.create_future()
        self._head, self._line, self._mode = b"", b"", ""
        self.used += 1
        self._resp.t_send = perf_counter()
        self.transport.write(request)
        return self._resp, self._done

    def release(self) -> None:
        self._resp = None
        self._done = None

    def abort(self) -> None:
        self.keep_alive = False
        if self.transport is not None:
            self.transport.abort()


class Pool:
    """Keep-alive connections to one endpoint; `prewarm` opens them before the clock starts so
    that TCP/TLS setup is not charged to the first requests' TTFT."""

    def __init__(self, endpoint: Endpoint, connect_timeout_s: float = 10.0):
        self.ep = endpoint
        self.idle: list[_Conn] = []
        self.connect_timeout_s = connect_timeout_s
        self.opened = 0
        self._ssl = _ssl.create_default_context() if endpoint.tls else None

    async def _open(self) -> _Conn:
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(lambda: _Conn(loop), self.ep.host, self.ep.port, ssl=self._ssl),
            self.connect_timeout_s)
        self.opened += 1
        return conn

    async def prewarm(self, n: int) -> None:
        results = await asyncio.gather(*(self._open() for _ in range(n)), return_exceptions=True)
        for c in results:
            if isinstance(c, _Conn):
                c.prewarmed = True
                self.idle.append(c)

    def start(self, data: bytes):
        """Send at once on an idle kept-alive connection, without yielding to the loop (so a
        wave of requests goes out back to back); None when no idle connection is open."""
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn, *conn.send(data)
        return None

    async def request(self, data: bytes, timeout_s: float | None, started=None,
                      track: list | None = None) -> Response:
        """Send one request (or finish one `start` sent); never raises for network trouble:
        the Response says what failed. `track`, when given, gets the Response appended as soon
        as the request is written (a watcher reads its first byte while it is in flight)."""
        for attempt in (0, 1):
            if started is None:
                started = self.start(data)
                if started is None:
                    try:
                        conn = await self._open()
                    except (OSError, asyncio.TimeoutError) as e:
                        return Response(error="connect_failed", detail=f"{type(e).__name__}: {e}")
                    started = (conn, *conn.send(data))
            conn, resp, done = started
            started = None
            if track is not None:
                track.append(resp)
            reused = conn.used > 1 or conn.prewarmed
            try:
                if timeout_s is None:
                    await done
                else:
                    await asyncio.wait_for(done, timeout_s)
            except asyncio.TimeoutError:
                conn.abort()
                resp.error, resp.detail = "timeout", f"no complete response within {timeout_s} s"
                return resp
            except asyncio.CancelledError:
                conn.abort()
                raise
            conn.release()
            # A kept-alive connection the server had already closed: nothing was processed,
            # so sending again on a fresh connection is safe (as browsers and aiohttp do).
            if reused and resp.error == "connection_dropped" and resp.t_headers is None and attempt == 0:
                continue
            if resp.complete and conn.keep_alive and not conn.closed:
                self.idle.append(conn)
            elif not conn.closed:
                conn.abort()
            return resp
        raise AssertionError("unreachable")

    def close(self) -> None:
        for c in self.idle:
            c.abort()
        self.idle.clear()


def build_request(ep: Endpoint, method: str, path: str, body: bytes,
                  headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {ep.base_path}{path} HTTP/1.1", f"Host: {ep.host_header}",
             "Accept: text/event-stream, application/json", "Accept-Encoding: identity",
             "Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
