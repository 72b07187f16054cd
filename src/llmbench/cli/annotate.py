"""`llmbench annotate`: stored records re-annotated with today's roofline and definitions."""

from __future__ import annotations

from pathlib import Path

import typer

from llmbench.cli.common import out
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS

# the headline figures a record's line names when they changed (the rest: --details)
HEADLINE = ("decode_tok_s", "output_throughput_tok_s", "tflops", "tokens_per_s")


def register(app: typer.Typer) -> None:
    app.command("annotate")(annotate)


def annotate(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would change; write nothing"),
    details: bool = typer.Option(False, "--details", help="list every changed field"),
) -> None:
    """Re-annotate stored records with today's roofline (bounds, efficiencies) and definitions
    (energy-window flag; every metric's statistics recomputed from its kept samples, flagged
    where it kept too few): each changed record is rewritten in place with an `annotations`
    entry saying what changed, from which version, and the values it replaced. Measured
    samples are never touched."""
    from llmbench.definitions import DEFINITIONS_VERSION, ROOFLINE_VERSION
    from llmbench.reannotate import reannotate_store

    if not results.is_dir():
        raise SpecError([("--results", f"{results} is not a results directory")])
    n, changes = reannotate_store(results, write=not dry_run)
    for ch in changes:
        rel = ch.path.relative_to(results) if ch.path.is_relative_to(results) else ch.path
        out.print(f"{rel}: {_line(ch)}", markup=False, highlight=False, soft_wrap=True)
        if details:
            for c in ch.changed:
                out.print(f"    {c}", markup=False, highlight=False, soft_wrap=True)
    figures = sum(bool(ch.roofline_figures) for ch in changes)
    flagged = sum(ch.energy_flagged for ch in changes)
    verb = "would be re-annotated" if dry_run else "re-annotated"
    out.print(f"{n} record(s) read in {results}: {len(changes)} {verb} to roofline version "
              f"{ROOFLINE_VERSION} and definitions version {DEFINITIONS_VERSION} (roofline "
              f"figures changed in {figures}; energy windows newly flagged under 2 s: {flagged}), "
              f"{n - len(changes)} already current; measured samples untouched"
              + ("; nothing written (--dry-run)" if dry_run else ""),
              markup=False, highlight=False, soft_wrap=True)
    out.print(_statistics_line(changes), markup=False, highlight=False, soft_wrap=True)


def _statistics_line(changes) -> str:
    """The statistics recomputed from kept samples, counted by cause, and the metrics flagged
    because their record kept too few samples."""
    parts = []
    for cause, what in (("ci95", "only the ci95 differed (the replaced bootstrap interval)"),
                        ("statistics", "other statistics differed")):
        recs = [ch for ch in changes if ch.restated_by_cause.get(cause)]
        metrics = sum(len(ch.restated_by_cause[cause]) for ch in recs)
        parts.append(f"{what}: {metrics} metric(s) in {len(recs)} record(s)")
    unre = [ch for ch in changes if ch.unrecomputable]
    parts.append(f"newly flagged not recomputable (too few samples kept): "
                 f"{sum(len(ch.unrecomputable) for ch in unre)} metric(s) in {len(unre)} record(s)")
    return "statistics recomputed from kept samples: " + "; ".join(parts)


def _line(ch) -> str:
    """One record's change: its roofline figures (the headline ones named), its energy flag."""
    parts = [f"{ch.record.kind} {ch.record.model.name}"]
    figs = ch.roofline_figures
    if figs:
        heads = [c.removeprefix("roofline.") for c in figs
                 if c.split(":")[0].rsplit(".", 1)[-1] in HEADLINE]
        parts.append(f"roofline {ch.roofline_from} -> {ch.roofline_to}: {len(figs)} figure(s) "
                     "changed" + (f" ({'; '.join(heads)})" if heads else ""))
    elif ch.roofline_to:
        parts.append(f"roofline figures already version {ch.roofline_to}'s (version stamped)")
    if ch.energy_flagged:
        parts.append(f"energy window {ch.energy_window_s:.2f} s under 2 s: flagged")
    for cause, names in ch.restated_by_cause.items():
        parts.append(f"{cause} recomputed from samples: {', '.join(names)}")
    if ch.unrecomputable:
        parts.append(f"not recomputable (samples not kept): {', '.join(ch.unrecomputable)}")
    return "; ".join(parts)
