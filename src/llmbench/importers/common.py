"""What every importer shares (the seven tools of registry.TOOLS, the published study among them):
tolerant reading of numbers, metric stats from a tool's summary or raw samples, provenance
(`source`: tool, version, file:line), the tool's own headline figures (`tool_figures`), the
client-bunching check of pooled token gaps, and a report of what could not be read. An
importer never invents a value: a field it cannot read is absent from the record and named in
the report.

The protocol: an importer module has `TOOL`, `parse(path, backend=, hardware=, version=) ->
ImportResult`, and `sniff(doc)` (a parsed JSON document) and/or `sniff_path(path)`;
`OUTPUT_FILES` names the files of the tool's output directory it reads, preferred first, so
that the directory imports as one unit. registry.py dispatches; registry.import_path writes."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.measure.metric_stats import MetricStats
from llmbench.store.record import Record


@dataclass
class ImportResult:
    tool: str
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)    # "file:line: what could not be read"
    counts: dict[str, int] = field(default_factory=dict)  # the importer's own tallies ("rows read")
    remarks: list[str] = field(default_factory=list)      # read but not imported (columns, ...)
    # True: a re-import replaces the file's run (one run id per file content); False: the
    # records keep their own run ids (an llmbench export) and those already stored are skipped
    replace: bool = True

    def lines(self) -> list[str]:
        flagged = sum(1 for r in self.records if r.notes)
        out = [f"tool: {self.tool}", *(f"{k}: {v}" for k, v in self.counts.items()),
               f"imported: {len(self.records)} records",
               f"flagged: {flagged} records carry notes (metric definitions that differ)",
               f"not read: {len(self.problems)}"]
        return out + [f"  {p}" for p in self.problems] + [f"  {r}" for r in self.remarks]


class Unreadable(ValueError):
    """The file is not this tool's format at all (nothing to import)."""


def num(v: Any) -> float | None:
    """A finite number, else None (bools, strings, NaN and inf are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def num_text(v: str | None) -> float | None:
    """A finite number written as text (a CSV cell), else None ('', 'nan', 'none', words)."""
    if v is None:
        return None
    try:
        x = float(v.strip())
    except ValueError:
        return None
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
    """A single value (a tool's whole-run figure): n = 1, no spread; every percentile is it."""
    if v is None:
        return None
    return MetricStats(unit=unit, n=1, mean=v, median=v, p50=v, p90=v, p95=v, p99=v, min=v,
                       max=v, std=0.0)


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


def tool_figure(rec: Record, ours: str, stats: MetricStats | None, label: str) -> None:
    """Keep one of the tool's headline figures as the tool reported it (its own statistics,
    scaled into the record's unit) under the name of the llmbench metric it stands beside;
    `label` says what the tool measured and how that differs from llmbench's definition."""
    if stats is not None:
        stats.label = label  # type: ignore[attr-defined]  (MetricStats is open)
        rec.tool_figures[ours] = stats


# -- ITL when the client falls behind ----------------------------------------------------------
# A client stamps a token when it reads it. When it falls behind, several SSE events wait in one
# network read and get one timestamp: gaps of zero, the long gap before them standing for several
# tokens. Pooled per-token gaps then describe the client's reads, not the server's decode: the
# ITL median of such a run can be 0 while the server's per-token time (TPOT) is milliseconds.
ZERO_GAP_S = 1e-6               # below a microsecond: one read (no server emits tokens this fast)
CLIENT_LIMITED_ZERO_SHARE = 0.05  # from 5% zero gaps on, the ITL's low tail is the client's


def mark_bunching(rec: Record, name: str, raw_gaps_s: list[float], tool: str) -> None:
    """Flag metric `name` (pooled gaps) as client-limited when too many raw arrival gaps are zero.
    Sets `zero_gap_share` and `client_limited` on the metric and a note; never drops the gaps."""
    m = rec.metrics.get(name)
    if m is None or not raw_gaps_s:
        return
    zeros = sum(1 for g in raw_gaps_s if g < ZERO_GAP_S)
    share = zeros / len(raw_gaps_s)
    m.zero_gap_share = share  # type: ignore[attr-defined]
    m.client_limited = share >= CLIENT_LIMITED_ZERO_SHARE  # type: ignore[attr-defined]
    if m.client_limited:  # type: ignore[attr-defined]
        rec.notes.append(
            f"{name} client-limited: {zeros} of {len(raw_gaps_s)} gaps ({share:.1%}) are zero, "
            f"tokens {tool} read together (it fell behind the stream); these gaps are the "
            "client's reads, not the server's decode: read tpot_s (per request) for the server")
