"""What every tool importer shares: tolerant reading of numbers, metric stats from a tool's
summary or raw samples, provenance (`source`: tool, version, file:line), and a report of what
could not be read. An importer never invents a value: a field it cannot read is absent from
the record and named in the report."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.store.record import MetricStats, Record


@dataclass
class ImportResult:
    tool: str
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)    # "file:line: what could not be read"
    # True: a re-import replaces the file's run (one run id per file content); False: the
    # records keep their own run ids (an llmbench export) and those already stored are skipped
    replace: bool = True

    def lines(self) -> list[str]:
        flagged = sum(1 for r in self.records if r.notes)
        out = [f"tool: {self.tool}", f"imported: {len(self.records)} records",
               f"flagged: {flagged} records carry notes (metric definitions that differ)",
               f"not read: {len(self.problems)}"]
        return out + [f"  {p}" for p in self.problems]


class Unreadable(ValueError):
    """The file is not this tool's format at all (nothing to import)."""


def num(v: Any) -> float | None:
    """A finite number, else None (bools, strings, NaN and inf are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def numbers(vs: Any) -> list[float] | None:
    """A list of finite numbers, or None when `vs` is not a list or holds anything else."""
    if not isinstance(vs, list):
        return None
    out = [num(v) for v in vs]
    return None if any(x is None for x in out) else out  # type: ignore[return-value]


# Above this many values the 95% interval of the mean is the normal approximation
# (mean ± 1.96 s/sqrt(n)), which the percentile bootstrap converges to at such n: 2000
# resamples of a 1.5M-gap ITL pool would take minutes (benchmarks/import_scale.py).
BOOTSTRAP_MAX_N = 5000


def from_samples(values: list[float], unit: str, scale: float = 1.0) -> MetricStats | None:
    import numpy as np

    if not values:
        return None
    with np.errstate(all="ignore"):  # overflow is caught below, not warned about
        m = _stats(values, unit, scale)
    # absurd values (1e308) overflow the spread: such a metric is unreadable, not infinite
    if any(v is not None and not math.isfinite(v) for v in (m.mean, m.std, m.ci95_low, m.ci95_high)):
        return None
    return m


def _stats(values: list[float], unit: str, scale: float) -> MetricStats:
    import numpy as np

    from llmbench.measure.stats import MAX_SAMPLES_KEPT, summarize

    if len(values) <= BOOTSTRAP_MAX_N:
        m = summarize([v * scale for v in values], unit)
    else:
        arr = np.asarray(values, dtype=float) * scale
        p50, p90, p95, p99 = (float(x) for x in np.percentile(arr, [50, 90, 95, 99]))
        mean, std = float(arr.mean()), float(arr.std(ddof=1))
        half = 1.959964 * std / math.sqrt(arr.size)
        m = MetricStats(unit=unit, n=int(arr.size), mean=mean, median=p50, p50=p50, p90=p90,
                        p95=p95, p99=p99, min=float(arr.min()), max=float(arr.max()), std=std,
                        ci95_low=mean - half, ci95_high=mean + half,
                        samples=arr[:MAX_SAMPLES_KEPT].tolist())
    return m


def one(v: float | None, unit: str) -> MetricStats | None:
    """A single value (a tool's whole-run figure): n = 1, no spread."""
    if v is None:
        return None
    return MetricStats(unit=unit, n=1, mean=v, median=v, p50=v, min=v, max=v, std=0.0)


def from_summary(unit: str, scale: float = 1.0, n: int | None = None, **stats: Any) -> MetricStats | None:
    """MetricStats from a tool's own summary numbers (mean, median, std, p90, ...), scaled into
    the record's unit; stats the tool did not give stay None. None when there is no mean."""
    vals = {k: (x * scale if (x := num(v)) is not None else None) for k, v in stats.items()}
    if vals.get("std") is not None:
        vals["std"] = abs(vals["std"])
    if vals.get("mean") is None:
        return None
    if vals.get("median") is None and vals.get("p50") is not None:
        vals["median"] = vals["p50"]
    if vals.get("p50") is None and vals.get("median") is not None:
        vals["p50"] = vals["median"]
    return MetricStats(unit=unit, n=n if n is not None else 1, **vals)


def dig(d: Any, *keys: str | int) -> Any:
    """d[k1][k2]... where each step exists and has the right type (dict key, list index), else
    None: a malformed file never raises here."""
    for k in keys:
        if isinstance(k, int):
            d = d[k] if isinstance(d, list) and -len(d) <= k < len(d) else None
        else:
            d = d.get(k) if isinstance(d, dict) else None
    return d


def load_json(path: Path) -> tuple[Any, str]:
    text = path.read_text(errors="replace")
    try:
        return json.loads(text), text
    except ValueError as e:
        raise Unreadable(f"{path}: not JSON ({e})") from None


def run_id_for(tool: str, text: str) -> str:
    """One run id per imported file content: re-importing the same file replaces it."""
    return f"{tool}-{hashlib.sha256(text.encode(errors='replace')).hexdigest()[:10]}"


def source(tool: str, version: str | None, path: Path, line: int = 1, **extra: Any) -> dict:
    return {"tool": tool, "version": version, "file": str(path), "line": line,
            "at": f"{path}:{line}", **extra}


def line_of(text: str, needle: str, start: int = 0) -> int:
    """1-based line of the first `needle` at or after character `start` (1 when absent)."""
    i = text.find(needle, start)
    return 1 if i < 0 else text.count("\n", 0, i) + 1
