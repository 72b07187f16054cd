"""`llmbench index`: every directory of a store given its sidecar (store/sidecar.py), so that a
store copied in, or written before sidecars, opens as fast as one llmbench's writer left."""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from llmbench.cli.common import console, out
from llmbench.cli.tail import EXIT_PARTIAL
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("index")(index)


def index(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
) -> None:
    """Give every run directory of the store its sidecar (`.llmbench-rows.arrow`: its records'
    index rows), as llmbench's writer does when a run ends, so that a cold open of the dashboard
    or report reads them instead of parsing every record. Incremental: a directory whose sidecar
    covers its records is left as it is. Record files are never changed; a file that is no
    record is left uncovered; a directory that cannot be indexed is a warning and exit status
    3, and the others are indexed."""
    from llmbench.store.index import record_dirs, write_sidecar

    if not results.is_dir():
        raise SpecError([("--results", f"{results} is not a results directory (it does not exist)"
                          if not results.exists() else f"{results} is not a directory")])
    t0 = time.perf_counter()
    dirs = record_dirs(results)
    runs = records = current = 0
    failed = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        with Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("directories"), TimeElapsedColumn(), console=console,
                      transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("", total=len(dirs))
            for d in dirs:
                done = write_sidecar(d)
                bar.advance(task)
                if done is None:
                    failed.append(d)
                elif done[0]:
                    runs += 1
                    records += done[0]
                    current += not done[1]
    for msg in dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning):
        print(f"llmbench: warning: {msg}", file=sys.stderr)
    out.print(f"{runs:,} run director{'y' if runs == 1 else 'ies'} in {results} indexed: "
              f"{records:,} records covered by their sidecars, {current:,} already current, "
              f"{runs - current:,} written"
              + (f"; {len(failed):,} could not be indexed (warnings above; their records are "
                 "parsed on each cold open)" if failed else "")
              + f"; {time.perf_counter() - t0:.1f} s", markup=False, highlight=False, soft_wrap=True)
    if failed:
        raise SystemExit(EXIT_PARTIAL)
