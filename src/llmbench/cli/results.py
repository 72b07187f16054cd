from __future__ import annotations

import csv
import json
import sys
import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from llmbench.cli.common import fmt, out
from llmbench.errors import SpecError
from llmbench.store.store import DEFAULT_RESULTS, Store

TABLE_COLUMNS = ("created_at", "kind", "status", "backend", "model", "hardware", "batch_size",
                 "input_len", "output_len", "concurrency", "batch_latency_s_mean", "ttft_s_p50",
                 "tpot_s_p50", "output_throughput_tok_s_mean", "perplexity_mean", "tflops_mean",
                 "mfu_mean", "roofline_efficiency_output_throughput_tok_s", "contended")


def register(app: typer.Typer) -> None:
    app.command("results")(results)


def results(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    format: str = typer.Option("table", "--format", help="table | csv | json"),
    where: Optional[str] = typer.Option(None, "--where", help="SQL filter over the flat columns, "
                                        "e.g. \"backend='llamacpp' AND batch_size>1\""),
) -> None:
    """Query stored records (DuckDB over one flat row per record). An unreadable (corrupt)
    record file is left out with a warning naming it on stderr; the exit status stays 0."""
    if format not in ("table", "csv", "json"):
        raise SpecError([("--format", f"{format!r} is not one of table, csv, json")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            _results(results, format, where)
        finally:
            # json reads the store twice: say each once
            for msg in dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning):
                print(f"llmbench: warning: {msg}", file=sys.stderr)


def _results(results: Path, format: str, where: str | None) -> None:
    store = Store(results)
    rel = store.query(where)
    if format == "json":
        paths = {r[0] for r in store.query(where).select("path").fetchall()} if store.paths() else set()
        docs = [d for p, d in store.raw() if str(p) in paths]
        json.dump(docs, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    cols = rel.columns
    rows = rel.fetchall()
    if format == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(cols)
        for r in rows:
            w.writerow([_csv_safe(v) for v in r])
        return
    show = [c for c in TABLE_COLUMNS if c in cols and any(r[cols.index(c)] is not None for r in rows)]
    t = Table(title=f"{len(rows)} record(s) in {results}")
    for c in show:
        t.add_column(c.replace("_mean", "").replace("roofline_efficiency_output_throughput_tok_s", "efficiency"))
    for r in rows:
        t.add_row(*[_cell(r[cols.index(c)]) for c in show])
    out.print(t)


def _cell(v) -> str:
    if isinstance(v, float):
        return fmt(v)
    return "" if v is None else str(v)


def _csv_safe(v):
    """Neutralise spreadsheet formulas (CSV injection): prefix a quote to =,+,-,@ text."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v
