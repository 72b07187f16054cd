"""Run a dashboard app on a free loopback port in a background thread (for browser tests)."""

from __future__ import annotations

import socket
import threading
from contextlib import contextmanager

from werkzeug.serving import make_server

from llmbench.dashboard.app import create_app


@contextmanager
def serve(results, poll_s: float = 10.0):
    app = create_app(results, poll_s=poll_s)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.shutdown()
        t.join(timeout=10)
