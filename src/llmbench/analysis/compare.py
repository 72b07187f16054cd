"""Is NEW better than BASE, by how much, and is the difference real?

Pairing: a record's identity is its kind, model, backend name, request shape with its options,
and workload fields, minus the fields that only describe how a run was done (repeats, seed,
time limits ...) and minus the guarded fields below. Backend options (n_threads, ...) are not identity: they are usually the
change being measured.

Guard: a pair whose records differ in hardware, engine version, sampling, forced output length,
tokenizer or load shape measures two things at once; it is refused (listed with the differing
fields, no verdict) unless the user allows that difference (`allow`: a group name below or a
dotted field path such as `workload.concurrency`).

Statistics: for each metric both records hold with n >= 2, the change of the mean with a 95%
Welch (unequal variances) t-interval of the difference, computed from the raw samples when the
record kept them all, else from (mean, std, n): Welch-Satterthwaite df (a real number, near 1
at two repeats of unequal spread) and scipy.stats.t's quantile at that df. Percentages are that
interval divided by the base mean. "No significant change" means the interval contains 0.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from llmbench.metrics import direction
from llmbench.measure.metric_stats import MetricStats
from llmbench.store.record import Record

# Fields that describe how a run was done, not what was measured.
RUN_SPECIFIC = {"repeats", "warmups", "seed", "timeout_s", "requests_sent", "duration_s",
                "num_prompts", "warmup", "cooldown", "request_rate_label", "slo"}

# group -> dotted paths into the record
GUARDS: dict[str, tuple[str, ...]] = {
    "hardware": ("hardware.name", "hardware.count"),
    "engine_version": ("backend.version",),
    "sampling": ("workload.temperature", "workload.top_p", "workload.top_k",
                 "workload.repetition_penalty", "workload.sampling"),
    "forced_output": ("workload.force_output", "workload.ignore_eos", "workload.output_len_dist"),
    "tokenizer": ("workload.tokenizer", "workload.token_counts", "model.tokenizer",
                  "serving.tokenizer", "serving.token_count_source"),
    "load_shape": ("workload.load", "workload.concurrency", "workload.max_concurrency",
                   "workload.request_rate", "workload.burstiness", "workload.input_len_dist",
                   "workload.dataset", "workload.shared_prefix", "workload.api"),
}
# What each request asked of the server (loadgen/shapes/: text, embeddings, rerank, and the
# shape's options such as inputs per request): part of every identity, never allowed to
# differ, since two shapes' points measure different work (an absent one is plain text).
REQUEST_SHAPE = ("request_shape", "request_shape_options")
GUARDED_WORKLOAD = {p.split(".", 1)[1] for ps in GUARDS.values() for p in ps
                    if p.startswith("workload.")}

# The metric a point's verdict rests on, per kind (first one both records have).
PRIMARY = {
    "inference": ("batch_latency_s", "output_throughput_tok_s"),
    "serving": ("e2e_s", "ttft_s", "output_throughput_tok_s"),
    "training": ("step_time_s", "tokens_per_s"),
    "perplexity": ("perplexity",),
    "reference": ("batch_latency_s", "e2e_s", "output_throughput_tok_s", "total_throughput_tok_s"),
}
def get_path(rec: Record, path: str) -> Any:
    obj: Any = rec.model_dump()
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def identity(rec: Record, allow: set[str] = frozenset()) -> tuple:
    w = {k: v for k, v in (rec.workload or {}).items()
         if k not in RUN_SPECIFIC and k not in GUARDED_WORKLOAD and f"workload.{k}" not in allow
         and k not in REQUEST_SHAPE and isinstance(v, (str, int, float, bool, type(None)))}
    shape = tuple(json.dumps((rec.workload or {}).get(k), sort_keys=True) for k in REQUEST_SHAPE)
    return (rec.kind, rec.model.name, rec.backend.name, tuple(sorted(w.items())), shape)


def _allowed_paths(allow: set[str]) -> set[str]:
    out = set()
    for a in allow:
        out.update(GUARDS.get(a, (a,)))
    return out


def guard_diffs(base: Record, new: Record, allow: set[str] = frozenset()) -> list[str]:
    """'path: base -> new' for every guarded field that differs and is not allowed."""
    allowed = _allowed_paths(allow)
    out = []
    for paths in GUARDS.values():
        for p in paths:
            if p in allowed:
                continue
            a, b = get_path(base, p), get_path(new, p)
            if a != b:
                out.append(f"{p}: {a!r} -> {b!r}")
    return out


# -- statistics ---------------------------------------------------------------------------------
def t_quantile(p: float, df: float) -> float:
    """Student-t quantile at any real df > 0 (scipy.stats.t; imported here so that `import
    llmbench` stays light)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def _moments(m: MetricStats) -> tuple[float, float, int] | None:
    """(mean, variance, n), from every raw sample when the record kept them all."""
    if m.samples and len(m.samples) == m.n and m.n >= 2:
        xs = m.samples
        mu = sum(xs) / len(xs)
        return mu, sum((x - mu) ** 2 for x in xs) / (len(xs) - 1), len(xs)
    if m.mean is None or m.std is None or m.n < 2:
        return None
    return m.mean, m.std ** 2, m.n


@dataclass
class Change:
    metric: str
    unit: str
    base_mean: float
    new_mean: float
    diff: float
    ci_low: float
    ci_high: float
    n_base: int
    n_new: int

    @property
    def pct(self) -> float | None:
        return None if self.base_mean == 0 else 100 * self.diff / abs(self.base_mean)

    @property
    def pct_ci(self) -> tuple[float, float] | None:
        if self.base_mean == 0:
            return None
        s = 100 / abs(self.base_mean)
        return self.ci_low * s, self.ci_high * s

    @property
    def significant(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0

    @property
    def verdict(self) -> str:
        """better | worse | no significant change (the catalog's direction); a metric with no
        direction (a count, a setting) or none known only 'changed'."""
        if not self.significant:
            return "no significant change"
        way = direction(self.metric)
        if way == "none":
            return "changed"
        return "better" if (self.diff > 0) == (way == "higher") else "worse"

    @property
    def worse_pct(self) -> float:
        """How much worse NEW is, in % of base (<= 0 when not worse)."""
        p = self.pct
        if p is None or self.verdict != "worse":
            return 0.0
        return abs(p)


def metric_change(name: str, base: MetricStats, new: MetricStats, level: float = 0.95) -> Change | None:
    a, b = _moments(base), _moments(new)
    if a is None or b is None:
        return None
    (m1, v1, n1), (m2, v2, n2) = a, b
    se2 = v1 / n1 + v2 / n2
    diff = m2 - m1
    if se2 == 0:
        lo = hi = diff
    else:
        df = se2 ** 2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
        h = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(se2)
        lo, hi = diff - h, diff + h
    return Change(name, base.unit, m1, m2, diff, lo, hi, n1, n2)


# -- pairing ------------------------------------------------------------------------------------
@dataclass
class PointComparison:
    base: Record
    new: Record
    changes: list[Change] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)   # guard differences; no verdict then
    primary: str | None = None
    min_change_pct: float = 0.0   # a significant change smaller than this is no change

    @property
    def label(self) -> str:
        w = self.base.workload or {}
        keys = ("batch_size", "input_len", "output_len", "concurrency", "request_rate")
        shape = " ".join(f"{k}={w[k]}" for k in keys if w.get(k) is not None)
        return f"{self.base.kind} {self.base.backend.name} {self.base.model.name} {shape}".strip()

    @property
    def option_diffs(self) -> list[str]:
        """What else differs (backend options): usually the change under test."""
        a, b = self.base.backend.options or {}, self.new.backend.options or {}
        return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k)]

    def change(self, metric: str | None) -> Change | None:
        return next((c for c in self.changes if c.metric == metric), None)

    @property
    def verdict(self) -> str:
        if self.refused:
            return "not comparable"
        c = self.change(self.primary)
        if c is None:
            return "no data"
        if c.pct is not None and abs(c.pct) < self.min_change_pct:
            return "no significant change"
        return {"better": "faster", "worse": "slower"}.get(c.verdict, c.verdict) \
            if self.base.kind != "perplexity" else c.verdict


@dataclass
class Comparison:
    points: list[PointComparison] = field(default_factory=list)
    only_base: list[Record] = field(default_factory=list)
    only_new: list[Record] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for p in self.points:
            out[p.verdict] += 1
        return dict(out)

    def regressions(self, pct: float) -> list[PointComparison]:
        """Points whose primary metric got significantly worse by more than pct %."""
        return [p for p in self.points if not p.refused and (c := p.change(p.primary))
                and c.worse_pct > pct]


def compare(base: list[Record], new: list[Record], allow: set[str] = frozenset(),
            metric: str | None = None, min_change_pct: float = 0.0) -> Comparison:
    allow = set(allow)
    base = [r for r in base if r.status == "ok"]
    new = [r for r in new if r.status == "ok"]
    groups: dict[tuple, tuple[list[Record], list[Record]]] = defaultdict(lambda: ([], []))
    for r in base:
        groups[identity(r, allow)][0].append(r)
    for r in new:
        groups[identity(r, allow)][1].append(r)
    out = Comparison()
    for key, (bs, ns) in groups.items():
        if not ns:
            out.only_base.extend(bs)
            continue
        if not bs:
            out.only_new.extend(ns)
            continue
        if len(bs) > 1 or len(ns) > 1:
            # several records of one identity: pair those whose guarded fields agree
            pairs = [(b, n) for b in bs for n in ns if not guard_diffs(b, n, allow)]
            if len(pairs) != 1:
                out.ambiguous.append(f"{key[0]} {key[2]} {key[1]} {dict(key[3])}: {len(bs)} base "
                                     f"and {len(ns)} new records; narrow the selection (--where)")
                continue
            bs, ns = [pairs[0][0]], [pairs[0][1]]
        pc = _compare_pair(bs[0], ns[0], allow, metric)
        pc.min_change_pct = min_change_pct
        out.points.append(pc)
    return out


def _compare_pair(b: Record, n: Record, allow: set[str], metric: str | None) -> PointComparison:
    pc = PointComparison(b, n, refused=guard_diffs(b, n, allow))
    for name in sorted(set(b.metrics) & set(n.metrics)):
        c = metric_change(name, b.metrics[name], n.metrics[name])
        if c is not None:
            pc.changes.append(c)
    have = {c.metric for c in pc.changes}
    wanted = (metric,) if metric else PRIMARY.get(b.kind, ())
    pc.primary = next((m for m in wanted if m in have), None)
    return pc
