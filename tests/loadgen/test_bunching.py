"""ITL when the client falls behind (loadgen/bunching.py): against a server of known timing,
a client forced behind -- its loop blocked, or the server's writes piling up several events --
is flagged client-limited; a quiet run is not. Gaps of 20-40 ms and blocks of 60 ms: a loaded
2-core machine's scheduling delays (a few ms) neither hide the one nor fake the other."""

import asyncio
import time

import pytest
from fault_server import FaultServer

from llmbench.loadgen.bunching import EVENTS_PER_READ_LIMIT, itl_fidelity
from llmbench.loadgen.client import RequestSpec, encode_request, interpret
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import run_load, run_sync
from llmbench.loadgen.schedule import Schedule

SPEC = RequestSpec("hello", 5, 12)


def measure(mode, itl_s, block_s=0.0, n=4, k=3):
    """n concurrent streams of 12 tokens; with block_s, a task holds the client's loop for
    block_s every 2 x block_s while they run (a client starved of its core)."""
    with FaultServer([mode], itl_s=itl_s, k=k) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, SPEC, "m", "completions") for _ in range(n)]

        async def go():
            stop = False

            async def blocker():
                while not stop:
                    await asyncio.sleep(block_s)
                    t = time.perf_counter()
                    while time.perf_counter() - t < block_s:   # the loop does nothing else
                        pass

            b = asyncio.ensure_future(blocker()) if block_s else None
            try:
                return await run_load(ep, reqs, Schedule(concurrency=n, num_prompts=n), timeout_s=20)
            finally:
                stop = True
                if b is not None:
                    await b

        res = run_sync(go())
    outs = [interpret(x.resp, x.t_sched, SPEC) for x in res.sent]
    assert all(o.ok and o.timeline.output_tokens == 12 for o in outs)
    return outs, itl_fidelity(outs, res.selfcheck.lag_p99_s())


def test_a_quiet_client_reads_each_event_alone_and_is_not_flagged():
    outs, f = measure("usage", itl_s=0.02)
    assert not f["client_limited"], f
    assert f["events_per_read"] < 1.2 and f["near_zero_gap_share"] < 0.05
    assert f["reads_per_token"] == pytest.approx(1.0, abs=0.2)
    assert f["itl_p50_s"] == pytest.approx(0.02, abs=0.008)     # the server's true gap


def test_a_server_chunking_tokens_into_one_event_is_its_own_rhythm_not_flagged():
    # speculative-decoding style: 3 tokens per event, one event per write -- the server's ITL
    _, f = measure("multi", itl_s=0.02, k=3)
    assert not f["client_limited"], f
    assert f["events_per_read"] < 1.2


def test_writes_carrying_several_events_are_flagged():
    # each write carries 3 one-token events: read together, one stamp; the even split hides it
    # in the gaps (no zero gaps), events per read shows it
    _, f = measure("burst", itl_s=0.02, k=3)
    assert f["client_limited"] and f["events_per_read"] > EVENTS_PER_READ_LIMIT, f
    assert f["events_per_read"] == pytest.approx(3.0, abs=0.5)
    assert any("events per client read" in r for r in f["reasons"])


def test_a_blocked_client_loop_is_flagged():
    # true gap 10 ms; the loop is held 60 ms of every 120 (the test server shares the process,
    # so its writes slow too and do not always pile up: the loop's lag is the sign here)
    _, f = measure("usage", itl_s=0.01, block_s=0.06)
    assert f["client_limited"], f
    assert f["loop_lag_p99_s"] >= 0.04
    assert any("event-loop lag" in r for r in f["reasons"])
