"""`llmbench import TOOL|auto PATH`: another tool's result file or output directory
(docs/importing.md), or the published study (`llm-inference-bench DIR`), into the store."""

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


def _tool_command(tool: str):
    def cmd(
        path: Path = typer.Argument(..., help="the tool's result file or output directory "
                                    "(llm-inference-bench: a copy of argonne-lcf/LLM-Inference-Bench's "
                                    "data, the Plots/ and gh-pages/docs/data/ CSVs)"),
        results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
        backend: Optional[str] = typer.Option(None, "--backend", help="the engine that was measured "
                                              "(most tools' files do not say)"),
        hardware: Optional[str] = typer.Option(None, "--hardware", help="the hardware it ran on"),
        version: Optional[str] = typer.Option(None, "--engine-version", help="the engine's version"),
        no_roofline: bool = typer.Option(False, "--no-roofline", help="skip the roofline bounds"),
    ) -> None:
        from llmbench.importers.registry import import_path

        if not path.exists():
            raise SpecError([("PATH", f"{path} does not exist")])
        r = import_path(tool, path, results, annotate=not no_roofline, backend=backend,
                        hardware=hardware, version=version)
        for line in r.result.lines():
            typer.echo(line)
        if not r.result.records:
            return
        out.print(f"with roofline: {r.with_roofline} of {len(r.result.records)} records", highlight=False)
        if r.replaced:
            out.print(f"replaced {r.replaced} records of the previous import", highlight=False)
        where = ", ".join(f"{d} (run id {d.name})" for d in r.run_dirs)
        out.print(f"wrote {where} in {r.parse_s + r.roofline_s + r.write_s:.2f} s (parse "
                  f"{r.parse_s:.2f} s, roofline {r.roofline_s:.2f} s, write {r.write_s:.2f} s)",
                  highlight=False)

    cmd.__doc__ = ("Detect the tool from the file or directory and import it." if tool == "auto" else
                   "Read every CSV under the directory into `kind: reference` records (run id "
                   "llm-inference-bench); a re-import replaces the previous one."
                   if tool == "llm-inference-bench" else
                   f"Import a result file or output directory of {tool} as ordinary records "
                   "(docs/importing.md).")
    return cmd


def _register_tools() -> None:
    from llmbench.importers.registry import TOOLS

    for tool in (*TOOLS, "auto"):
        import_app.command(tool)(_tool_command(tool))


_register_tools()
