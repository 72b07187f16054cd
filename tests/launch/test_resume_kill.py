"""kill -9 at random moments, then --resume: every point ends with exactly one ok record and
every file in the results directory parses."""

import os
import random
import signal
import subprocess
import time
from collections import Counter

import pytest

from launch_helpers import LLMBENCH, keys, run_cli, stored, tiny_spec
from tests.conftest import needs_llamacpp


@pytest.mark.engine
@pytest.mark.slow
@needs_llamacpp
def test_kill_9_at_random_moments_then_resume(tmp_path):
    seed = int(os.environ.get("LLMBENCH_KILL_SEED", time.time_ns() % 10**6))
    rng = random.Random(seed)
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2, 3, 4))
    k = keys(spec)
    res = tmp_path / "results"
    env = {k_: v for k_, v in os.environ.items() if k_ != "LLMBENCH_FAULT_INJECT"}
    kills = []
    for _ in range(3):
        p = subprocess.Popen([*LLMBENCH, "run", str(spec), "--results", str(res), "--resume"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        delay = rng.uniform(0.2, 4.0)
        try:
            p.wait(timeout=delay)  # finished before its kill: fine, the next one resumes nothing
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            kills.append(round(delay, 2))
        for d in stored(res):  # after every kill: nothing torn, nothing half-written
            assert d["point_key"] in k and d["status"] in ("ok", "failed"), (seed, d)
    r = run_cli("run", spec, "--results", res, "--resume")
    assert r.returncode == 0, (seed, kills, r.stderr)
    time.sleep(1.0)  # an orphaned worker, were there one, would write its record by now
    docs = stored(res)
    assert Counter(d["point_key"] for d in docs if d["status"] == "ok") == Counter(k), (seed, kills)
    assert all(d["status"] == "ok" for d in docs), (seed, kills)  # a kill never leaves a 'failed'
