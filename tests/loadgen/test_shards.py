"""Client shards on Ray actors (`llmbench serve --executor ray`): on a real multi-node Ray
cluster started on this machine (head + 2 worker nodes, one CPU each), the load is split without
loss, the merged record is the sum of its shards, each shard's clock offset is measured, and the
timings match a server of known timing."""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from fault_server import FaultServer
from scipy import stats

from llmbench.loadgen.client import RequestSpec, encode_request, interpret
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.workers import plan

ray = pytest.importorskip("ray")

SPEC = RequestSpec("hello", 5, 8)
NODES = 3


def test_thinning_gives_each_shard_a_poisson_stream_and_loses_nothing():
    rate, n, shards = 200.0, 6000, 3
    sch = Schedule(rate=rate, num_prompts=n, seed=7)
    parts = plan(sch, n, shards, thin=True)
    arr = sch.arrivals()
    # the union is exactly the requested process
    got = sorted((off, i) for p in parts for off, i in zip(p.schedule.arrivals(), p.indices))
    assert got == sorted((arr[i], i) for i in range(n))
    for p in parts:
        gaps = np.diff(p.schedule.arrivals())
        # a thinned Poisson process of rate R is Poisson of rate R/N: exponential gaps of mean
        # N/R (a round-robin deal would give Erlang-N gaps, which this test rejects)
        assert stats.kstest(gaps, "expon", args=(0, shards / rate)).pvalue > 1e-3
    rr = plan(sch, n, shards)    # the --workers deal, for contrast
    assert stats.kstest(np.diff(rr[0].schedule.arrivals()), "expon",
                        args=(0, shards / rate)).pvalue < 1e-6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from benchmarks.ray_local_cluster import local_cluster

    with local_cluster(nodes=NODES, cpus_per_node=1, log_dir=tmp_path_factory.mktemp("ray")) as addr:
        ray.init(address=addr, log_to_driver=False)
        try:
            yield addr
        finally:
            ray.shutdown()


def _drive(schedule, n, shards, **server):
    from llmbench.loadgen.shards import run_shards

    with FaultServer(["ok"], **server) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, SPEC, "m", "completions") for _ in range(n)]
        res = run_shards(ep, reqs, schedule, shards, timeout_s=30)
        served = s.count
    return res, [interpret(x.resp, x.t_sched, SPEC) for x in res.sent], served


def test_three_shards_on_three_nodes_merge_to_their_sum(cluster):
    ttft_s, itl_s = 0.05, 0.01
    res, outs, served = _drive(Schedule(concurrency=6, num_prompts=30), 30, NODES,
                               ttft_s=ttft_s, itl_s=itl_s)
    sh = res.shards
    assert len(sh) == NODES and len({s["node_id"] for s in sh}) == NODES   # spread over nodes
    assert sum(s["requests"] for s in sh) == len(res.sent) == served == 30
    assert sorted(x.index for x in res.sent) == list(range(30))
    assert [s["concurrency"] for s in sh] == [2, 2, 2]
    tokens = [o.timeline.output_tokens for o in outs]
    assert all(o.ok for o in outs) and sum(tokens) == 30 * SPEC.output_len
    for s in sh:   # one host: the clocks agree, to within the measured round trip
        assert abs(s["clock_offset_s"]) <= s["clock_offset_uncertainty_s"] + 0.002
        assert 0 < s["clock_offset_uncertainty_s"] < 0.25 and s["cpu_s"] > 0
    # the server's known timing, as a lower bound and within tens of ms (2 loaded cores)
    ttfts = [o.timeline.ttft_s() for o in outs]
    itls = [g for o in outs for g in o.timeline.itl_s()]
    assert min(ttfts) >= ttft_s and statistics.median(ttfts) < ttft_s + 0.03
    assert statistics.median(itls) == pytest.approx(itl_s, abs=0.004)
    # every shard started on the driver's t0: each one's first wave is scheduled there
    assert sum(1 for x in res.sent if abs(x.t_sched - res.t_start) < 0.02) == 6


def test_open_loop_shards_follow_the_schedule_on_the_drivers_clock(cluster):
    sch = Schedule(rate=40, num_prompts=40, seed=3)
    res, outs, _ = _drive(sch, 40, NODES)
    offsets = sorted(x.t_sched - res.t_start for x in res.sent)
    # each shard's schedule brought onto the driver's clock lands where it was planned
    assert offsets == pytest.approx(sch.arrivals(), abs=0.02)
    assert all(o.ok for o in outs)


def test_the_clock_offset_is_the_probe_with_the_shortest_round_trip():
    from llmbench.loadgen.shards import measure_offset

    # a shard whose clock runs 5 s ahead of ours and reads it halfway through each round trip;
    # the round trips shrink, so the last probe is the best one
    trips = iter([0.040, 0.020, 0.004])

    def read_clock():
        half = next(trips) / 2
        time.sleep(half)
        t = time.perf_counter() + 5.0
        time.sleep(half)
        return t

    o = measure_offset(read_clock, probes=3)
    assert 0.002 <= o.uncertainty_s < 0.010          # the 4 ms trip, not the 40 ms one
    assert o.offset_s == pytest.approx(5.0, abs=o.uncertainty_s)


def test_a_dead_shard_fails_the_point_with_its_host(cluster):
    from llmbench.loadgen.shards import SHARD_NAME

    killed = []

    def kill_shard_0():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for name in ray.util.list_named_actors():
                if name.startswith(SHARD_NAME) and name.endswith("-0"):
                    time.sleep(1.0)   # let it start its load
                    ray.kill(ray.get_actor(name))
                    killed.append(name)
                    return
            time.sleep(0.1)

    t = threading.Thread(target=kill_shard_0, daemon=True)
    t.start()
    with pytest.raises(RuntimeError, match=r"client shard 0 on .* failed"):
        _drive(Schedule(concurrency=3, num_prompts=60), 60, NODES, ttft_s=0.05, itl_s=0.1)
    t.join()
    assert killed


def test_cli_serve_on_ray_writes_the_shards_into_the_record(cluster, tmp_path):
    from llmbench.cli import main
    from llmbench.store import Store

    with FaultServer(["usage"], ttft_s=0.02, itl_s=0.005) as s:
        try:
            main(["serve", s.url, "--executor", "ray", "--workers", "2", "--concurrency", "4",
                  "--num-prompts", "16", "--input-len", "16", "--output-len", "8",
                  "--no-server-metrics", "--results", str(tmp_path)])
            code = 0
        except SystemExit as e:
            code = e.code
        served = s.count
    assert code == 0
    [rec] = Store(tmp_path).records()
    shards = rec.serving["client"]["shards"]
    # the server also answered the point's warm-up requests (serving.warmup), sent before the load
    assert len(shards) == 2 and sum(x["requests"] for x in shards) == 16 == served - rec.serving["warmup"]["requests"]
    assert rec.workload["client_executor"] == "ray" and rec.workload["client_workers"] == 2
    assert rec.metrics["ttft_s"].n == 16 and rec.metrics["ttft_s"].min >= 0.02
    assert rec.serving["output_tokens"] == 16 * 8


def test_cli_refuses_conversations_on_ray(tmp_path):
    r = subprocess.run([sys.executable, "-m", "llmbench", "serve", "http://127.0.0.1:9",
                        "--executor", "ray", "--turns", "2", "--concurrency", "1",
                        "--num-prompts", "2", "--list-points", "--results", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "client shards on Ray" in r.stderr and "Traceback" not in r.stderr
