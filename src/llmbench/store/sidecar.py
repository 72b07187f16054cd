"""A run directory's own index rows, written by the writer when a run ends, so that a cold
build of the index reads one small Arrow file a run instead of parsing every record.

`<run dir>/.llmbench-rows.arrow` holds the flat rows (`store.flatten`, with `_mtime_ns` and
`_size`) of the record files it was built from, each named by file name, mtime and size. The
record files stay the truth: a reader takes a sidecar's row only for a file whose name, mtime
and size it still lists; other files (hand-added, rewritten, written after the sidecar, a run
that crashed before it) are parsed as before, removed files drop out, and a sidecar that is
unreadable or of another version is ignored. Only the writer writes sidecars, when a run ends
(`index.write_sidecar`), and `llmbench index` when asked to (a store copied in or written before
sidecars); reading never writes into the results directory. The name starts with
'.', so it is never read as a record. This module is the file format; store/index.py makes the
rows and reads them back.

A sidecar's column holds what the Python path would make of that run's values alone; a column
whose values mix types there (16 and 'auto', 1 and 2.5, an integer past int64) is kept as JSON
text, so that the merged index converts the store's values together, as a full parse would.
Each column names the row (file) it first appears in, so that the writer of a resumed run can
keep the rows still covered and parse only the other files (index.write_sidecar).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

SIDECAR = ".llmbench-rows.arrow"
SIDECAR_VERSION = "1"
_PLAIN = (bool, int, float, str)
LISTS = ("_metrics", "_workload")  # each row's metric and workload names


def column(vals: list[Any]) -> tuple[pa.Array, bool]:
    """One column -> (Arrow, kept as JSON text)."""
    types = {type(v) for v in vals if v is not None}
    if len(types) <= 1 and types <= set(_PLAIN) and not (
            int in types and any(not -2 ** 63 <= v < 2 ** 63 for v in vals if v is not None)):
        return pa.array(vals), False
    return pa.array([None if v is None else json.dumps(v) for v in vals], pa.string()), True


def write(d: str, rows: list[dict[str, Any]], index_version: str) -> None:
    """Save `rows` (flat rows with `path` the file's name, and each row's `_metrics` and
    `_workload` names) as `d`'s sidecar: a column a row key, in the order of first appearance."""
    cols: dict[str, list[Any]] = {}
    first: dict[str, str] = {}
    for i, r in enumerate(rows):
        for k, v in r.items():
            col = cols.get(k)
            if col is None:
                col = cols[k] = [None] * len(rows)
                first[k] = r["path"]
            col[i] = v
    arrays, as_json = {}, []
    for k, vals in cols.items():
        if k in LISTS:
            arrays[k] = pa.array(vals, pa.list_(pa.string()))
            continue
        arrays[k], js = column(vals)
        if js:
            as_json.append(k)
    write_table(d, pa.table(arrays), as_json, first, index_version)


def write_table(d: str, table: pa.Table, as_json: list[str], first: dict[str, str],
                index_version: str) -> None:
    """Save `table` as `d`'s sidecar, by rename; no fsync: a torn one is only ignored. `first`:
    each column's first row (file name), which places the columns of a later, incremental write
    as a write from scratch places them (index.write_sidecar)."""
    from llmbench.store.store import create_temp

    meta = {"version": SIDECAR_VERSION, "index_version": index_version, "json": as_json,
            "first": first}
    table = table.replace_schema_metadata({"llmbench": json.dumps(meta)})
    fd, tmp = create_temp(d)  # the mode of a record
    try:
        with os.fdopen(fd, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        os.replace(tmp, os.path.join(d, SIDECAR))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_sidecar(d: str, index_version: str) -> tuple[pa.Table, set[str], dict[str, str] | None] | None:
    """`d`'s sidecar: its rows with `path` made `d/<name>`, the columns kept as JSON text, and
    each column's first row (None in a sidecar written before they were kept); None when there
    is none, or it is unreadable, of another version or of other index rows."""
    try:
        # read whole, not mapped: a map of a file cut short by another host would fault
        with open(os.path.join(d, SIDECAR), "rb") as f:
            t = pa.ipc.open_file(pa.py_buffer(f.read())).read_all()
        meta = json.loads((t.schema.metadata or {}).get(b"llmbench", b"{}"))
        if meta.get("version") != SIDECAR_VERSION or meta.get("index_version") != index_version:
            return None
        import pyarrow.compute as pc

        t = t.replace_schema_metadata(None)
        path = pc.binary_join_element_wise(d + os.sep, t.column("path"), "")
        t = t.set_column(t.column_names.index("path"), "path", path)
        return t, set(meta["json"]), meta.get("first")
    except Exception:  # absent, torn, foreign: the files are read instead
        return None
