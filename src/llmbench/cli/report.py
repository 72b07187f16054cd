from __future__ import annotations

from pathlib import Path

import typer

from llmbench.cli.common import console, out
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    out_dir: Path = typer.Option(Path("llmbench-report"), "--out", help="where to write the report"),
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
    rep = write_report(results, out_dir, png=png)
    for n in rep.notes:
        console.print(f"[yellow]note:[/] {n}")
    if rep.pngs:
        console.print(f"{len(rep.pngs)} PNG figure(s) in {rep.pngs[0].parent}")
    console.print(f"report written in {rep.seconds:.1f} s")
    out.print(str(rep.html.resolve()))
