"""`llmbench findings`: the study's findings re-tested on this hardware (analysis/findings.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from llmbench.errors import SpecError, did_you_mean
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
    if hardware is not None:
        _check_hardware(results, hardware)
    fs = fmod.load(results, reference, hardware)
    if format == "json":
        sys.stdout.write(json.dumps([f.as_dict() for f in fs], indent=1, default=str) + "\n")
    elif format == "markdown":
        sys.stdout.write(fmod.markdown(fs))
    else:
        sys.stdout.write(fmod.text(fs) + "\n")


def _check_hardware(results: Path, hardware: str) -> None:
    """A --hardware that names none of the own records' hardware is a usage error (every
    finding would read 'not measured'), with the nearest name."""
    from llmbench.store.store import Store

    rel = Store(results).query("kind = 'inference' AND source_tool IS NULL AND hardware IS NOT NULL")
    names = sorted({r[0] for r in rel.select("hardware").fetchall()})
    if hardware not in names:
        raise SpecError([("--hardware", f"no records for hardware {hardware!r} in {results}"
                          f"{did_you_mean(hardware, names, n=3)}"
                          + (f"; the records' hardware: {', '.join(names)}" if names else ""))])
