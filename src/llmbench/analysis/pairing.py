"""Which own records one comparison reads: all from one campaign, never mixed silently.

A ratio divides two records. Taking each side as the newest record of its configuration on its
own can divide one day's run by another's (the llama.cpp Q4_0/F16 row once divided a 2026-12-01
record by a 2026-12-02 one, whose F16 figure was 7% off the same day's run). `choose` takes
every record of a comparison from one group:

1. one run (the same run_id), the newest run that holds them all;
2. failing that, one machine and day (the same env.host, the same UTC date of created_at);
3. failing both, none: the comparison stays untested and says where each side was found.

Where a comparison can use fewer configurations than it names (block sizes: any two), the
group holding the most wins; at equal counts a run before a machine-day, then the newest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Pairing:
    how: str                                # "one run" | "one machine and day" | "none"
    runs: tuple[tuple[str, str], ...] = ()  # (label, run_id) of each record used
    day: str = ""
    host: str = ""
    why: str = ""                           # how == "none": where the records were found

    def text(self) -> str:
        if self.how == "one run":
            return f"one run: {self.runs[0][1]} ({self.day})"
        if self.how == "one machine and day":
            return (f"one machine and day: host {self.host}, {self.day}: "
                    + ", ".join(f"{label} from {run}" for label, run in self.runs))
        return self.why


def day(r: dict[str, Any]) -> str:
    return str(r.get("created_at") or "")[:10]


def _newest(rows: list[dict[str, Any]]) -> str:
    return max(str(r.get("created_at") or "") for r in rows)


def choose(candidates: dict[str, list[dict[str, Any]]],
           need: int | None = None) -> tuple[dict[str, dict[str, Any]], Pairing]:
    """Records for the labels of `candidates` (label -> the rows of that configuration), at
    least `need` of them (default all) from one group; ({}, Pairing("none", why)) when no group
    holds enough."""
    need = len(candidates) if need is None else need
    groups: dict[tuple[str, Any], dict[str, dict[str, Any]]] = {}
    for label, rows in candidates.items():
        for r in rows:
            keys = [("run", r["run_id"])] if r.get("run_id") else []
            if r.get("host") and day(r):     # without a host name no two runs are one machine
                keys.append(("machine-day", (r["host"], day(r))))
            for k in keys:
                g = groups.setdefault(k, {})
                if label not in g or str(r.get("created_at") or "") > str(g[label].get("created_at") or ""):
                    g[label] = r
    enough = [(k, g) for k, g in groups.items() if len(g) >= need]
    if not enough:
        return {}, Pairing("none", why=_why_none(candidates))
    (kind, ident), g = max(enough, key=lambda kg: (len(kg[1]), kg[0][0] == "run", _newest(list(kg[1].values()))))
    picked = {label: g[label] for label in candidates if label in g}
    runs = tuple((label, str(r.get("run_id"))) for label, r in picked.items())
    if kind == "run":
        return picked, Pairing("one run", runs, day(next(iter(picked.values()))))
    host, d = ident
    return picked, Pairing("one machine and day", runs, d, host)


def _why_none(candidates: dict[str, list[dict[str, Any]]]) -> str:
    found = {label: rows for label, rows in candidates.items() if rows}
    if len(found) < len(candidates):
        missing = [label for label in candidates if label not in found]
        return "no own record of " + ", ".join(missing)
    where = "; ".join(f"{label} in " + ", ".join(sorted({f"{r.get('run_id')} ({day(r)}, host "
                                                          f"{r.get('host') or '?'})" for r in rows}))
                      for label, rows in found.items())
    return f"not paired: no one run or one machine and day holds them all ({where})"
