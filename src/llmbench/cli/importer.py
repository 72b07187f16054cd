"""`llmbench import llm-inference-bench DIR`: the published data, normalised, into the store."""

from __future__ import annotations

from pathlib import Path

import typer

from llmbench.cli.common import out
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS

import_app = typer.Typer(no_args_is_help=True, help="Import external result data as reference records.")


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")


@import_app.command("llm-inference-bench")
def llm_inference_bench(
    src: Path = typer.Argument(..., help="a copy of argonne-lcf/LLM-Inference-Bench's data "
                               "(the Plots/ and gh-pages/docs/data/ CSVs)"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    no_roofline: bool = typer.Option(False, "--no-roofline", help="skip the roofline bounds"),
) -> None:
    """Read every CSV under SRC into `kind: reference` records (run id llm-inference-bench);
    a re-import replaces the previous one. Prints rows read, imported, flagged."""
    from llmbench.importers import import_llm_inference_bench

    if not src.is_dir():
        raise SpecError([("DIR", f"{src} is not a directory")])
    if not any(src.rglob("*.csv")):
        raise SpecError([("DIR", f"no CSV files under {src}")])
    r = import_llm_inference_bench(src, results, annotate=not no_roofline)
    for line in r["report"].lines():
        typer.echo(line)
    out.print(f"with roofline: {r['with_roofline']} of {r['records']} records", highlight=False)
    if r["replaced"]:
        out.print(f"replaced {r['replaced']} records of the previous import", highlight=False)
    out.print(f"wrote {r['dir']} in {r['total_s']:.1f} s (parse {r['parse_s']:.1f} s, roofline "
              f"{r['roofline_s']:.1f} s, write {r['write_s']:.1f} s)", highlight=False)
