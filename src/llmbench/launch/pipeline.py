"""The one execution pipeline every kind of point goes through (llmbench run, llmbench train):

    points -> kind.prepare (every check, before anything runs) -> skip what is stored
    (--resume / --redo-failed, by point key, whichever run stored it) -> groups of points that
    share a load (kind.load_key) -> an executor runs each group -> one record per point,
    written as soon as it is measured -> kind.finish (annotations across points)

Executors: 'isolated' (default: a watched worker process per group, launch/isolated.py),
'in-process' (debugging; groups that need their own processes still get them) and 'ray'
(launch/ray_executor.py). Job arrays pick one point before this (`--point K`, cli/tail.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.launch.kind import PointKind, Progress
from llmbench.measure.observers import RECORD_SYNC
from llmbench.store import Record, Store, new_run_id

EXECUTORS = ("isolated", "in-process", "ray")


@dataclass
class SweepResult:
    run_id: str
    results_dir: Path
    records: list[Record] = field(default_factory=list)
    skipped: int = 0
    #: with --resume: the stored records of the skipped points, so a summary covers the sweep
    earlier: list[Record] = field(default_factory=list)

    @property
    def failed(self) -> list[Record]:
        return [r for r in self.records if r.status == "failed"]


def run_sweep(kind: PointKind, points: list, results: Path, *, executor: str = "isolated",
              run_id: str | None = None, resume: bool = False, redo_failed: bool = False,
              progress: Progress | None = None) -> SweepResult:
    if executor not in EXECUTORS:
        raise ValueError(f"executor {executor!r} is not one of {EXECUTORS}")
    # nothing runs unless every point can; a Ray driver checks devices against its cluster
    ctx = kind.prepare(points, local_devices=executor != "ray")
    store = Store(Path(results).resolve() if executor == "ray" else results)
    say = progress or (lambda *a: None)
    result, todo = start(points, store, run_id, resume=resume, redo_failed=redo_failed, say=say)
    groups = group_points(kind, todo)
    if executor == "ray":
        from llmbench.launch.ray_executor import run_groups_ray

        result.records = run_groups_ray(kind, groups, ctx, result.run_id, store, say)
    else:
        from llmbench.launch.isolated import run_group_isolated

        for group in groups:
            local = executor == "in-process" and kind.in_process_ok(group)
            runner = run_group if local else run_group_isolated
            result.records.extend(runner(kind, group, ctx, result.run_id, store, say))
    result.records = kind.finish(store, result.records)
    from llmbench.store.index import write_sidecar

    write_sidecar(store.run_dir(result.run_id))  # after finish: it may rewrite the run's records
    return result


def start(points: list, store: Store, run_id: str | None, *, resume: bool, redo_failed: bool,
          say: Progress) -> tuple[SweepResult, list]:
    """The sweep's result holder and the points still to run. --resume without a run id
    continues the run that last stored one of these points; skipped points are reported to
    `say` ("skip") so progress counts the whole sweep."""
    if run_id is None and (resume or redo_failed):
        run_id = resume_run_id(store, points)
    result = SweepResult(run_id or new_run_id(), store.root)
    todo, result.skipped = pending(points, store, resume=resume, redo_failed=redo_failed)
    if result.skipped:
        left = {p.key for p in todo}
        skipped = [p for p in points if p.key not in left]
        newest = _newest_records(store, {p.key for p in skipped})
        result.earlier = [newest[p.key] for p in skipped if p.key in newest]
        for p in skipped:
            say("skip", p, 0)
    return result, todo


def _newest_records(store: Store, keys: set[str]) -> dict[str, Record]:
    newest: dict[str, dict] = {}
    for _, d in store.raw():
        k = d.get("point_key")
        if k in keys and str(d.get("created_at", "")) >= str(newest.get(k, {}).get("created_at", "")):
            newest[k] = d
    return {k: Record.model_validate(d) for k, d in newest.items()}


def resume_run_id(store: Store, points: list) -> str | None:
    """The run that most recently stored a record of one of these points (None: no such run)."""
    keys = {p.key for p in points}
    best: tuple[str, str] | None = None
    for _, d in store.raw():
        if d.get("point_key") in keys:
            cand = (str(d.get("created_at", "")), str(d.get("run_id")))
            best = cand if best is None or cand > best else best
    return best[1] if best else None


def stored_count(store: Store, points: list) -> int:
    """How many of these points have a record in the store (any status)."""
    done = store.done_keys(include_failed=True)
    return sum(p.key in done for p in points)


def pending(points: list, store: Store, *, resume: bool, redo_failed: bool) -> tuple[list, int]:
    """The points still to run and how many were skipped. --redo-failed implies --resume."""
    if not (resume or redo_failed):
        return points, 0
    done = store.done_keys(include_failed=not redo_failed)
    todo = [p for p in points if p.key not in done]
    return todo, len(points) - len(todo)


def group_points(kind: PointKind, points: list) -> list[list]:
    """Points sharing a load key, in sweep order: one load per group."""
    groups: dict[Any, list] = {}
    for p in points:
        groups.setdefault(kind.load_key(p), []).append(p)
    return list(groups.values())


def run_group(kind: PointKind, group: list, ctx: Any, run_id: str, store: Store, say: Progress,
              before_point: Callable[[Any], None] | None = None,
              on_record: Callable[[Record, Path], None] | None = None) -> list[Record]:
    """Run one group in this process (inside a worker, or --in-process) and write each record
    the moment its point is finished: the one place a measured record is written. A record's
    fsyncs run on the store's sync thread while the next point starts (Store.write's
    sync_later); the group's records are all durable when this returns."""
    records = []
    try:
        for p, rec in kind.run_group(group, ctx, run_id, say, before_point):
            rec.observers.setdefault("record_sync", RECORD_SYNC)
            path = store.write(rec, sync_later=True)
            records.append(rec)
            if on_record:
                on_record(rec, path)
            say("done", p, 0)
    finally:
        store.flush()
    return records
