"""`llmbench compare BASE NEW`: per-point change with confidence intervals, verdicts, a summary,
and `--fail-on-regression PCT` for CI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from llmbench.cli.common import fmt, out
from llmbench.errors import SpecError, did_you_mean
from llmbench.store.record import Record
from llmbench.store.store import DEFAULT_RESULTS, Store

EXIT_REGRESSION = 1


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)


def select(selector: Optional[str], where: Optional[str], results: Path, side: str) -> list[Record]:
    """A result directory, a run id under --results, or (selector omitted) every record of
    --results; then the SQL filter `where` over the flat columns."""
    if selector is None and where is None:
        raise SpecError([(side, "give a run id, a result directory, or a --where filter")])
    if selector is None:
        store = Store(results)
    elif Path(selector).is_dir():
        store = Store(selector)
    elif (results / selector).is_dir():
        store = Store(results / selector)
    else:
        runs = [p.name for p in results.iterdir() if p.is_dir()] if results.is_dir() else []
        raise SpecError([(side, f"{selector!r} is neither a directory nor a run id in {results}"
                                f"{did_you_mean(selector, runs, n=2)}")])
    if not where:
        recs = store.records()
    else:
        keep = {r[0] for r in store.query(where).select("path").fetchall()} if store.paths() else set()
        recs = [Record.model_validate(d) for p, d in store.raw() if str(p) in keep]
    if not recs:
        raise SpecError([(side, f"no records selected ({selector or results}"
                                f"{', where ' + where if where else ''})")])
    return recs


def _check_metric(name: str, recs: list[Record]) -> None:
    """--metric must name a metric the selected records carry (else every point would read 'no
    pair'), with the nearest names."""
    have = sorted({m for r in recs for m in r.metrics})
    if name not in have:
        raise SpecError([("--metric", f"no selected record has the metric {name!r}"
                                      f"{did_you_mean(name, have, n=3)}")])


def compare_cmd(
    base: Optional[str] = typer.Argument(None, help="run id (under --results) or result directory"),
    new: Optional[str] = typer.Argument(None, help="run id (under --results) or result directory"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    where: Optional[str] = typer.Option(None, "--where", help="SQL filter applied to both sides"),
    base_where: Optional[str] = typer.Option(None, "--base-where", help="SQL filter selecting BASE"),
    new_where: Optional[str] = typer.Option(None, "--new-where", help="SQL filter selecting NEW"),
    allow_diff: list[str] = typer.Option([], "--allow-diff", help="compare anyway although this "
                                         "differs: hardware, engine_version, sampling, forced_output, "
                                         "tokenizer, load_shape, or a field path (workload.concurrency)"),
    metric: Optional[str] = typer.Option(None, "--metric", help="metric the verdict rests on "
                                         "(default: batch_latency_s offline, e2e_s serving)"),
    fail_on_regression: Optional[float] = typer.Option(
        None, "--fail-on-regression", metavar="PCT",
        help="exit 1 when a point's verdict metric is significantly worse by more than PCT %"),
    all_metrics: bool = typer.Option(False, "--all-metrics", help="list every shared metric"),
    min_change: float = typer.Option(0.0, "--min-change", metavar="PCT",
                                     help="a significant change smaller than PCT % is reported as "
                                          "no significant change (run-to-run drift of a shared machine)"),
) -> None:
    """Pair BASE and NEW points by identity and report each metric's change with a 95% Welch
    interval, a verdict per point (faster / slower / no significant change) and a summary.
    Pairs that differ in hardware, engine version, sampling, forced output, tokenizer or load
    shape are refused unless --allow-diff names that difference."""
    from llmbench.analysis.compare import compare

    def both(w1, w2):
        return " AND ".join(f"({w})" for w in (w1, w2) if w) or None

    b = select(base, both(where, base_where), results, "BASE")
    n = select(new, both(where, new_where), results, "NEW")
    if metric is not None:
        _check_metric(metric, b + n)
    cmp = compare(b, n, allow=set(allow_diff), metric=metric, min_change_pct=min_change)
    if not cmp.points:
        raise SpecError([("BASE/NEW", f"no point of BASE ({len(b)} records) pairs with one of NEW "
                                      f"({len(n)} records)")] +
                        [("ambiguous", a) for a in cmp.ambiguous])
    t = Table(title=f"{base or base_where or where} -> {new or new_where or where}")
    for c in ("point", "metric", "base", "new", "change", "95% CI", "verdict"):
        t.add_column(c)
    for p in cmp.points:
        if p.refused:
            t.add_row(p.label, "", "", "", "", "", "not comparable: " + "; ".join(p.refused))
            continue
        shown = p.changes if all_metrics else [c for c in p.changes if c.metric == p.primary]
        for i, c in enumerate(shown):
            ci = c.pct_ci
            t.add_row(p.label if i == 0 else "", c.metric, fmt(c.base_mean), fmt(c.new_mean),
                      f"{c.pct:+.1f}%" if c.pct is not None else fmt(c.diff),
                      f"[{ci[0]:+.1f}%, {ci[1]:+.1f}%]" if ci else f"[{fmt(c.ci_low)}, {fmt(c.ci_high)}]",
                      p.verdict if c.metric == p.primary else c.verdict)
        if not shown:
            t.add_row(p.label, "", "", "", "", "", p.verdict)
    out.print(t)
    for p in cmp.points:
        if p.option_diffs and not p.refused:
            out.print(f"{p.label}: options differ: {'; '.join(p.option_diffs)}", highlight=False)
    for r in cmp.only_base:
        out.print(f"only in BASE: {r.kind} {r.backend.name} {r.model.name} {r.point_key}", highlight=False)
    for r in cmp.only_new:
        out.print(f"only in NEW: {r.kind} {r.backend.name} {r.model.name} {r.point_key}", highlight=False)
    for a in cmp.ambiguous:
        out.print(f"not paired: {a}", highlight=False)
    summ = cmp.summary()
    out.print("summary: " + ", ".join(f"{v} {k}" for k, v in sorted(summ.items())), highlight=False)
    if fail_on_regression is not None:
        bad = cmp.regressions(fail_on_regression)
        if bad:
            for p in bad:
                c = p.change(p.primary)
                out.print(f"REGRESSION {p.label}: {c.metric} {c.worse_pct:.1f}% worse "
                          f"(> {fail_on_regression:g}%)", highlight=False)
            sys.exit(EXIT_REGRESSION)
