from __future__ import annotations

import ipaddress
import threading
from pathlib import Path
from typing import Optional

import typer

from llmbench.cli.common import console
from llmbench.errors import SpecError
from llmbench.store.index import Index, load_index, save_index
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dashboard(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    host: str = typer.Option("127.0.0.1", "--host", help="interface to listen on (loopback by default)"),
    port: int = typer.Option(8050, "--port", min=1, max=65535),
    poll: float = typer.Option(10.0, "--poll", min=1.0, help="seconds between checks for new records"),
    debug: bool = typer.Option(False, "--debug", help="Dash dev tools and reloader (never on a shared host)"),
    reference: Optional[Path] = typer.Option(
        None, "--reference", help="the study, for the Findings tab: an imported results directory "
        "(llmbench import llm-inference-bench) or the published data directory itself (as "
        "`llmbench findings --reference`); default: --results"),
) -> None:
    """Serve the interactive dashboard over the store (own and imported reference results)."""
    if not results.exists():
        raise SpecError([("--results", f"{results} does not exist")])
    if reference is not None and not reference.is_dir():
        raise SpecError([("--reference", f"{reference} is not a directory")])
    # The index is built or caught up in a thread; the dashboard's libraries are imported once
    # its files are read, while DuckDB parses them off the GIL (imported during the reading,
    # they took the GIL from the reading thread at every system call: 100,000 files listed
    # and read in 2.0-3.9 s instead of 1.4 s).
    loaded: dict[str, Index] = {}
    read = threading.Event()
    reader = threading.Thread(target=_read_index, args=(results, loaded, read),
                              name="llmbench-index", daemon=True)
    reader.start()
    read.wait()
    try:
        from llmbench.dashboard.app import create_app
        # Imported by the first dash.Dash() and by serve: here, still beside DuckDB (0.1 s).
        import flask  # noqa: F401
        import waitress  # noqa: F401
    except ImportError as e:
        raise SpecError([("dashboard", f"needs the dashboard extra ({e.name} is missing): "
                          "pip install 'llmbench[dashboard]'")]) from None
    finally:
        reader.join()
    if not _is_loopback(host):
        console.print(f"[yellow]warning:[/] listening on {host}: anyone who can reach this "
                      "address can read every result; the dashboard has no authentication")
    app = create_app(results, poll_s=poll, index=loaded.get("index"),  # (loaded again on failure)
                     reference=reference)
    if "index" in loaded:
        # Written to the cache (0.3 s for 100,000 rows) while the server starts, not before it.
        threading.Thread(target=save_index, args=(results, loaded["index"]),
                         name="llmbench-index-save", daemon=True).start()
    console.print(f"llmbench dashboard on http://{host}:{port}/  (Ctrl-C to stop)")
    if debug:  # Dash's dev tools need Flask's development server
        app.run(host=host, port=port, debug=True)
        return
    serve(app.server, host, port)


def _read_index(results: Path, into: dict[str, Index], read: threading.Event) -> None:
    try:
        into["index"] = load_index(results, save=False, read=read)
    except Exception:  # noqa: BLE001 - create_app reads it again, and says what is wrong
        pass
    finally:
        read.set()  # (a cached index, or a failure: nothing was read)


def serve(wsgi_app, host: str, port: int) -> None:
    """A production WSGI server (waitress: pure Python, threaded, no C build), never Flask's
    development server, which warns against itself and serves one request at a time badly."""
    try:
        from waitress import serve as waitress_serve
    except ImportError as e:
        raise SpecError([("dashboard", f"needs the dashboard extra ({e.name} is missing): "
                          "pip install 'llmbench[dashboard]'")]) from None
    try:
        # Figures are computed per request on the server: a few threads keep one slow view
        # from blocking the rest; the store is shared read-only through dashboard.source.
        waitress_serve(wsgi_app, host=host, port=port, threads=8, ident="llmbench")
    except OSError as e:  # port in use, address not available: one line, exit 2
        raise SpecError([("--port", f"cannot listen on {host}:{port}: {e.strerror or e}")]) from None
