"""Small helpers shared by the command modules."""

from __future__ import annotations

import sys

from rich.console import Console

from llmbench.numfmt import fmt  # noqa: F401 - re-exported for the commands

console = Console(stderr=True)
# Tables are wide; when piped (CI logs, files) rich would squeeze them to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)


def pm(stats, scale: float = 1.0, digits: int = 3) -> str:
    """'mean ± std' of a MetricStats (or '-')."""
    if stats is None or stats.mean is None:
        return "-"
    s = fmt(stats.mean * scale, digits)
    if stats.n and stats.n > 1 and stats.std:
        s += f" ± {fmt(stats.std * scale, 2)}"
    return s
