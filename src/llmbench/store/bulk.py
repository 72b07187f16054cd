"""Many record files -> their flat rows (the rows of `store.flatten`), parsed in C++ on all cores.

First by Arrow's JSON reader (`_arrow_rows`, below): the files as lines of one buffer, one pass
that parses and infers one schema over every document (2026-12-04: half the CPU of the two
DuckDB passes on 100,000 records). Its schema is one structure merged over the documents, so it
is taken only where that loses nothing flatten sees: a value typed two ways across documents, a
timestamp Arrow read from text where flatten reads, a document without `run_id` or `kind`, a
file of two objects make it give way to DuckDB (below); a file whose text cannot be a record or
that is not one object is left to the caller (Python); the rows where an engine option is named
like a workload field and the workload value is null or absent (flatten tells them apart, Arrow
does not) too. Otherwise, and where it gives way, DuckDB:

Parsing 100,000 JSON records in Python (open, json.loads, flatten, Arrow) costs about 1 ms a
record on a 2-core machine; DuckDB reads the files on all cores and parses them in C++. The
flat columns depend on the data (every workload field, metric and statistic seen), so it is
done in two steps over one in-memory copy of the files:

1. hand the files' bytes to DuckDB as Arrow batches (scanned on all cores), decoded as UTF-8,
   and group the documents by JSON structure (`json_structure`: the keys and the JSON type of
   every value). Records of one kind share a structure, so a store holds a few distinct ones.
   This is done a chunk of files at a time, while the caller reads the next chunk: reading
   (Python, one core) and this pass (DuckDB, off the GIL) overlap;
2. from the distinct structures, in Python: which documents are records (an object with
   `run_id` and `kind`), the flat columns with the JSON types their values take, the metric and
   workload names; then one `json_transform` with that explicit schema extracts every column,
   typed as `flatten` + Arrow would type it: integers int64, numbers double, text, booleans.
   A column whose values mix types (16 in one record, 'auto' in another) is fetched as JSON
   text and converted in Python exactly as `index._array` converts Python values.

This mirrors `store.flatten` (the one definition of a row): `tests/report/test_report_index.py`
checks that both give the same rows. What it does not mirror it refuses rather than guess:
two sources giving one column name (a workload field called `model`), names equal but for
case (DuckDB's struct fields are case-insensitive) raise `Irregular`, and the caller parses in
Python. Files DuckDB cannot read as UTF-8 JSON (a NaN literal, a BOM, a torn file) are returned
by name for the caller to parse in Python, which also warns about the unreadable ones. One known difference: an integer literal
past 64 bits is a double here (json_structure types it DOUBLE) and text in Python (pa.array
cannot hold it).
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from llmbench.store.store import FLAGS, SHAPE_OPTION_COLUMNS, SPECULATION_COLUMNS, STATS

# The columns every row has, in flatten's order, and where in the document each is read.
BASE: dict[str, tuple[str, ...]] = {
    "run_id": ("run_id",), "created_at": ("created_at",), "kind": ("kind",),
    "status": ("status",), "error": ("error",),
    "backend": ("backend", "name"), "backend_version": ("backend", "version"),
    "model": ("model", "name"), "model_params": ("model", "params"),
    "synthetic_weights": ("model", "synthetic_weights"),
    "hardware": ("hardware", "name"), "hardware_count": ("hardware", "count"),
    "point_key": ("point_key",), "source_tool": ("source", "tool"),
}
TAIL: dict[str, tuple[str, ...]] = {
    "roofline_binding_resource": ("roofline", "binding_resource"),
    # the stored version; a row with a bound and no version reads as the first (_versions)
    "roofline_version": ("roofline", "version"),
    "energy_short_window": ("power", "short_window"),
    "contended": ("env", "contention", "contended"),
    **{f"gpu_{k}": ("hardware_counters", k)
       for k in ("dram_bw_util_pct", "sm_util_pct", "sm_occupancy_pct", "tensor_util_pct")},
    "throttled": ("hardware_counters", "throttled"),
    **{f"request_shape_{k}": ("workload", "request_shape_options", k) for k in SHAPE_OPTION_COLUMNS},
    **{name: ("backend", "options", "speculative", k) for name, k in SPECULATION_COLUMNS.items()},
}
_INTS = {"BIGINT", "UBIGINT"}
_SCALARS = _INTS | {"DOUBLE", "VARCHAR", "BOOLEAN", "NULL"}


class Irregular(Exception):
    """These files cannot be read here as flatten would read them (a record holds something
    this reader does not mirror, or DuckDB failed: a file removed while read); parse them
    in Python."""


def _leaf(st: Any, path: Sequence[str]) -> Any:
    """The structure at `path`, or None where a section on the way is not an object."""
    for k in path:
        if not isinstance(st, dict) or k not in st:
            return None
        st = st[k]
    return st


def _obj(st: Any) -> dict[str, Any] | None:
    """An object's structure ('JSON' is json_structure's word for an empty object)."""
    if isinstance(st, dict):
        return st
    return {} if st == "JSON" else None


def _scalar(t: Any) -> bool:
    return isinstance(t, str) and t in _SCALARS


class _Col:
    __slots__ = ("name", "path", "types", "sids", "scalar_only")

    def __init__(self, name: str, path: tuple[str, ...], scalar_only: bool = False):
        self.name, self.path, self.scalar_only = name, path, scalar_only
        self.types: set[str] = set()   # JSON types of the values (a non-scalar as 'JSON')
        self.sids: set[int] = set()    # the structures whose rows take their value from path


def _plan(structs: dict[int, Any]) -> tuple[list[_Col], set[int], set[str], set[str]]:
    """The columns, the structures that are records, metric and workload names."""
    cols: dict[str, _Col] = {}
    records: set[int] = set()
    metrics: set[str] = set()
    workload: set[str] = set()

    def add(name: str, path: tuple[str, ...], sid: int, t: Any, scalar_only: bool = False) -> None:
        c = cols.get(name)
        if c is None:
            c = cols[name] = _Col(name, path, scalar_only)
        elif c.path != path:  # one column fed from two places: flatten's order decides per row
            raise Irregular(f"column {name!r} comes from {'.'.join(c.path)} and {'.'.join(path)}")
        c.sids.add(sid)
        if t is not None:
            c.types.add(t if _scalar(t) else "JSON")

    for sid, st in structs.items():
        if not (isinstance(st, dict) and "run_id" in st and "kind" in st):
            continue
        records.add(sid)
        for name, path in BASE.items():
            add(name, path, sid, _leaf(st, path))
        wl = _obj(st.get("workload")) or {}
        workload.update(wl)
        for k, t in wl.items():
            if _scalar(t):
                add(k, ("workload", k), sid, t, scalar_only=True)
        opts = _obj(_leaf(st, ("backend", "options"))) if _obj(st.get("backend")) is not None else None
        for k, t in (opts or {}).items():
            if _scalar(t) and t != "NULL" and k not in BASE and k not in wl:
                add(f"opt_{k}", ("backend", "options", k), sid, t, scalar_only=True)
        for name, m in (_obj(st.get("metrics")) or {}).items():
            m = _obj(m)
            if m is None:
                continue
            metrics.add(name)
            for s in (*STATS, *FLAGS):
                if s in m:
                    add(f"{name}_{s}", ("metrics", name, s), sid, m[s])
        for name, m in (_obj(st.get("tool_figures")) or {}).items():
            m = _obj(m)
            for s in (*STATS, "label") if m is not None else ():
                if s in m:
                    add(f"tool_{name}_{s}", ("tool_figures", name, s), sid, m[s])
        rf = _obj(st.get("roofline")) or {}
        for part in ("bound", "efficiency"):
            for k, t in (_obj(rf.get(part)) or {}).items():
                add(f"roofline_{part}_{k}", ("roofline", part, k), sid, t)
        for name, path in TAIL.items():
            add(name, path, sid, _leaf(st, path))
    for name in ("path", "_mtime_ns", "_size"):
        if name in cols:
            raise Irregular(f"a record field makes a column named {name!r}")
    lower = [c.lower() for c in cols]
    if len(set(lower)) != len(lower):
        raise Irregular("column names that differ only in case")
    return list(cols.values()), records, metrics, workload


def _sql_type(types: set[str]) -> str | None:
    """The DuckDB type that holds every value as flatten + pa.array would type it; 'JSON'
    when only Python can (mixed types); None when every value is null."""
    t = types - {"NULL"}
    if not t:
        return None
    if t <= _INTS:
        return "BIGINT"
    if t <= _INTS | {"DOUBLE"}:
        return "DOUBLE"
    if len(t) == 1 and next(iter(t)) in ("VARCHAR", "BOOLEAN"):
        return next(iter(t))
    return "JSON"


# Rows per Arrow batch handed to DuckDB: it scans a registered table's batches in parallel,
# one batch (or one temp table of 100,000 rows: a single row group) runs on one core.
_BATCH = 2048


def read_rows(chunks: Iterable[Any], array: Callable[[list[Any]], pa.Array]
              ) -> tuple[pa.Table, set[str], set[str], list[int]]:
    """The flat rows of the record files in `chunks` (each read: `paths`, `data`, `mtimes`,
    `sizes`; in path order), with `_mtime_ns` and `_size`; the metric and workload names seen;
    the indexes (over all chunks) of the files DuckDB could not read as JSON, for the caller to
    parse in Python. `array` converts a column of Python values as the Python path does.
    Arrow's JSON reader is tried first (_arrow_rows); where it cannot give flatten's rows
    exactly, the chunks (those read so far, then the rest) go through DuckDB's two passes."""
    it = iter(chunks)
    seen: list[Any] = []
    if ARROW_FIRST:
        got = _arrow_rows(it, seen)
        if got is not None:
            return got
    return _duckdb_rows(itertools.chain(seen, it), array)


def _duckdb_rows(chunks: Iterable[Any], array: Callable[[list[Any]], pa.Array]
                 ) -> tuple[pa.Table, set[str], set[str], list[int]]:
    import duckdb

    tmp = tempfile.mkdtemp(prefix="llmbench-index-")  # only used if a step exceeds memory
    try:
        con = duckdb.connect(config={"temp_directory": tmp})
        # no progress bar: DuckDB draws it on the user's terminal during a long build
        con.execute("SET enable_progress_bar = false")
        try:
            # One worker: a chunk's structures are found while the caller reads the next one.
            with ThreadPoolExecutor(1, thread_name_prefix="llmbench-structures") as pool:
                parts, found, n = [], [], 0
                for c in chunks:
                    parts.append(_files_table(c, n))
                    found.append(pool.submit(_structures, con, parts[-1]))
                    n += len(c.paths)
                groups: dict[str | None, list[int]] = {}
                for f in found:
                    for st, rows in f.result():
                        groups.setdefault(st, []).extend(rows)
            if not parts:
                return pa.table({}), set(), set(), []
            return _read(con, pa.concat_tables(parts), groups, array)
        except duckdb.Error as e:
            raise Irregular(f"DuckDB: {str(e).splitlines()[0]}") from e
        finally:
            con.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _files_table(c: Any, first: int) -> pa.Table:
    """One chunk of files as Arrow: number (`first` on), path, bytes, mtime, size."""
    offsets = np.zeros(len(c.data) + 1, np.int64)
    np.cumsum([len(b) for b in c.data], out=offsets[1:])
    raw = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(c.data),
                                           [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(c.data))])
    return pa.table({"i": pa.array(range(first, first + len(c.paths)), pa.int64()),
                     "path": pa.array(c.paths, pa.string()), "raw": raw,
                     "_mtime_ns": pa.array(c.mtimes, pa.int64()), "_size": pa.array(c.sizes, pa.int64())})


def _batched(t: pa.Table) -> pa.Table:
    return pa.Table.from_batches(t.to_batches(max_chunksize=_BATCH), t.schema)


def _structures(con, files: pa.Table) -> list[tuple[str | None, list[int]]]:
    """The files' numbers grouped by JSON structure (None: not UTF-8 JSON), parsed over the
    Arrow batches in parallel (nothing is copied into a DuckDB table)."""
    cur = con.cursor()  # (this worker's own handle on the one database)
    try:
        cur.register("files", _batched(files.select(["i", "raw"])))
        return cur.execute(
            "SELECT st, list(i) FROM (SELECT i, try(json_structure(try(decode(raw)))) AS st "
            "FROM files) GROUP BY st").fetchall()
    finally:
        cur.close()


def _read(con, files: pa.Table, groups: dict[str | None, list[int]],
          array: Callable[[list[Any]], pa.Array]) -> tuple[pa.Table, set[str], set[str], list[int]]:
    # The second parse of each file, over the Arrow batches in parallel: the transform.
    sid = np.full(files.num_rows, -1, np.int64)  # each file's structure: its group's number
    structs: dict[int, Any] = {}
    unreadable: list[int] = []
    for k, (st, rows) in enumerate(groups.items()):
        if st is None:
            unreadable = sorted(rows)
        else:
            structs[k] = json.loads(st)
            sid[rows] = k
    cols, records, metrics, workload = _plan(structs)
    if not records:
        return pa.table({}), metrics, workload, unreadable

    import pyarrow.compute as pc

    schema: dict[str, Any] = {}
    for c in cols:
        sql_t = _sql_type(c.types)
        if sql_t is None:
            continue
        node = schema
        for k in c.path[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise Irregular(f"{'.'.join(c.path)} lies under a value")
        if c.path[-1] in node and node[c.path[-1]] != sql_t:
            raise Irregular(f"{'.'.join(c.path)} is read twice")
        node[c.path[-1]] = sql_t
    sids = ",".join(str(s) for s in sorted(records))
    con.register("docs", _batched(files.append_column("sid", pa.array(sid))))
    # The files come sorted by path (index.read_table): their number's order keeps that.
    # DuckDB makes one struct a row; its fields become columns in Arrow, zero-copy: taken in
    # SQL instead (d.a.b AS col, a CASE for the opt_* columns), 178 columns over 6,140 records
    # took 3.1 s against 0.1 s for the transform itself, the time growing with the columns.
    # No ORDER BY: DuckDB keeps a scan's order (preserve_insertion_order), and sorting the
    # structs cost 0.1 s of a cold build of 100,000 records; the order is checked instead.
    sql = (f"SELECT i, path, sid, _mtime_ns, _size, json_transform(decode(raw), $schema) AS d "
           f"FROM docs WHERE sid IN ({sids})")
    got = con.sql(sql, params={"schema": json.dumps(schema)}).to_arrow_table()
    con.unregister("docs")
    got = _in_order(got)
    n = got.num_rows
    d = got.column("d").combine_chunks()
    row_sid = got.column("sid").combine_chunks()
    out: dict[str, pa.Array] = {}
    for c in cols:
        if _sql_type(c.types) is None:
            out[c.name] = pa.nulls(n)
            continue
        a = pc.struct_field(d, list(c.path))  # null where a parent is null
        if c.sids != records:  # rows of other structures do not take this value (opt_*)
            a = pc.if_else(pc.is_in(row_sid, pa.array(sorted(c.sids), row_sid.type)), a,
                           pa.nulls(n, a.type))
        if _sql_type(c.types) == "JSON":  # mixed types: converted as the Python path does
            vals = [None if v is None else json.loads(v) for v in a.to_pylist()]
            if c.scalar_only:
                vals = [None if isinstance(v, (dict, list)) else v for v in vals]
            a = array(vals)
        out[c.name] = _plain(a)
    for c in ("path", "_mtime_ns", "_size"):
        out[c] = _plain(got.column(c).combine_chunks())
    if "roofline_version" in out:
        out["roofline_version"] = _versions(out)
    return pa.table(out), metrics, workload, unreadable


def _in_order(t: pa.Table) -> pa.Table:
    """t's rows by their file number `i` (already so, unless DuckDB reordered them)."""
    i = t.column("i").to_numpy()
    if len(i) > 1 and not (i[1:] > i[:-1]).all():
        t = t.take(np.argsort(i, kind="stable"))
    return t


def _versions(out: dict[str, pa.Array]) -> pa.Array:
    """definitions.roofline_version_of per row: the stored version where the row has a bound,
    the first version where it has a bound and none stored, else null (Arrow compute: a
    Python loop over 100,000 rows took 0.1 s of a cold build)."""
    import pyarrow.compute as pc

    from llmbench.definitions import UNVERSIONED

    stored = out["roofline_version"]
    bounds = [pc.is_valid(a) for c, a in out.items() if c.startswith("roofline_bound_")]
    if not bounds:
        return pa.nulls(len(stored), pa.string())
    has = bounds[0]
    for b in bounds[1:]:
        has = pc.or_(has, b)
    t = stored.type
    if pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_null(t):
        text = pc.cast(stored, pa.string())  # as str() of each value
    else:  # a double or a boolean: str() spells it unlike Arrow's cast
        text = pa.array([None if v is None else str(v) for v in stored.to_pylist()], pa.string())
    return pc.if_else(has, pc.fill_null(text, UNVERSIONED), pa.scalar(None, pa.string()))


def _plain(a: pa.Array) -> pa.Array:
    """Text as pa.string(), as pa.array makes it from Python strings."""
    if pa.types.is_large_string(a.type) or pa.types.is_string_view(a.type):
        return a.cast(pa.string())
    return a


# --- Arrow's JSON reader: one pass -------------------------------------------------------------
# Arrow's reader (pyarrow.json) parses the documents as lines of one buffer on all cores and
# infers one schema over all of them in the same pass: on dashboard_scale.py's 100,000 records
# 1.3 CPU-s (0.7 s wall) against 2.9 CPU-s for json_structure + json_transform (2026-12-04,
# benchmarks/bulk_parse_alternatives.py). It gives one merged structure, not one a document, so
# it is taken only where that loses nothing flatten would see; anything else (a value whose type
# differs between documents, a file that is not one record object, absent and null that flatten
# would tell apart) makes it give way to the DuckDB passes above, which handle them.
ARROW_FIRST = True

_ARROW_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
                pa.bool_(): "BOOLEAN", pa.null(): "NULL"}
_SQL_ARROW = {"BIGINT": pa.int64(), "DOUBLE": pa.float64(), "VARCHAR": pa.string(),
              "BOOLEAN": pa.bool_()}
# Where flatten reads: a timestamp Arrow inferred from text (it has no switch for that) at or
# above one of these paths gives way to DuckDB; elsewhere (an unread section) it is left alone.
_READ_PATHS = [*BASE.values(), *TAIL.values(), ("workload",), ("backend", "options"),
               ("metrics",), ("tool_figures",), ("roofline",)]


class _NotArrow(Exception):
    """What Arrow's one merged structure would not read as flatten does."""


def _arrow_rows(chunks: Iterable[Any], seen: list[Any]
                ) -> tuple[pa.Table, set[str], set[str], list[int]] | None:
    """read_rows by Arrow's JSON reader, each chunk parsed (off the GIL) while the caller reads
    the next; None where it gives way (the chunks read so far are in `seen`, the rest still in
    `chunks`). A chunk is parsed on one core while files are still being read, so the reading
    thread keeps the other (2-core VM, 100,000 records: parsed on every core, the reading took
    1.15 s instead of 0.5 s, and a dashboard's cold open waited for it), on every core once
    all are read."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="llmbench-arrow-json")
    all_read = threading.Event()
    try:
        parsed = []
        for c in chunks:
            seen.append(c)
            parsed.append(pool.submit(_arrow_chunk, c.data, all_read))
            if any(f.done() and f.exception() is not None for f in parsed):
                break  # the rest are read and parsed by DuckDB, overlapping as there
        all_read.set()
        try:
            return _from_arrow([f.result() for f in parsed], seen)
        except (_NotArrow, pa.ArrowException):
            return None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _arrow_chunk(data: list[bytes], all_read: threading.Event | None = None
                 ) -> tuple[pa.Table, list[int]]:
    """One chunk's record documents as one typed table, a row a file, by Arrow's JSON reader
    (on every core once `all_read` is set, or where there is none); which of the chunk's files
    those are. The others cannot be records (no "run_id" or "kind" in their text: a tool's raw
    output beside the records) or are not one object (empty, torn, a list, a byte-order mark):
    the caller parses them in Python, as flatten does."""
    import pyarrow.json as pj

    sent = [i for i, d in enumerate(data)
            if d[:1] == b"{" and d.rstrip()[-1:] == b"}" and b'"run_id"' in d and b'"kind"' in d]
    if not sent:
        return pa.table({}), []
    docs = data if len(sent) == len(data) else [data[i] for i in sent]
    buf = b"\n".join(docs)
    multiline = buf.count(b"\n") != len(docs) - 1  # records are written with indent=1
    block = max(1 << 22, 2 * max(map(len, docs)))
    parse = pj.ParseOptions(newlines_in_values=multiline, unexpected_field_behavior="infer",
                            explicit_schema=pa.schema([("created_at", pa.string())]))
    for threads in ((True, False) if all_read is None or all_read.is_set() else (False,)):
        try:
            t = pj.read_json(pa.BufferReader(buf), parse_options=parse,
                             read_options=pj.ReadOptions(block_size=block, use_threads=threads))
            break
        except pa.ArrowNotImplementedError as e:
            # Blocks inferred in parallel and merged in another order can fail to convert
            # (seen: "JSON conversion to list<item: int64> is not supported", now and then,
            # on the same files): once more on one thread, which reads them in order.
            if not threads:
                raise _NotArrow(str(e).splitlines()[0]) from e
        except (pa.ArrowException, UnicodeDecodeError) as e:  # not JSON, types that differ, ...
            raise _NotArrow(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    if t.num_rows != len(docs):  # (a file of two objects)
        raise _NotArrow("not one row a file")
    if t.column("created_at").null_count == t.num_rows:  # (the explicit type is no finding)
        t = t.set_column(t.schema.get_field_index("created_at"), "created_at", pa.nulls(t.num_rows))
    return t, sent


def _structure(t: pa.DataType, path: tuple[str, ...], stamps: list[tuple[str, ...]]) -> Any:
    """An Arrow type as json_structure spells a structure; timestamps' paths go to `stamps`."""
    if pa.types.is_struct(t):
        return {f.name: _structure(f.type, (*path, f.name), stamps) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_structure(t.value_type, path, stamps)]
    if pa.types.is_timestamp(t):
        stamps.append(path)
        return "VARCHAR"
    if t in _ARROW_TYPES:
        return _ARROW_TYPES[t]
    raise _NotArrow(f"{'.'.join(path)}: {t}")


def _merged(a: Any, b: Any) -> Any:
    """Two chunks' structures as one, as Arrow merges documents' types within a chunk."""
    if a == b or b == "NULL":
        return a
    if a == "NULL":
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merged(a[k], v) if k in a else v
        return out
    if isinstance(a, list) and isinstance(b, list):
        return [_merged(a[0], b[0])]
    if isinstance(a, str) and isinstance(b, str) and {a, b} == {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    raise _NotArrow(f"{a} and {b}")


def _field(top: dict[Any, Any], path: Sequence[str]) -> Any:
    """The values at `path` (null where a section on the way is null), None where no document
    has it; `top` also keeps the sections taken on the way (keyed by their path)."""
    import pyarrow.compute as pc

    a = top.get(path[0])
    for i in range(1, len(path)):
        if a is None or not pa.types.is_struct(a.type) or a.type.get_field_index(path[i]) < 0:
            return None
        key = tuple(path[:i + 1])
        got = top.get(key)
        if got is None:
            got = top[key] = pc.struct_field(a, [path[i]])
        a = got
    return a


def _from_arrow(parsed: list[tuple[pa.Table, list[int]]], chunks: list[Any]
                ) -> tuple[pa.Table, set[str], set[str], list[int]]:
    import pyarrow.compute as pc

    parts: list[tuple[pa.Table, list[int]]] = []  # each table, its files' numbers (all chunks)
    first = 0
    for (t, sent), c in zip(parsed, chunks):
        if t.num_rows:
            parts.append((t, [first + i for i in sent]))
        first += len(c.paths)
    if not parts:
        return pa.table({}), set(), set(), list(range(first))
    stamps: list[tuple[str, ...]] = []
    st: Any = {}
    for t, _ in parts:
        st = _merged(st, _structure(pa.struct(t.schema), (), stamps))
    for s in stamps:
        if any(s[:len(r)] == r or r[:len(s)] == s for r in _READ_PATHS):
            raise _NotArrow(f"{'.'.join(s)} read as a timestamp")
    # Every document a record: a null run_id or kind may be one absent (not a record).
    for t, _ in parts:
        for k in ("run_id", "kind"):
            if k not in t.column_names or t.column(k).null_count:
                raise _NotArrow(f"a document without {k}")
    cols, records, metrics, workload = _plan({0: st})
    if any("JSON" in c.types for c in cols):  # a value that is not a scalar: DuckDB's JSON path
        raise _NotArrow("a column of JSON values")
    # An engine option named like a workload field: flatten makes it a column (opt_<k>) only in
    # the rows whose workload lacks it, and a null workload value reads here as one absent: the
    # rows with the option and no workload value are left to Python (the merged plan makes no
    # opt_<k>, right for every other row).
    opts = _obj(_leaf(st, ("backend", "options"))) if _obj(st.get("backend")) is not None else None
    shared = sorted(set(opts or ()) & set(_obj(st.get("workload")) or ()))
    tops, rows = [], []
    for t, idx in parts:
        top: dict[Any, Any] = {k: t.column(k) for k in t.column_names}  # (chunked: no copy)
        unsure = None
        for k in shared:
            o = _field(top, ("backend", "options", k))
            if o is None:
                continue
            w = _field(top, ("workload", k))
            m = pc.is_valid(o) if w is None else pc.and_(pc.is_valid(o), pc.is_null(w))
            unsure = m if unsure is None else pc.or_(unsure, m)
        if unsure is not None and pc.any(unsure).as_py():
            sure = pc.invert(unsure)
            top = {k: a.filter(sure) for k, a in top.items()}
            idx = [i for i, u in zip(idx, unsure.to_pylist()) if not u]
        tops.append((top, len(idx)))
        rows += idx
    out: dict[str, pa.Array] = {}
    for c in cols:
        sql_t = _sql_type(c.types)
        typ = _SQL_ARROW[sql_t] if sql_t is not None else pa.null()
        pieces: list[pa.Array] = []
        for top, n in tops:
            a = _field(top, c.path)
            if a is None or pa.types.is_null(a.type):
                a = pa.nulls(n, typ)
            elif a.type != typ:
                a = a.cast(typ)  # int64 -> double: a column of ints and floats
            pieces += a.chunks if isinstance(a, pa.ChunkedArray) else [a]
        out[c.name] = pa.chunked_array(pieces, typ).combine_chunks()
    left = sorted(set(range(first)) - set(rows))
    for name, attr, typ in (("path", "paths", pa.string()), ("_mtime_ns", "mtimes", pa.int64()),
                            ("_size", "sizes", pa.int64())):
        vals = [v for c in chunks for v in getattr(c, attr)]
        out[name] = pa.array(vals if not left else [vals[i] for i in rows], typ)
    if "roofline_version" in out:
        out["roofline_version"] = _versions(out)
    return pa.table(out), metrics, workload, left
