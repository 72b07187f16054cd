"""Stored records brought to today's definitions (`llmbench annotate`), measurements untouched.

For each record: the roofline is computed again (roofline.annotate, today's ROOFLINE_VERSION)
when today's catalogs can bound it (a record they cannot, e.g. a local model whose files are
gone, keeps its stored roofline), and today's derived flags are applied (definitions.stamp).
What changed is appended to the record's `annotations`: when, by which llmbench, from and to
which versions, every changed field (old -> new), and the replaced roofline, power fields and
notes, so no stored figure is lost. Each metric's statistics are recomputed from the samples
it keeps (definitions.restated) and rewritten where they differ, the replaced figures kept in
the entry; a metric without its samples is flagged (definitions.flag_unrecomputable) and left
as measured. Nothing else of a metric may change: its samples, n and unit are compared before
and after and must be identical. A record that would change nowhere is left as it is.
A training record whose matmul peak is one measurement (before peaks.py's timed windows) gets
a note that its spread is unknown, with the range the store's runs of the same hardware and
precision read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.definitions import (DEFINITIONS_VERSION, ROOFLINE_VERSION, definitions_version_of,
                                  roofline_version_of)
from llmbench.store.record import Record


@dataclass
class Change:
    path: Path
    record: Record                     # the record as it would be stored
    changed: list[str] = field(default_factory=list)   # "field: old -> new", figures
    roofline_from: str | None = None
    roofline_to: str | None = None
    definitions_from: str = ""
    energy_flagged: bool = False       # newly flagged as a short energy window
    # metric -> its statistics rewritten from its samples ("ci95_low", ...)
    restated: dict[str, list[str]] = field(default_factory=dict)
    unrecomputable: list[str] = field(default_factory=list)   # newly flagged: samples not kept

    @property
    def restated_by_cause(self) -> dict[str, list[str]]:
        """The restated metrics by cause: "ci95" (only the interval differed: the replaced
        bootstrap) or "statistics" (another figure differed too)."""
        out: dict[str, list[str]] = {}
        for name, stats in self.restated.items():
            cause = "ci95" if set(stats) <= {"ci95_low", "ci95_high"} else "statistics"
            out.setdefault(cause, []).append(name)
        return out

    @property
    def roofline_figures(self) -> list[str]:
        """The changed bounds, efficiencies and binding resource (not a version stamp, a note)."""
        return [c for c in self.changed if c.startswith(
            ("roofline.bound.", "roofline.efficiency.", "roofline.binding_resource:"))]

    @property
    def energy_window_s(self) -> float | None:
        return self.record.power.get("energy_window_s")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or a == b
    return a == b


def _show(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _diff(prefix: str, old: dict[str, Any], new: dict[str, Any], out: list[str]) -> None:
    for k in sorted(set(old) | set(new), key=str):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) or isinstance(b, dict):
            _diff(f"{prefix}{k}.", a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}, out)
        elif not _same(a, b):
            out.append(f"{prefix}{k}: {_show(a)} -> {_show(b)}")


def peak_note(rec: Record, peaks: dict[tuple, list[float]] | None = None) -> str | None:
    """For a training record whose matmul peak is one measurement (before timed windows): its
    spread is unknown; say so, with the range the store's other runs of the same hardware and
    precision read (`peaks`: (hardware, precision) -> their peaks, TFLOP/s)."""
    pk = rec.metrics.get("matmul_peak_tflops")
    if rec.kind != "training" or pk is None or pk.n != 1 or "mfu_measured_peak" not in rec.metrics:
        return None
    note = ("mfu_measured_peak divides by one matmul-peak measurement (a median of 20 products, "
            "before timed windows): its spread is unknown")
    key = (rec.hardware.name, (rec.workload or {}).get("precision"))
    got = sorted((peaks or {}).get(key, []))
    if len(got) > 1:
        mid = got[len(got) // 2] if len(got) % 2 else (got[len(got) // 2 - 1] + got[len(got) // 2]) / 2
        dev = max(abs(v - mid) for v in got) / mid
        note += (f"; this store's {len(got)} {key[0]} {key[1]} runs read {got[0]:.0f}-{got[-1]:.0f} "
                 f"TFLOP/s (+-{dev:.1%} about their median {mid:.0f})")
    return note


def restate_statistics(rec: Record) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """Recompute every sample summary's statistics from its kept samples, in place: (metric ->
    the statistics that differed, metric -> their stored values)."""
    from llmbench.definitions import STATISTICS, is_sample_summary, restated

    changed, previous = {}, {}
    for name, m in rec.metrics.items():
        if not is_sample_summary(rec, m) or (fresh := restated(m)) is None:
            continue
        diff = [k for k in STATISTICS if not _same(getattr(m, k), getattr(fresh, k))]
        if diff:
            changed[name] = diff
            previous[name] = {k: getattr(m, k) for k in diff}
            rec.metrics[name] = fresh
    return changed, previous


def _measured(metrics: dict[str, Any]) -> dict[str, Any]:
    """A dumped metrics section less what annotate may rewrite (statistics, the flag)."""
    from llmbench.definitions import STATISTICS

    return {name: {k: v for k, v in m.items() if k not in STATISTICS and k != "recomputable"}
            for name, m in metrics.items()}


def reannotate(rec: Record, path: Path, *, now: str | None = None,
               peaks: dict[tuple, list[float]] | None = None) -> Change | None:
    """The record under today's definitions, with its history entry; None when nothing changes.
    `peaks`: the store's measured matmul peaks by (hardware, precision), for `peak_note`."""
    import llmbench
    from llmbench.definitions import stamp
    from llmbench.roofline import annotate

    before = rec.model_dump(mode="json")
    new = rec.model_copy(deep=True)
    if rec.status == "ok":
        trial = rec.model_copy(deep=True)
        if annotate(trial):  # else: today's catalogs cannot bound it; the stored roofline stays
            new.roofline = trial.roofline
    restated, replaced = restate_statistics(new)
    was_flagged = {k for k, m in rec.metrics.items() if getattr(m, "recomputable", True) is False}
    stamp(new)
    unrecomputable = [k for k, m in new.metrics.items()
                      if getattr(m, "recomputable", True) is False and k not in was_flagged]
    if (note := peak_note(new, peaks)) and not any(
            n.startswith("mfu_measured_peak divides by one") for n in new.notes):
        new.notes.append(note)
    after = new.model_dump(mode="json")
    if _measured(after["metrics"]) != _measured(before["metrics"]):  # never: only statistics move
        raise AssertionError(f"{path}: re-annotating would change measured metrics")
    changed: list[str] = []
    for name, stats in restated.items():
        changed += [f"metrics.{name}.{k}: {_show(replaced[name][k])} -> "
                    f"{_show(getattr(new.metrics[name], k))}" for k in stats]
    changed += [f"metrics.{name}.recomputable: - -> False" for name in unrecomputable]
    rf_old, rf_new = before["roofline"] or {}, after["roofline"] or {}
    _diff("roofline.", {k: v for k, v in rf_old.items() if k != "notes"},
          {k: v for k, v in rf_new.items() if k != "notes"}, changed)
    _diff("power.", before["power"] or {}, after["power"] or {}, changed)
    added = [n for n in after["notes"] if n not in before["notes"]]
    changed += [f"notes: + {n}" for n in added]
    roof_notes = [n for n in rf_new.get("notes") or [] if n not in (rf_old.get("notes") or [])]
    changed += [f"roofline.notes: + {n}" for n in roof_notes]
    d_old = definitions_version_of(before)
    if before.get("definitions_version") != after["definitions_version"]:
        changed.append(f"definitions_version: {d_old} -> {after['definitions_version']}")
    if not changed:
        return None
    r_from, r_to = roofline_version_of(rf_old), roofline_version_of(rf_new)
    entry = {
        "at": now or datetime.now(timezone.utc).isoformat(),
        "by": f"llmbench {llmbench.__version__} annotate",
        "roofline_version": {"from": r_from, "to": r_to},
        "definitions_version": {"from": d_old, "to": DEFINITIONS_VERSION},
        "changed": changed,
        # as stored: a field the stored record did not have (its version) is not invented
        "previous": {"roofline": {k: v for k, v in rf_old.items()
                                  if not (k == "version" and v is None)},
                     "power": {k: v for k, v in (before["power"] or {}).items()
                               if after["power"].get(k) != v},
                     "notes_added": added,
                     "statistics": replaced},
    }
    new.annotations = [*rec.annotations, entry]
    flagged = bool(after["power"].get("short_window")) and not (before["power"] or {}).get("short_window")
    return Change(path, new, changed, r_from, r_to, d_old, flagged, restated, unrecomputable)


def reannotate_store(root: Path, *, write: bool, now: str | None = None
                     ) -> tuple[int, list[Change]]:
    """(records read, the changes); the changed records are rewritten in place when `write`."""
    from llmbench.store.store import Store

    store = Store(root)
    now = now or datetime.now(timezone.utc).isoformat()
    recs = []
    for path, doc in store.raw():
        try:
            recs.append((path, Record.model_validate(doc)))
        except ValueError:
            import warnings

            warnings.warn(f"skipping unreadable record {path}", stacklevel=2)
    by_run: dict[tuple, dict[str, float]] = {}  # a run measures its peak once (peaks.py cache)
    for _, rec in recs:
        if rec.kind == "training" and (v := rec.metric("matmul_peak_tflops", "median")):
            key = (rec.hardware.name, (rec.workload or {}).get("precision"))
            by_run.setdefault(key, {})[rec.run_id] = v
    peaks = {k: list(v.values()) for k, v in by_run.items()}
    n, changes = 0, []
    for path, rec in recs:
        n += 1
        ch = reannotate(rec, path, now=now, peaks=peaks)
        if ch is None:
            continue
        changes.append(ch)
        if write:
            store.rewrite(path, ch.record)
    if write:  # the rewritten records' index rows (store/sidecar.py)
        from llmbench.store.index import write_sidecar

        for d in dict.fromkeys(ch.path.parent for ch in changes):
            write_sidecar(d)
    return n, changes


__all__ = ["Change", "reannotate", "reannotate_store", "ROOFLINE_VERSION", "DEFINITIONS_VERSION"]
