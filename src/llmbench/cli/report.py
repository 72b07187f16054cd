from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.cli.common import console, out
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    out_dir: Path = typer.Option(Path("llmbench-report"), "--out", help="where to write the report"),
    reference: Optional[Path] = typer.Option(
        None, "--reference", help="the study, for the findings section: an imported results "
        "directory (llmbench import llm-inference-bench) or the published data directory itself "
        "(as `llmbench findings --reference`); default: --results"),
    png: bool = typer.Option(True, "--png/--no-png", help="also write figures/<name>.png"),
) -> None:
    """Write a self-contained offline HTML report (plus PNG figures) of every stored result."""
    try:
        from llmbench.report.html import write_report
    except ImportError as e:
        raise SpecError([("report", f"needs the dashboard extra ({e.name} is missing): "
                          "pip install 'llmbench[dashboard]'")]) from None
    if not results.exists():
        raise SpecError([("--results", f"{results} does not exist")])
    if reference is not None and not reference.is_dir():
        raise SpecError([("--reference", f"{reference} is not a directory")])
    old = out_dir / "index.html"
    if old.exists():  # `make run` writes the default folder too: never replaced unsaid
        import datetime

        when = datetime.datetime.fromtimestamp(old.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        console.print(f"[yellow]note:[/] replacing the report in {out_dir} (written {when}); "
                      "--out DIR writes one elsewhere", highlight=False)
    rep = write_report(results, out_dir, png=png, reference=reference)
    for n in rep.notes:
        console.print(f"[yellow]note:[/] {n}")
    if rep.pngs:
        console.print(f"{len(rep.pngs)} PNG figure(s) in {rep.pngs[0].parent}")
    console.print(f"report written in {rep.seconds:.1f} s")
    out.print(str(rep.html.resolve()))
