"""Run a sweep's point groups as Ray tasks on an existing Ray cluster (or a local one).

Each group of points that share an engine load becomes one task asking for the devices its
points need (num_gpus = tensor_parallel x pipeline_parallel on cuda); Ray places it on a node
with them free. Inside the task the group still runs in an isolated worker process
(launch/isolated.py), so an engine crash costs one point there too. Every task writes its
records straight into the results directory, which must therefore be on a file system all
nodes share; the driver only watches and collects.

Cluster: RAY_ADDRESS if set, else a running cluster on this host (`ray start --head`), else a
local one started for the sweep.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from llmbench.errors import SpecError
from llmbench.launch.isolated import Progress, existing, stored_since
from llmbench.runner import (SweepResult, device_problems, failed_record, group_points, start,
                             validate)
from llmbench.spec import Point, SweepSpec
from llmbench.store import Record, Store


def run_sweep_ray(spec: SweepSpec, results: Path, *, resume: bool = False,
                  redo_failed: bool = False, progress: Progress | None = None,
                  points: list[Point] | None = None, run_id: str | None = None,
                  address: str | None = None) -> SweepResult:
    try:
        import ray
    except ImportError:
        raise SpecError([("--executor ray", "needs the Python package 'ray', which is not "
                          "installed (pip install 'llmbench[ray]')")]) from None
    points = points if points is not None else spec.points()
    models = validate(points, local_devices=False)  # the GPUs that count are the cluster's
    store = Store(Path(results).resolve())  # the path every node opens: absolute
    result, points = start(points, store, run_id, resume=resume, redo_failed=redo_failed,
                           say=progress)
    say = progress or (lambda *a: None)
    groups = group_points(points)
    if not groups:
        return result

    before = existing(store, result.run_id)
    _connect(ray, address)
    try:
        problems = device_problems(points, lambda: _largest_node_gpus(ray),
                                   where=" on any one node of the Ray cluster")
        if problems:
            raise SpecError(problems)
        task = ray.remote(_run_group_task)
        running = {}
        for group in groups:
            first = group[0]
            # max_retries=0: a retried task would measure points twice; a lost task's points
            # are recorded as failed below and rerun with --resume --redo-failed.
            ref = task.options(**resources(first), max_retries=0).remote(
                [p.model_dump(mode="json") for p in group], result.run_id, str(store.root),
                sys.argv)
            running[ref] = group
            say("load", first, 0)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            ref = ready[0]
            group = running.pop(ref)
            try:
                docs = ray.get(ref)
                got = [Record.model_validate(d) for d in docs]
            except Exception as e:  # the task itself died (node lost, Ray error)
                cause = f"ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                got = []
                for p in group:
                    rec = stored_since(store, result.run_id, p, before)
                    if rec is None:
                        rec = failed_record(p, result.run_id, models[p.model], cause)
                        store.write(rec)
                    got.append(rec)
            result.records.extend(got)
            for p in group:
                say("repeat", p, p.warmups + p.repeats if p.workload == "offline" else 0)
                say("done", p, 0)
    finally:
        ray.shutdown()
    return result


def resources(p: Point) -> dict:
    """What a group's task asks Ray for: its devices (every GPU of its parallel layout)."""
    gpus = p.options.tensor_parallel * p.options.pipeline_parallel if p.device.startswith("cuda") else 0
    return {"num_cpus": 1, "num_gpus": gpus}


def _largest_node_gpus(ray) -> int:
    """A task runs on one node: the most GPUs any live node has."""
    return int(max((n.get("Resources", {}).get("GPU", 0) for n in ray.nodes() if n.get("Alive")),
                   default=0))


def _connect(ray, address: str | None) -> None:
    """Join the cluster named by `address` / RAY_ADDRESS, else one running here, else start one."""
    address = address or os.environ.get("RAY_ADDRESS")
    env = {"env_vars": {k: v for k, v in os.environ.items() if k.startswith("LLMBENCH_")}}
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
        return
    try:
        ray.init(address="auto", runtime_env=env, log_to_driver=False)
    except ConnectionError:
        ray.init(runtime_env=env, include_dashboard=False, log_to_driver=False)


def _run_group_task(point_docs: list[dict], run_id: str, results: str,
                    argv: list[str] | None = None) -> list[dict]:
    """On a Ray worker: run one group in an isolated process, return its records."""
    from llmbench.launch.isolated import run_group_isolated
    from llmbench.measure.env import set_user_argv

    set_user_argv(argv)  # records name the driver's command line, not the Ray worker's
    from llmbench.models.sources import resolve

    points = [Point.model_validate(d) for d in point_docs]
    models = {name: resolve(name) for name in {p.model for p in points}}
    recs = run_group_isolated(points, models, run_id, Store(results), lambda *a: None)
    return [r.model_dump(mode="json") for r in recs]
