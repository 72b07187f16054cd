"""`llmbench import llm-inference-bench DIR` (the published data, normalised) and
`llmbench import TOOL|auto PATH` (another tool's result file, docs/importing.md) into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

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


def _tool_command(tool: str):
    def cmd(
        path: Path = typer.Argument(..., help="the tool's result file"),
        results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
        backend: Optional[str] = typer.Option(None, "--backend", help="the engine that was measured "
                                              "(most tools' files do not say)"),
        hardware: Optional[str] = typer.Option(None, "--hardware", help="the hardware it ran on"),
        version: Optional[str] = typer.Option(None, "--engine-version", help="the engine's version"),
    ) -> None:
        from llmbench.importers.registry import import_file

        if not path.is_file():
            raise SpecError([("PATH", f"{path} is not a file")])
        res, run_dir, took_s = import_file(tool, path, results, backend=backend,
                                           hardware=hardware, version=version)
        for line in res.lines():
            typer.echo(line)
        if res.records:
            out.print(f"wrote {run_dir} in {took_s:.2f} s (run id {run_dir.name})", highlight=False)

    cmd.__doc__ = ("Detect the tool from the file and import it." if tool == "auto" else
                   f"Import a result file of {tool} as ordinary records (docs/importing.md).")
    return cmd


def _register_tools() -> None:
    from llmbench.importers.registry import TOOLS

    for tool in (*TOOLS, "auto"):
        import_app.command(tool)(_tool_command(tool))


_register_tools()
