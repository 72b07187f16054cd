"""`llmbench export parquet DIR OUT` and `llmbench export mlflow DIR --tracking-uri URI`:
the store's records out to the tools teams keep their experiments in (exporters/)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.cli.common import out
from llmbench.errors import SpecError

export_app = typer.Typer(no_args_is_help=True, help="Export stored records to Parquet or MLflow.")


def register(app: typer.Typer) -> None:
    app.add_typer(export_app, name="export")


def _store(results: Path):
    from llmbench.store.store import Store

    if not results.is_dir():
        raise SpecError([("DIR", f"{results} is not a results directory")])
    return Store(results)


@export_app.command("parquet")
def parquet(
    results: Path = typer.Argument(..., help="results directory"),
    dest: Path = typer.Argument(..., help="the Parquet file to write"),
    where: Optional[str] = typer.Option(None, "--where", help="SQL filter over the flat "
                                        "columns, as in `llmbench results --where`"),
) -> None:
    """One flat row per record (the columns of `llmbench results --format csv`) plus the whole
    record as JSON (`record_json`): `llmbench import parquet OUT` gives the records back."""
    from llmbench.exporters.parquet import export_parquet

    if dest.is_dir():
        raise SpecError([("OUT", f"{dest} is a directory; name the file to write, e.g. "
                          f"{dest / 'records.parquet'}")])
    n = export_parquet(_store(results), dest, where)
    out.print(f"wrote {n} records to {dest}", highlight=False)


@export_app.command("mlflow")
def mlflow(
    results: Path = typer.Argument(..., help="results directory"),
    tracking_uri: str = typer.Option(..., "--tracking-uri", help="the MLflow tracking server "
                                     "(http://host:port) or store URI"),
    experiment: str = typer.Option("llmbench", "--experiment", help="MLflow experiment name"),
) -> None:
    """One MLflow run per record (params: the point; metrics: medians and percentiles by
    llmbench's names; tags: source, engine, hardware, kind, status; the record as an artifact).
    Exporting the same store again updates those runs, never duplicates them."""
    try:
        from llmbench.exporters.mlflow import export_mlflow
        import mlflow  # noqa: F401
    except ImportError:
        raise SpecError([("mlflow", "the MLflow client is not installed: "
                          "pip install 'llmbench[mlflow]'")]) from None
    summary = export_mlflow(_store(results), tracking_uri, experiment)
    for line in summary.lines():
        out.print(line, highlight=False)
