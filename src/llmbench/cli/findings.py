"""`llmbench findings`: the study's findings re-tested on this hardware (analysis/findings.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("findings")(findings)


def findings(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="your records"),
    reference: Optional[Path] = typer.Option(
        None, "--reference", help="the study: an imported results directory (llmbench import "
        "llm-inference-bench) or the published data directory itself; default: --results"),
    hardware: Optional[str] = typer.Option(None, "--hardware", help="whose records (the hardware name "
                                           "as `llmbench results` shows it); default: the one with "
                                           "the most records"),
    format: str = typer.Option("text", "--format", help="text | markdown | json"),
) -> None:
    """Each of LLM-Inference-Bench's findings: the published figure, the same quantity from the
    study's data and from your records, each against its own hardware's roofline, the GPU's DRAM
    counter beside the bound, which run(s) each own figure comes from, and a verdict from the
    claim's parts: holds, partly holds (which part), contradicted, untested (why)."""
    from llmbench.analysis import findings as fmod

    if format not in ("text", "markdown", "json"):
        raise SpecError([("--format", f"{format!r} is not one of text, markdown, json")])
    for name, p in (("--results", results), ("--reference", reference)):
        if p is not None and not p.is_dir():
            raise SpecError([(name, f"{p} is not a directory")])
    fs = fmod.load(results, reference, hardware)
    if format == "json":
        sys.stdout.write(json.dumps([f.as_dict() for f in fs], indent=1, default=str) + "\n")
    elif format == "markdown":
        sys.stdout.write(fmod.markdown(fs))
    else:
        sys.stdout.write(fmod.text(fs) + "\n")
