import os
import socket
import subprocess
import sys
import time
import urllib.request

from report_records import own_records

from llmbench.cli.dashboard import _is_loopback
from llmbench.dashboard.source import Source
from llmbench.store.store import Store


def test_loopback_detection():
    assert _is_loopback("127.0.0.1") and _is_loopback("::1") and _is_loopback("localhost")
    assert not _is_loopback("0.0.0.0") and not _is_loopback("192.168.1.5")


def test_missing_store_is_bad_input(tmp_path):
    r = subprocess.run([sys.executable, "-m", "llmbench", "dashboard", "--results", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_serves_on_loopback_by_default(fixture_store, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # a cache of its own: no index yet, built before serving and saved while serving
    env = {**os.environ, "LLMBENCH_CACHE": str(tmp_path / "cache")}
    p = subprocess.Popen([sys.executable, "-m", "llmbench", "dashboard", "--results", str(fixture_store),
                          "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                body = resp.read().decode()
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() else "timeout"
                time.sleep(0.3)
        assert "llmbench dashboard" in body
        # waitress, not Flask's development server (which answers as Werkzeug)
        assert resp.headers["Server"] == "llmbench"
        layout = urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=10).read()
        assert b"Best configuration" in layout
        deadline = time.monotonic() + 30
        while not list((tmp_path / "cache").rglob("*.parquet")):
            assert time.monotonic() < deadline, "the index was not saved"
            time.sleep(0.1)
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_source_sees_new_records(tmp_path):
    store = Store(tmp_path)
    store.write(own_records()[0])
    old = time.time_ns() - 3600 * 1_000_000_000  # settled: written an hour ago
    os.utime(next(tmp_path.iterdir()), ns=(old, old))
    src = Source(tmp_path, min_interval_s=0)
    assert src.data.counts()["own"] == 1 and not src.refresh()
    time.sleep(0.01)
    store.write(own_records()[1])
    assert src.refresh() and src.data.counts()["own"] == 2 and src.version == 1


def test_port_in_use_is_one_message(fixture_store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "llmbench", "dashboard", "--results", str(fixture_store),
                            "--port", str(port)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr
