"""benchmarks/client_fidelity.py's reference server and figures: its token events read by
llmbench's client to known TTFT/ITL, its kernel arrival stamps on perf_counter's clock, and the
per-run figures (p99, where the median TTFT goes) from known inputs."""

import socket
import struct
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import client_fidelity as cf  # noqa: E402

from llmbench.loadgen import http  # noqa: E402
from llmbench.loadgen.client import RequestSpec, interpret  # noqa: E402


def _wire(n: int, usage: bool) -> list[bytes]:
    st = cf.Stream(None, 0.0, n, usage, "ref")
    out = []
    for _ in range(n):
        st.i += 1
        out.append(cf.token_event(st))
    return out


@pytest.mark.parametrize("usage", [True, False])
def test_reference_stream_reads_to_its_known_gaps(monkeypatch, usage):
    # sent at 0, head at 1 ms, token 1 at 20 ms, then one every 5 ms: one read per token
    n = 4
    stamps = iter([0.0, 0.001] + [0.020 + i * 0.005 for i in range(n)])
    monkeypatch.setattr(http, "perf_counter", lambda: next(stamps))
    conn = http._Conn(loop=None)
    conn.transport = None
    conn._done = None
    resp = http.Response()
    conn._resp, resp.t_send = resp, http.perf_counter()
    conn.data_received(cf.HEAD)
    for data in _wire(n, usage):
        conn.data_received(data)
    assert resp.complete and resp.status == 200
    out = interpret(resp, 0.0, RequestSpec("p", 32, n))
    assert out.ok and out.finish_reason == "length"
    assert out.token_split == ("continuous_usage" if usage else "one_per_event")
    tl = out.timeline
    assert tl.output_tokens == n
    assert tl.ttft_s() == pytest.approx(0.020, abs=1e-12)
    assert tl.itl_s() == pytest.approx([0.005] * (n - 1), abs=1e-12)


def test_arrival_is_the_kernel_stamp_moved_to_perf_counter():
    realtime_minus_perf_ns = 1_700_000_000_000_000_000
    anc = [(socket.SOL_SOCKET, cf.SO_TIMESTAMPNS,
            struct.pack("qq", 1_700_000_012, 250_000_000))]   # 12.25 s after perf_counter's 0
    assert cf.arrival_s(anc, realtime_minus_perf_ns, -1.0) == pytest.approx(12.25, abs=1e-9)


def test_arrival_without_a_stamp_is_the_fallback():
    assert cf.arrival_s([], 0, 3.5) == 3.5
    assert cf.arrival_s([(socket.SOL_SOCKET, 99, b"\0" * 16)], 0, 3.5) == 3.5


def test_loopback_arrival_lies_between_send_and_read():
    # the clock conversion is right (a wrong one is off by years), not a speed check. The kernel
    # turns receive timestamps on through deferred work, so the first segments after
    # SO_TIMESTAMPNS may come without one (seen once in a full suite): send until one does.
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    c = socket.create_connection(ls.getsockname())
    s, _ = ls.accept()
    try:
        s.setsockopt(socket.SOL_SOCKET, cf.SO_TIMESTAMPNS, 1)
        for _ in range(50):
            t_before = time.perf_counter()
            c.sendall(b"x")
            data, anc, _, _ = s.recvmsg(16, 64)
            t_after = time.perf_counter()
            t = cf.arrival_s(anc, time.time_ns() - time.perf_counter_ns(), -1.0)
            if t != -1.0:
                break
            time.sleep(0.02)
    finally:
        for x in (c, s, ls):
            x.close()
    assert data == b"x" and t != -1.0
    assert t_before - 1e-3 <= t <= t_after + 1e-3


def test_row_figures_from_known_runs():
    t0 = 100.0
    r = {"ttft_s": [0.020 + k * 1e-4 for k in range(101)], "itl_s": [0.005, 0.006, 0.005],
         "tokens": 200, "cpu_s": 0.003, "errors": 0, "realtime": True, "t0": t0,
         "send_lag_s": [0.001, 0.002, 0.003], "t_first": [t0 + 0.0226] * 3}
    truth = {"ttft_ms": 20.4, "itl_ms": 5.0, "t_recv": t0 + 0.0021, "t_first_sent": t0 + 0.0225}
    row = cf.row_of(r, truth, 256, "llmbench", 0, 20.0, 5.0)
    assert row["ttft_err_ms"] == pytest.approx(5.0)
    # exclusive quantiles, n = 101: between the 100th and 101st values, 98 % of the way
    assert row["ttft_p99_err_ms"] == pytest.approx(9.998)
    assert row["itl_err_ms"] == pytest.approx(0.0)
    assert row["cpu_us_per_tok"] == pytest.approx(15.0)
    assert (row["sent_ms"], row["server_read_ms"], row["server_out_ms"], row["seen_ms"]) == \
        pytest.approx((2.0, 2.1, 22.5, 22.6))


def test_vllm_rows_have_no_stages():
    r = {"ttft_s": [0.03, 0.04], "itl_s": [0.005], "tokens": 2, "cpu_s": 0.0, "errors": 0}
    row = cf.row_of(r, {"ttft_ms": 20.0, "itl_ms": 5.0}, 256, "vllm", 0, 20.0, 5.0)
    assert "sent_ms" not in row and row["ttft_err_ms"] == pytest.approx(15.0)
