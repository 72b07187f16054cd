"""What every test server here shares: an aiohttp app on its own event loop in a daemon thread,
bound to a free port of 127.0.0.1, started and stopped by `with`. A server class names its
routes in `routes(app)`; `on_loop(loop)` makes what must live on that loop."""

from __future__ import annotations

import asyncio
import socket
import threading

from aiohttp import web


class ThreadedApp:
    port = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError(f"{type(self).__name__} names its routes")

    def on_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Made on the server's loop before it serves (asyncio objects bound to that loop)."""

    def __enter__(self):
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10), f"{type(self).__name__} did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.before_stop()
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def before_stop(self) -> None:
        """What to tell handlers still running (e.g. a stalled stream) before the app stops."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self.on_loop(self._loop)
        app = web.Application()
        self.routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        self._loop.run_until_complete(self._runner.setup())
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
        ready.set()
        self._loop.run_forever()
