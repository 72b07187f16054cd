"""The one tail of every command that runs points (run, serve, train): the run id (checked
before anything runs), the point a job array picks (`--point K`), the banner, progress,
Ctrl-C (what is stored and the command that continues), the summary and the exit status
(0 every point ok, 3 some failed, 130 interrupted)."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from llmbench.cli.common import console, out
from llmbench.errors import SpecError
from llmbench.launch.kind import PointKind, Progress
from llmbench.launch.pipeline import SweepResult, resume_run_id, run_sweep, stored_count
from llmbench.store import Record, Store, new_run_id

EXIT_PARTIAL = 3       # finished, but some points failed (their records say why)
EXIT_INTERRUPTED = 130


def check_run_id(run_id: str | None) -> None:
    """A run id names a directory: no separators, no '..', nothing a shell would expand."""
    if run_id is not None and (not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", run_id)
                               or ".." in run_id):
        raise SpecError([("--run-id", f"{run_id!r} may hold only letters, digits, '.', '_' and '-'")])


def pick_point(points: list, index: int | None) -> list:
    """`--point K` (job arrays): only point K of the expanded sweep."""
    if index is None:
        return points
    if not 0 <= index < len(points):
        raise SpecError([("--point", f"{index} is out of range: the sweep has {len(points)} points "
                                     f"(0..{len(points) - 1})")])
    return [points[index]]


def run_points(command: str, kind: PointKind, points: list, results: Path, *, devices: str,
               executor: str, run_id: str | None, resume: bool, redo_failed: bool,
               summary: Callable[[SweepResult], None],
               progress: Progress | AbstractContextManager[Progress] | None = None) -> SweepResult:
    """Run the points through the pipeline, print the summary, exit 3 if a point failed.
    `progress`: the pipeline's event callback, or a context (a progress bar) that gives one."""
    store = Store(results)
    if run_id is None:  # fixed here so that an interrupted run can name it for --resume
        run_id = (resume_run_id(store, points) if resume or redo_failed else None) or new_run_id()
    console.print(f"[bold]llmbench {command}[/] {len(points)} point(s) on {devices} -> {results} "
                  f"(run {run_id})", highlight=False)
    watching = progress if isinstance(progress, AbstractContextManager) else nullcontext(progress)
    try:
        with watching as say:
            result = run_sweep(kind, points, results, executor=executor, run_id=run_id,
                               resume=resume, redo_failed=redo_failed, progress=say)
    except KeyboardInterrupt:
        # typer would turn KeyboardInterrupt into a *returned* 130 that exits 0
        console.print(f"interrupted: {stored_count(store, points)} of {len(points)} points stored in "
                      f"{results}; continue with `{resume_command(command, run_id, sys.argv)}`",
                      highlight=False, soft_wrap=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    summary(result)
    if result.failed:
        raise SystemExit(EXIT_PARTIAL)
    return result


def pipeline_executor(flag: str, isolate: bool) -> str:
    """The pipeline's executor for `--executor local|ray` and `--isolate/--in-process`."""
    if flag not in ("local", "ray"):
        raise SpecError([("--executor", f"{flag!r} is not one of: local, ray")])
    return "ray" if flag == "ray" else "isolated" if isolate else "in-process"


def outcome(result: SweepResult, name: Callable[[Record], str]) -> None:
    """The end of every summary: each failed point (`name` says which) with its error's first
    line, the points an earlier invocation stored, where the records are."""
    for r in result.failed:
        console.print(f"[red]failed[/] {name(r)}: {(r.error or '').splitlines()[0] if r.error else ''}",
                      highlight=False)
    contended(result.records, name)
    if result.skipped:
        console.print(f"skipped {result.skipped} point(s) already stored (--resume); the summary "
                      "marks them 'earlier'")
    out.print(f"results: {result.results_dir.resolve()} (run {result.run_id}); "
              f"query with: llmbench results --results {result.results_dir}", highlight=False)


def contended(records: list[Record], name: Callable[[Record], str]) -> None:
    """Every command that measures says which of its points other work shared the machine
    with (measure/contention.py), and how much: a contended figure never passes as clean."""
    hit = [r for r in records if ((r.env or {}).get("contention") or {}).get("contended")]
    if not hit:
        return
    console.print(f"[yellow]contended[/] {len(hit)} of {len(records)} point(s): other work shared "
                  "the machine while they were measured (their records and `llmbench results` "
                  "mark them):", highlight=False)
    for r in hit:
        console.print(f"  {name(r)}: " + "; ".join(r.env["contention"].get("reasons") or []),
                      highlight=False)


def resume_command(command: str, run_id: str, argv: list[str]) -> str:
    """The user's command line (argv[1:], `command` first), with --resume and this run's id
    added if missing: what continues an interrupted sweep."""
    args = argv[1:] if argv[1:2] == [command] else [command, *argv[1:]]
    if not any(a == "--resume" or a == "--redo-failed" for a in args):
        args = [*args, "--resume"]
    if not any(a == "--run-id" or a.startswith("--run-id=") for a in args):
        args = [*args, "--run-id", run_id]
    return shlex.join(["llmbench", *args])
