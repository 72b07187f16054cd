from __future__ import annotations

import csv
import difflib
import json
import sys
import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from llmbench.cli.common import fmt, out
from llmbench.errors import SpecError
from llmbench.metrics import STATS_FIRST, column_header, format_value, option_headline, shown_first
from llmbench.columns import distinguishing, said_once
from llmbench.store.store import DEFAULT_RESULTS, SHAPE_OPTION_COLUMNS, SPECULATION_COLUMNS, Store

# Flags the default table adds when any row raises them: a contended point (other work shared
# the machine while it was measured, measure/contention) must never pass as clean, nor an ITL
# whose gaps the client bunched (importers/common.py mark_bunching, loadgen/bunching.py), nor a
# window the GPU throttled (measure/gpm.py), nor energy read over a window too short for the
# meter (definitions.py).
FLAG_COLUMNS = ("contended", "throttled", "energy_short_window", "itl_s_client_limited",
                "itl_per_chunk_s_client_limited")
# Shown whenever a row has one: which roofline version its bound and efficiency come from.
VERSION_COLUMNS = ("roofline_version",)
# Beyond the configuration that tells rows apart and the metrics the catalog shows first for the
# rows' kinds (metrics.SHOWN_FIRST), what the default table shows when rows have it.
TABLE_COLUMNS = (*FLAG_COLUMNS, *VERSION_COLUMNS)
SHORT = {"batch_size": "batch", "input_len": "in", "output_len": "out", "concurrency": "conc",
         "request_rate": "rate", "hardware_count": "devices", "tensor_parallel": "TP",
         "pipeline_parallel": "PP", "created_at": "created", "roofline_version": "roofline v",
         "energy_short_window": "energy <2 s", "itl_s_client_limited": "ITL client-limited",
         "itl_per_chunk_s_client_limited": "ITL client-limited", "request_shape": "shape",
         "request_shape_mode": "mode", "request_shape_dialect": "dialect",
         "request_shape_enforce": "grammar on", "request_shape_tool_choice": "tool choice",
         "speculative": "spec", "speculative_k": "spec k"}
KINDS = ("inference", "serving", "perplexity", "training")
# The settings that tell a shape's or a speculating engine's rows from their baseline's.
SETTING_COLUMNS = ("request_shape", *(f"request_shape_{k}" for k in SHAPE_OPTION_COLUMNS),
                   *SPECULATION_COLUMNS)
MAX_TEXT_WIDTH = 32  # a model path is ellipsised past this; numbers are never cut


def register(app: typer.Typer) -> None:
    app.command("results")(results)


def results(
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="results directory"),
    format: str = typer.Option("table", "--format", help="table | csv | json"),
    where: Optional[str] = typer.Option(None, "--where", help="SQL filter over the flat columns, "
                                        "e.g. \"backend='llamacpp' AND batch_size>1\""),
    sort: Optional[str] = typer.Option(None, "--sort", help="column to sort by; a leading '-' "
                                       "sorts descending (--sort=-output_throughput_tok_s_mean)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="show the first N records"),
    columns: Optional[str] = typer.Option(None, "--columns", help="comma-separated columns "
                                          "(table, csv); default: the table shows what differs "
                                          "between the rows, csv every column"),
) -> None:
    """Query stored records (DuckDB over one flat row per record). An unreadable (corrupt)
    record file is left out with a warning naming it on stderr; the exit status stays 0."""
    if format not in ("table", "csv", "json"):
        raise SpecError([("--format", f"{format!r} is not one of table, csv, json")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            _results(results, format, where, sort, limit, columns)
        finally:
            # json reads the store twice: say each once
            for msg in dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning):
                print(f"llmbench: warning: {msg}", file=sys.stderr)


def _results(results: Path, format: str, where: str | None, sort: str | None, limit: int | None,
             columns: str | None) -> None:
    if not results.is_dir():
        raise SpecError([("--results", f"{results} is not a results directory (it does not exist)"
                          if not results.exists() else f"{results} is not a directory")])
    store = Store(results)
    rel = store.query(where)
    cols = rel.columns
    total = rel.aggregate("count(*)").fetchall()[0][0]
    rel = rel.order(_order_by(sort, cols) if sort else _default_order(cols))
    if limit:
        rel = rel.limit(limit)
    if format == "json":
        want = [r[0] for r in rel.select("path").fetchall()] if "path" in cols else []
        docs = dict((str(p), d) for p, d in store.raw())
        json.dump([docs[p] for p in want if p in docs], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    rows = rel.fetchall()
    chosen = _pick_columns(columns, cols) if columns else None
    if format == "csv":
        show = chosen or cols
        idx = [cols.index(c) for c in show]
        w = csv.writer(sys.stdout)
        w.writerow(show)
        for r in rows:
            w.writerow([_csv_safe(r[i]) for i in idx])
        return
    if not rows:
        out.print(f"no records in {results}" + (f" matching {where}" if where else ""))
        return
    cells = {c: [_cell(c, v) for v in col] for c, col in zip(cols, zip(*rows))}
    numeric = {c for c, col in zip(cols, zip(*rows))
               if all(isinstance(v, (int, float)) or v is None for v in col)}
    if chosen:
        show, same, headers = chosen, {}, {c: _header(c) for c in chosen}
    else:
        show, same, headers = compact_columns(cols, rows, cells)
    show, estimates = mark_estimates(show, cols, rows, cells, headers)
    # Kept whatever the width, the last of them left out first: the sort key, an estimate's
    # mark, the first metric, the settings that tell a shape's or a speculating engine's rows
    # apart (mode, dialect, speculation), the flags (a contended row never passes as clean), a
    # shape's or option's headline (validity, acceptance), the second metric.
    metric_cols = set(shown_first(KINDS))
    heads = option_headline({r[cols.index("request_shape")] for r in rows} if "request_shape" in cols else ())
    firsts = [c for c in show if c in metric_cols and c not in heads][:2]
    must = list(dict.fromkeys(
        [c for c in show if c == (sort or "").lstrip("-")] + (["kind"] if estimates else [])
        + firsts[:1] + [c for c in show if c in SETTING_COLUMNS] + [c for c in show if c in FLAG_COLUMNS]
        + [c for c in show if c in heads] + firsts[1:]))
    show, dropped = fit_columns(show, must, cells, numeric, headers, out.width, metric_cols)
    shown = f"{len(rows)} of {total}" if len(rows) < total else f"{total}"
    caption = [x for x in (_same_caption(same), dropped and
               f"left out for the terminal's width: {', '.join(dropped)} (--columns picks)") if x]
    t = Table(title=f"{shown} record(s) in {results}{estimates}", caption="\n".join(caption) or None,
              caption_justify="left")
    for c in show:
        if c in numeric:
            # A number is never shortened ("3.…"): its column is as wide as its widest cell
            # and fit_columns made room for it; the text columns give way instead.
            t.add_column(headers[c], justify="right", no_wrap=True,
                         min_width=max(len(v) for v in cells[c]))
        else:
            t.add_column(headers[c], overflow="ellipsis", max_width=MAX_TEXT_WIDTH)
    for i in range(len(rows)):
        t.add_row(*[cells[c][i] for c in show])
    out.print(t)


def mark_estimates(show: list[str], cols: list[str], rows: list[tuple], cells: dict[str, list[str]],
                   headers: dict[str, str]) -> tuple[list[str], str]:
    """Estimates (llmbench predict --save) never pass for measurements: their kind column is
    shown, spelled ESTIMATE, and the title counts them."""
    if "kind" not in cols:
        return show, ""
    kinds = [r[cols.index("kind")] for r in rows]
    n = kinds.count("estimate")
    if not n:
        return show, ""
    cells["kind"] = ["ESTIMATE" if k == "estimate" else (k or "") for k in kinds]
    headers.setdefault("kind", "kind")
    shown = show if "kind" in show else ["kind", *show]
    return shown, f" · {n} ESTIMATE(S): predicted by llmbench predict, not measured"


def _header(c: str) -> str:
    return column_header(c) or SHORT.get(c) or c.removeprefix("opt_").replace("_", " ")


def fit_columns(show: list[str], must: list[str], cells: dict[str, list[str]], numeric: set[str],
                headers: dict[str, str], width: int, metric_cols: set[str]) -> tuple[list[str], list[str]]:
    """Leave columns out until every cell fits whole in `width` characters (rich would
    otherwise shorten every column alike, numbers included: "3.…"): first the later metrics,
    then configuration columns from the right, the `must` columns last."""
    def col_width(c):
        if c in numeric:  # no_wrap: the header stays on one line too
            return max([len(headers[c]), *map(len, cells[c])])
        return min(max([*map(len, headers[c].split()), *map(len, cells[c])]), MAX_TEXT_WIDTH)

    def need(cs):
        return 1 + sum(col_width(c) + 3 for c in cs)  # padding either side and a border

    metrics = [c for c in show if c in metric_cols and c not in must]
    config = [c for c in show if c not in metric_cols and c not in must]
    kept = set(show)
    for c in [*reversed(metrics), *reversed(config), *reversed(must)]:  # must: most kept first
        if need([k for k in show if k in kept]) <= width or len(kept) == 1:
            break
        kept.discard(c)
    return [c for c in show if c in kept], [c for c in show if c not in kept]


def compact_columns(cols: list[str], rows: list[tuple], cells: dict[str, list[str]]
                    ) -> tuple[list[str], dict[str, object], dict[str, str]]:
    """What the default table shows: the configuration columns that differ between the rows
    (each said once: columns.said_once), then the headline metrics any row has, with
    their headers; identity values shared by every row come back separately, for one caption
    line."""
    def values(c):
        i = cols.index(c)
        return [r[i] for r in rows]

    varying, same = distinguishing(cols, values)
    kinds = dict.fromkeys(values("kind")) if "kind" in cols else KINDS
    metrics = [c for c in shown_first(kinds) if c in cols and any(x is not None for x in values(c))]
    flags = [c for c in FLAG_COLUMNS if c in cols and c not in varying and any(values(c))]
    versions = [c for c in VERSION_COLUMNS if c in cols and any(x is not None for x in values(c))]
    show, headers = said_once(varying, cells.__getitem__, _header)
    headers.update({c: _header(c) for c in metrics + flags + versions}, run_id="run id")
    return (show or ["run_id"]) + flags + metrics + versions, same, headers


def _same_caption(same: dict[str, object]) -> str | None:
    if not same:
        return None
    return "every row: " + " · ".join(f"{k} {v}" for k, v in same.items())


def _check_column(c: str, cols: list[str], flag: str) -> str:
    if c in cols:
        return c
    raise SpecError([(flag, f"no column {c!r}{column_hint(c, cols)}")])


def column_hint(c: str, cols: list[str]) -> str:
    """'; did you mean X, Y?': a metric's useful statistics first (its mean and median before
    its n or std), else the nearest names."""
    # a section's name that no column starts with (request_shape_options) for its own
    # columns (request_shape_mode, ...)
    stem = c.rpartition("_")[0] + "_" if "_" in c else None
    family = [] if any(col.startswith(c) for col in cols) else \
        [col for col in cols if stem and col.startswith(stem)]
    if family:
        return f"; did you mean {', '.join(family[:5])}?"
    bases = list(dict.fromkeys(col[:-len(st) - 1] for col in cols for st in STATS_FIRST
                               if col.endswith("_" + st)))
    metrics = [b for b in bases if b == c] or [b for b in bases if b.startswith(c)] or \
        difflib.get_close_matches(c, bases, n=2, cutoff=0.6)
    near = difflib.get_close_matches(c, cols, n=2, cutoff=0.9) or \
        [f"{b}_{st}" for b in metrics[:2] for st in ("mean", "median") if f"{b}_{st}" in cols] \
        or sorted(difflib.get_close_matches(c, cols, n=6, cutoff=0.6), key=_stat_rank)[:3]
    return f"; did you mean {', '.join(near)}?" if near else \
        "; `llmbench results --format csv | head -1` lists the columns"


def _stat_rank(col: str) -> int:
    return next((i for i, st in enumerate(STATS_FIRST) if col.endswith("_" + st)), len(STATS_FIRST))


def _order_by(sort: str, cols: list[str]) -> str:
    desc = sort.startswith("-")
    c = _check_column(sort.lstrip("-"), cols, "--sort")
    return f'"{c}" {"DESC" if desc else "ASC"} NULLS LAST'


def _default_order(cols: list[str]) -> str:
    keys = [c for c in ("created_at", "path") if c in cols]
    return ", ".join(f'"{c}"' for c in keys) or "1"


def _pick_columns(spec: str, cols: list[str]) -> list[str]:
    want = [c.strip() for c in spec.split(",") if c.strip()]
    if not want:
        raise SpecError([("--columns", "name at least one column")])
    return [_check_column(c, cols, "--columns") for c in want]


def _cell(col: str, v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if v is None:
        return ""
    if isinstance(v, (int, float)) and column_header(col):  # a metric: by its catalog unit
        return format_value(col, v)
    if isinstance(v, float):
        return fmt(v)
    return str(v)


def _csv_safe(v):
    """Neutralise spreadsheet formulas (CSV injection): prefix a quote to =,+,-,@ text."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v
