"""Small helpers shared by the command modules."""

from __future__ import annotations

import sys

from rich.console import Console

console = Console(stderr=True)
# Tables are wide; when piped (CI logs, files) rich would squeeze them to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)


def fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def pm(stats, scale: float = 1.0, digits: int = 3) -> str:
    """'mean ± std' of a MetricStats (or '-')."""
    if stats is None or stats.mean is None:
        return "-"
    s = fmt(stats.mean * scale, digits)
    if stats.n and stats.n > 1 and stats.std:
        s += f" ± {fmt(stats.std * scale, 2)}"
    return s
