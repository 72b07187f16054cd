"""A real multi-node Ray cluster on this one machine: `ray start --head` plus worker nodes, each
a `ray start --block` process in its own session, so stopping the cluster ends exactly its
processes (`ray stop` would end every Ray on the machine). For the shard tests and
benchmarks/client_workers.py --executor ray."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> list[str]:
    exe = Path(sys.executable).with_name("ray")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def _wait_nodes(address: str, n: int, timeout_s: float) -> None:
    code = (f"import ray,sys; ray.init(address={address!r}, log_to_driver=False); "
            f"sys.exit(0 if sum(x['Alive'] for x in ray.nodes()) >= {n} else 1)")
    deadline = time.monotonic() + timeout_s
    while subprocess.run([sys.executable, "-c", code], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the local Ray cluster did not reach {n} nodes in {timeout_s:.0f} s")
        time.sleep(3)   # each probe is a Ray driver: polling faster loads the head it waits for


@contextmanager
def local_cluster(nodes: int = 3, cpus_per_node: int = 1, log_dir: Path | None = None,
                  timeout_s: float = 240.0):
    """Yields the head's address (also set as RAY_ADDRESS for the block)."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--block", f"--num-cpus={cpus_per_node}", "--node-ip-address=127.0.0.1",
              "--disable-usage-stats"]
    procs = []
    log_dir = log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
    old = os.environ.get("RAY_ADDRESS")
    try:
        procs.append(subprocess.Popen(
            [*_ray_cli(), "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
            env=env, start_new_session=True, stdout=open(log_dir / "ray-head.log", "w"),
            stderr=subprocess.STDOUT))
        _wait_nodes(address, 1, timeout_s)
        for k in range(1, nodes):   # one at a time: nodes joining together time out on 2 cores
            procs.append(subprocess.Popen(
                [*_ray_cli(), "start", f"--address={address}", *common], env=env,
                start_new_session=True, stdout=open(log_dir / f"ray-worker{k}.log", "w"),
                stderr=subprocess.STDOUT))
            _wait_nodes(address, k + 1, timeout_s)
        os.environ["RAY_ADDRESS"] = address
        yield address
    finally:
        if old is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = old
        for p in reversed(procs):   # workers first, then the head
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        # `ray stop` would remove the head's address file; a signal does not, and a later
        # ray.init(address="auto") on this machine would wait on the dead head
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        try:
            if current.read_text().strip().endswith(f":{port}"):
                current.unlink()
        except OSError:
            pass
