"""Training ratios that need another point's record: `speedup_vs_dense` (a 2:4-sparse point
against its dense twin) and `scaling_efficiency` = tokens_per_s(N) / (N x tokens_per_s(1))
(an N-device point against its 1-device twin).

A baseline in the results directory counts, whichever run wrote it: after every sweep (also a
resumed one, a job-array task, a Ray sweep, one with nothing left to run) the stored training
records that lack a ratio whose baseline is now stored get it, rewritten in place. Of two
job-array tasks, the one that finishes later sees both records, so the order does not matter.
"""

from __future__ import annotations

from typing import Any

from llmbench.store.record import Record
from llmbench.store.store import Store, atomic_write_text, redact_json
from llmbench.kinds.training.config import TrainPoint
from llmbench.kinds.training.record import add_ratio

SCALING_DROP = ("nproc", "parallel")
SPARSITY_DROP = ("sparsity",)


def _point_of(doc: dict[str, Any]) -> TrainPoint | None:
    spec = dict(doc.get("spec") or {})
    spec.pop("peak", None)
    try:
        return TrainPoint(**spec)
    except Exception:
        return None


class Baselines:
    def __init__(self) -> None:
        self.scaling: dict[str, Record] = {}
        self.dense: dict[str, Record] = {}

    # keyed by the point less the dropped factors and by the model name, so that a record of
    # another build of the same point (other code, another shape) is never a baseline
    def add(self, p: TrainPoint, rec: Record) -> None:
        if rec.status != "ok":
            return
        if p.nproc == 1:
            self.scaling[p.baseline_key(SCALING_DROP) + rec.model.name] = rec
        if p.sparsity == "none":
            self.dense[p.baseline_key(SPARSITY_DROP) + rec.model.name] = rec

    def annotate(self, p: TrainPoint, rec: Record) -> bool:
        """Add the ratios `rec` lacks and has a baseline for; True if it added one."""
        if rec.status != "ok":
            return False
        before = len(rec.metrics)
        name = rec.model.name
        if (p.nproc > 1 and "scaling_efficiency" not in rec.metrics
                and (b := self.scaling.get(p.baseline_key(SCALING_DROP) + name))):
            add_ratio(rec, "scaling_efficiency", b, per=p.nproc)
        if (p.sparsity != "none" and "speedup_vs_dense" not in rec.metrics
                and (b := self.dense.get(p.baseline_key(SPARSITY_DROP) + name))):
            add_ratio(rec, "speedup_vs_dense", b)
        return len(rec.metrics) > before


def annotate_store(store: Store, records: list[Record]) -> list[Record]:
    """Fill in every stored training record's missing ratios; `records` (this sweep's) are
    returned with the ratios they gained."""
    stored = []
    base = Baselines()
    for path, doc in store.raw():
        if doc.get("kind") != "training" or doc.get("status") != "ok":
            continue
        p = _point_of(doc)
        if p is None:
            continue
        rec = Record.model_validate(doc)
        base.add(p, rec)
        stored.append((path, p, rec))
    updated: dict[tuple, Record] = {}
    for path, p, rec in stored:
        if base.annotate(p, rec):
            atomic_write_text(path, redact_json(rec.model_dump_json(indent=1)))
            updated[(rec.run_id, rec.point_key)] = rec
    return [updated.get((r.run_id, r.point_key), r) for r in records]
