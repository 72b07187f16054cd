"""How true is the multi-process client (`llmbench serve --workers N`) at 1024 and 2048
concurrent streams?

The reference server of client_fidelity.py (its own process, pinned to CPU 0, the first token
TTFT after it read the request and one token every ITL, each sent on a busy-wait against the
monotonic clock, recording when each token really left) is driven closed-loop by
loadgen/workers.py with N client processes (not pinned: they share the machine's cores), one
request per stream. Printed per streams x workers: median and p99 TTFT as the client saw it,
its error against the known TTFT and against what the server really did (its own record: it
falls behind when one core cannot write every stream's tokens on time), the median send lag
(scheduled to written: the first wave of N requests leaves back to back, so most of the error
at thousands of streams is the time to put them on the wire) and TTFT measured from the send,
the median ITL error, and the busiest client process's CPU share and loop lag.

    .venv/bin/python benchmarks/client_workers.py [--streams 1024 2048] [--workers 1 2]
        [--executor local ray] [--ray-nodes 4]
        [--tokens 8] [--ttft-ms 20] [--itl-ms 100]

Token counts are kept small and the ITL long on purpose: on a 2-core machine the reference
server alone (one Python process writing 2048 streams) is the first thing to run late, and
what is measured is the client's error, read against the server's own record.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from client_fidelity import serve, server_truth  # noqa: E402


def drive(url: str, streams: int, workers: int, tokens: int, executor: str = "local") -> dict:
    from llmbench.loadgen.client import RequestSpec, encode_request, interpret
    from llmbench.loadgen.http import Endpoint
    from llmbench.loadgen.schedule import Schedule
    from llmbench.loadgen.shards import run_shards
    from llmbench.loadgen.workers import run_workers

    ep = Endpoint.parse(url)
    specs = [RequestSpec(f"prompt {i}", 32, tokens) for i in range(streams)]
    reqs = [encode_request(ep, s, "ref", "completions") for s in specs]
    run = run_shards if executor == "ray" else run_workers
    res = run(ep, reqs, Schedule(concurrency=streams, num_prompts=streams), workers, timeout_s=300)
    outs = [interpret(x.resp, x.t_sched, specs[x.index]) for x in res.sent]
    tls = [o.timeline for o in outs if o.ok]
    sc = res.selfcheck
    return {"ttft_s": sorted(t.ttft_s() for t in tls), "lag_s": [t.send_lag_s() for t in tls],
            "ttft_s_by_req": [t.ttft_s() for t in tls], "itl_s": [g for t in tls for g in t.itl_s()],
            "errors": sum(not o.ok for o in outs), "busiest_cpu": sc.busiest_cpu_util,
            "lag_p99_ms": sc.lag_p99_s() * 1e3, "processes": sc.processes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=100.0)
    ap.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO")
    ap.add_argument("--executor", nargs="+", default=["local"], choices=["local", "ray"],
                    help="local: --workers processes (loadgen/workers.py); ray: shards on Ray actors "
                    "(loadgen/shards.py) of RAY_ADDRESS's cluster, or of --ray-nodes local nodes")
    ap.add_argument("--ray-nodes", type=int, default=0,
                    help="start a local Ray cluster of this many nodes (head + workers, one CPU each)")
    a = ap.parse_args()
    if "ray" in a.executor and a.ray_nodes:
        from ray_local_cluster import local_cluster

        with local_cluster(nodes=a.ray_nodes, cpus_per_node=1):
            import ray

            ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
            bench(a)
        return
    bench(a)


def bench(a) -> None:
    ncpu = len(os.sched_getaffinity(0))
    q: mp.Queue = mp.Queue()
    srv = mp.Process(target=serve, args=(q, a.ttft_ms / 1e3, a.itl_ms / 1e3, 0 if ncpu >= 2 else None,
                                         not a.no_realtime), daemon=True)
    srv.start()
    try:
        url = f"http://127.0.0.1:{q.get(timeout=30)}"
        print(f"reference server {url} on CPU 0: TTFT {a.ttft_ms:g} ms, ITL {a.itl_ms:g} ms, "
              f"{a.tokens} tokens/stream; clients unpinned; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"{'executor':>8} {'streams':>7} {'workers':>7} {'TTFT p50':>9} {'err':>8} {'p99':>8} | {'server p50':>10} "
              f"{'client-server':>13} | {'send lag p50':>12} {'from send':>9} | {'ITL err':>8} | {'errors':>6} "
              f"{'busiest CPU':>11} {'loop lag p99':>12}")
        for n, ex, w in [(n, ex, w) for n in a.streams for ex in a.executor for w in a.workers]:
                r = drive(url, n, w, a.tokens, ex)
                truth = server_truth(url)
                med = statistics.median(r["ttft_s"]) * 1e3
                p99 = r["ttft_s"][int(0.99 * (len(r["ttft_s"]) - 1))] * 1e3
                itl = statistics.median(r["itl_s"]) * 1e3
                lag = statistics.median(r["lag_s"]) * 1e3
                from_send = statistics.median(t - g for t, g in zip(r["ttft_s_by_req"], r["lag_s"])) * 1e3
                print(f"{ex:>8} {n:>7} {r['processes']:>7} {med:>7.2f}ms {med - a.ttft_ms:>+6.2f}ms {p99:>6.1f}ms | "
                      f"{truth['ttft_ms']:>8.2f}ms {med - truth['ttft_ms']:>+11.2f}ms | {lag:>10.2f}ms "
                      f"{from_send:>7.2f}ms | "
                      f"{itl - a.itl_ms:>+6.3f}ms | {r['errors']:>6} {r['busiest_cpu']:>10.0%} "
                      f"{r['lag_p99_ms']:>10.1f}ms", flush=True)
    finally:
        srv.terminate()
        srv.join(5)


if __name__ == "__main__":
    main()
