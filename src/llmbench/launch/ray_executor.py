"""Run a sweep's point groups as Ray tasks on an existing Ray cluster (or a local one).

Each group of points that share a load becomes one task asking for the devices its points
need (num_gpus: tensor_parallel x pipeline_parallel of an inference point on cuda, nproc of a
training point on cuda); Ray places it on a node with them free. Any kind of point
(launch/kind.py) runs this way. Inside the task the group still runs in an isolated worker process
(launch/isolated.py), so an engine crash costs one point there too. Every task writes its
records straight into the results directory, which must therefore be on a file system all
nodes share; the driver only watches and collects.

Cluster: RAY_ADDRESS if set, else a running cluster on this host (`ray start --head`), else a
local one started for the sweep.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from llmbench.errors import SpecError
from llmbench.launch.failures import failed_record
from llmbench.launch.isolated import existing, stored_since
from llmbench.launch.kind import PointKind, Progress
from llmbench.store import Record, Store


def run_groups_ray(kind: PointKind, groups: list[list], ctx: Any, run_id: str, store: Store,
                   say: Progress) -> list[Record]:
    """One Ray task per group; the records of every group, whatever became of its task."""
    try:
        import ray
    except ImportError:
        raise SpecError([("--executor ray", "needs the Python package 'ray', which is not "
                          "installed (pip install 'llmbench[ray]')")]) from None
    if not groups:
        return []
    records: list[Record] = []
    before = existing(store, run_id)
    _connect(ray)
    try:
        problems = kind.device_problems([p for g in groups for p in g], lambda: _largest_node_gpus(ray),
                                        where=" on any one node of the Ray cluster")
        if problems:
            raise SpecError(problems)
        task = ray.remote(_run_group_task)
        running = {}
        for group in groups:
            first = group[0]
            # max_retries=0: a retried task would measure points twice; a lost task's points
            # are recorded as failed below and rerun with --resume --redo-failed.
            ref = task.options(**resources(first, kind), max_retries=0).remote(
                kind.name, [p.model_dump(mode="json") for p in group], run_id, str(store.root),
                sys.argv)
            running[ref] = group
            say("load", first, 0)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            ref = ready[0]
            group = running.pop(ref)
            try:
                got = [Record.model_validate(d) for d in ray.get(ref)]
            except Exception as e:  # the task itself died (node lost, Ray error)
                cause = f"ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                got = []
                for p in group:
                    rec = stored_since(store, run_id, p, before)
                    if rec is None:
                        rec = failed_record(kind, p, run_id, ctx, cause)
                        store.write(rec)
                    got.append(rec)
            records.extend(got)
            for p in group:
                say("repeat", p, p.warmups + p.repeats if getattr(p, "workload", None) == "offline" else 0)
                say("done", p, 0)
    finally:
        ray.shutdown()
    return records


def resources(p, kind: PointKind) -> dict:
    """What a group's task asks Ray for: one CPU and every device one of its points needs (a
    point's devices are one unit: tensor x pipeline parallel, or a training point's nproc)."""
    return {"num_cpus": 1, "num_gpus": kind.devices(p)}


def _largest_node_gpus(ray) -> int:
    """A task runs on one node: the most GPUs any live node has."""
    return int(max((n.get("Resources", {}).get("GPU", 0) for n in ray.nodes() if n.get("Alive")),
                   default=0))


def _connect(ray) -> None:
    """Join the cluster named by RAY_ADDRESS, else one running here, else start one."""
    address = os.environ.get("RAY_ADDRESS")
    env = {"env_vars": {k: v for k, v in os.environ.items() if k.startswith("LLMBENCH_")}}
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
        return
    try:
        ray.init(address="auto", runtime_env=env, log_to_driver=False)
    except ConnectionError:
        ray.init(runtime_env=env, include_dashboard=False, log_to_driver=False)


def _run_group_task(kind_name: str, point_docs: list[dict], run_id: str, results: str,
                    argv: list[str]) -> list[dict]:
    """On a Ray worker: run one group in an isolated process, return its records."""
    from llmbench.launch.isolated import run_group_isolated
    from llmbench.kinds.registry import get_kind

    kind = get_kind(kind_name)
    points = [kind.parse_point(d) for d in point_docs]
    recs = run_group_isolated(kind, points, kind.context(points), run_id, Store(results),
                              lambda *a: None, argv=argv)
    return [r.model_dump(mode="json") for r in recs]
