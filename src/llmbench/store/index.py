"""A cached columnar index of a store: one flat row per record (the same rows as
`Store.rows()`), kept as Parquet in the user cache so that reading 100,000 records costs one
Parquet read, not 100,000 JSON parses.

Reading never writes into the results directory (it may be read-only, or shared by a team):
the index lives in `<user cache>/index/<hash of the resolved directory>.parquet`, and it holds
the directory signature it was built from (every directory's mtime, the root's files), so a
different store that later takes the same path is never mistaken for the old one.

Invalidation: the store only ever adds, replaces or removes whole files by rename
(`atomic_write_text`), and every such change updates the mtime of the directory holding the
file. So a directory whose mtime is unchanged since the index was built holds the same
records; only changed directories are listed file by file (name, mtime, size), and only new or
changed files are parsed again. A record edited in place by hand (which does not touch the
directory) is picked up with `load_index(root, full_check=True)`.

A directory to read that holds a sidecar (store/sidecar.py: the rows its writer left when the
run ended) gives its rows for the files the sidecar covers; only the others are parsed. A cold
build that parses many records no sidecar covers names the command that writes them once
(`llmbench index`, cli/index.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from llmbench.store import sidecar
from llmbench.store.store import _section, flatten

INDEX_VERSION = "7"  # 7: request_shape_* and speculative columns; 6: tool figures, ITL client-limited flags, GPU counters, throttled; 5: `roofline_version`, `energy_short_window`; 4: rows carry `source_tool`; 3: kept in the user cache, `opt_*` engine options
_PRUNE_AFTER_S = 30 * 86400  # an index unused this long (a deleted temp store) is removed
_FILE_COLS = ("path", "_mtime_ns", "_size")


def _scan(root: Path) -> dict[str, int]:
    """Every record directory under root -> its mtime_ns. The root itself is left out (an older
    llmbench kept its index there, changing its mtime on every save); its own few files are
    listed every time instead."""
    dirs: dict[str, int] = {}
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            if d != str(root):
                dirs[d] = os.stat(d).st_mtime_ns
            with os.scandir(d) as it:
                for e in it:
                    if not e.name.startswith(".") and e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return dirs


def record_dirs(root: Path | str) -> list[str]:
    """The directories a build reads records and sidecars in: the root and every record
    directory under it (_scan), in path order."""
    root = Path(root).resolve()
    return sorted([str(root), *_scan(root)])


def _list_files(d: str) -> dict[str, tuple[int, int]]:
    out = {}
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file():
                    st = e.stat()
                    out[e.path] = (st.st_mtime_ns, st.st_size)
    except OSError:
        pass
    return out


def _list_names(d: str) -> list[str]:
    """The record files directly in d, not stat'ed (a cold build reads them all anyway)."""
    try:
        with os.scandir(d) as it:
            return [e.path for e in it
                    if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file()]
    except OSError:
        return []


class _Files:
    """Files read whole, each with the mtime and size of what was read (fstat of the open
    file: no second stat by name, and never the stat of a file replaced in between)."""

    def __init__(self, paths: list[str]):
        self.paths: list[str] = []
        self.mtimes: list[int] = []
        self.sizes: list[int] = []
        self.data: list[bytes] = []
        for p in paths:
            try:
                fd = os.open(p, os.O_RDONLY)
                try:
                    st = os.fstat(fd)
                    data = os.read(fd, st.st_size + 1)
                    if len(data) > st.st_size:  # grown since the fstat: read to the end
                        chunks = [data]
                        while chunk := os.read(fd, 1 << 20):
                            chunks.append(chunk)
                        data = b"".join(chunks)
                finally:
                    os.close(fd)
            except OSError as e:
                warnings.warn(f"skipping unreadable record {p}: {e}", stacklevel=4)
                continue
            self.paths.append(p)
            self.mtimes.append(st.st_mtime_ns)
            self.sizes.append(st.st_size)
            self.data.append(data)

    def extend(self, other: _Files) -> None:
        self.paths += other.paths
        self.mtimes += other.mtimes
        self.sizes += other.sizes
        self.data += other.data


# Files per chunk of a bulk read: DuckDB finds the structures of one chunk (on the other core,
# off the GIL) while the next is read.
CHUNK_FILES = 8192


def _row(path: str, data: bytes, mtime_ns: int, size: int, metrics: set[str],
         workload: set[str]) -> dict[str, Any] | None:
    try:
        doc = json.loads(data)
    except ValueError as e:
        warnings.warn(f"skipping unreadable record {path}: {e}", stacklevel=4)
        return None
    if not (isinstance(doc, dict) and "run_id" in doc and "kind" in doc):
        return None
    # a corrupted record may hold anything where a section belongs: read as flatten reads it
    metrics.update(k for k, v in _section(doc, "metrics").items() if isinstance(v, dict))
    workload.update(_section(doc, "workload").keys())
    row = flatten(doc, path=Path(path))
    row["_mtime_ns"], row["_size"] = mtime_ns, size
    return row


def index_path(root: Path | str) -> Path:
    """Where the index of `root` is cached: the user cache, keyed by the resolved path."""
    from llmbench.cache import cache_dir

    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:24]
    return cache_dir() / "index" / f"{key}.parquet"


def _prune(folder: Path, keep: Path) -> None:
    """Drop indexes nobody read for _PRUNE_AFTER_S (their stores are mostly gone), and partial
    files an hour old (a dashboard stopped while it saved its index in the background)."""
    now = time.time()
    try:
        for pattern, age in (("*.parquet", _PRUNE_AFTER_S), (".tmp-index-*.part", 3600)):
            for p in folder.glob(pattern):
                if p != keep and p.stat().st_mtime < now - age:
                    p.unlink(missing_ok=True)
    except OSError:
        pass


def _array(vals: list[Any]) -> pa.Array:
    """One column of Python values -> Arrow; mixed types (a workload field that is 16 in one
    record and 'auto' in another, an integer past int64) made strings instead of failing the
    whole index."""
    try:
        return pa.array(vals)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else str(v) for v in vals], pa.string())


def _table_from_rows(rows: list[dict[str, Any]]) -> pa.Table:
    if not rows:
        return pa.table({c: pa.array([], pa.string() if c == "path" else pa.int64())
                         for c in _FILE_COLS})
    cols: dict[str, list[Any]] = {}
    n = len(rows)
    for i, r in enumerate(rows):
        for k, v in r.items():
            col = cols.get(k)
            if col is None:
                col = cols[k] = [None] * n
            col[i] = v
    return pa.table({k: _array(vals) for k, vals in cols.items()})


# From this many files to parse, DuckDB reads them (store/bulk.py: all cores, C++ parser);
# fewer are parsed here, which spares importing DuckDB for a catch-up of a few records.
BULK_MIN_FILES = 300


def read_table(paths: list[str], metrics: set[str], workload: set[str],
               bulk: bool | None = None, read: threading.Event | None = None) -> pa.Table:
    """The flat rows of the record files among `paths`, sorted by path, with `_mtime_ns` and
    `_size`; the metric and workload names they hold are added to `metrics` and `workload`.
    `bulk`: parsed by DuckDB (True), in Python (False), or by the number of files (None).
    `read`: set once every file is read (what is left runs in DuckDB, off the GIL)."""
    paths = sorted(paths)
    if bulk is None:
        bulk = len(paths) >= BULK_MIN_FILES
    files, read_to = _Files([]), 0
    if bulk:
        from llmbench.store import bulk as bulk_reader

        def chunks() -> Iterator[_Files]:
            nonlocal read_to
            for read_to in range(CHUNK_FILES, len(paths) + CHUNK_FILES, CHUNK_FILES):
                files.extend(chunk := _Files(paths[read_to - CHUNK_FILES:read_to]))
                if read is not None and read_to >= len(paths):
                    read.set()
                yield chunk

        try:
            table, m, w, left = bulk_reader.read_rows(chunks(), _array)
        except bulk_reader.Irregular:
            pass  # something only flatten itself gets right: every file in Python
        else:
            metrics |= m
            workload |= w
            rows = [r for i in left if (r := _row(files.paths[i], files.data[i], files.mtimes[i],
                                                  files.sizes[i], metrics, workload)) is not None]
            if not rows:
                return table if table.num_rows else _table_from_rows([])
            return _concat(table, _table_from_rows(rows)).sort_by("path")
    files.extend(_Files(paths[read_to:]))  # (what a bulk read that gave up had not read)
    if read is not None:
        read.set()
    rows = [r for p, d, m, s in zip(files.paths, files.data, files.mtimes, files.sizes)
            if (r := _row(p, d, m, s, metrics, workload)) is not None]
    return _table_from_rows(rows)


def _concat(a: pa.Table, b: pa.Table) -> pa.Table:
    if a.num_rows == 0:
        return b
    if b.num_rows == 0:
        return a
    try:
        return pa.concat_tables([a, b], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # A column typed differently in the two parts: rebuild from Python rows.
        return _table_from_rows(a.to_pylist() + b.to_pylist())


def signature(root: Path | str) -> str:
    """What the index's freshness depends on (directory mtimes, files in the root): equal
    signatures mean equal records. A scan, no record is read."""
    root = Path(root).resolve()
    return _signature(_scan(root), _list_files(str(root)))


def _signature(dirs: dict[str, int], top: dict[str, tuple[int, int]]) -> str:
    blob = json.dumps([sorted(dirs.items()), sorted(top.items())])
    return hashlib.sha256(blob.encode()).hexdigest()


class Index:
    """The flat rows of a store as an Arrow table, plus the metric and workload names seen."""

    def __init__(self, table: pa.Table, metrics: list[str], workload: list[str],
                 dirs: dict[str, int], top: dict[str, tuple[int, int]] | None = None):
        self.table, self.metrics, self.workload, self.dirs = table, metrics, workload, dirs
        self.top = top or {}  # files directly in the root (the store writes into run dirs)
        self.cached = False  # what the cache file holds (read from it, or saved)

    @property
    def signature(self) -> str:
        return _signature(self.dirs, self.top)

    def to_pandas(self):
        return self.table.to_pandas()


def _load_cached(path: Path) -> Index | None:
    try:
        # ParquetFile, not pq.read_table: that imports pyarrow.dataset (0.2 s on a 2-core VM)
        # for what is one local file (in a cold open the import overlapped other work: no gain).
        t = pq.ParquetFile(path).read()
        meta = json.loads((t.schema.metadata or {}).get(b"llmbench", b"{}"))
        if meta.get("version") != INDEX_VERSION:
            return None
        t = t.replace_schema_metadata(None)
        top = {p: (m, sz) for p, m, sz in meta["top"]}
        idx = Index(t, meta["metrics"], meta["workload"], meta["dirs"], top)
        idx.cached = True
        return idx
    except Exception:  # a torn or foreign file is only a cache miss
        return None


# A directory changed this recently may change again within its file system's mtime
# granularity (1-2 s on some) without its mtime moving: saved as unknown, it is listed again.
_FRESH_NS = 2_000_000_000


def _settled(dirs: dict[str, int]) -> dict[str, int]:
    now = time.time_ns()
    return {d: (m if now - m > _FRESH_NS else -1) for d, m in dirs.items()}


def _save(idx: Index, path: Path) -> None:
    meta = {"version": INDEX_VERSION, "metrics": idx.metrics, "workload": idx.workload,
            "dirs": idx.dirs, "top": [[p, m, s] for p, (m, s) in idx.top.items()]}
    t = idx.table.replace_schema_metadata({"llmbench": json.dumps(meta)})
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-index-", suffix=".part")
        os.close(fd)
        pq.write_table(t, tmp, compression="zstd")
        os.replace(tmp, path)
        idx.cached = True
        _prune(path.parent, path)
    except OSError as e:
        warnings.warn(f"could not save the results index {path}: {e}", stacklevel=3)
        if tmp:
            Path(tmp).unlink(missing_ok=True)


def _touch(path: Path) -> None:
    try:
        if time.time() - path.stat().st_mtime > 86400:
            os.utime(path)
    except OSError:
        pass


def save_index(root: Path | str, idx: Index) -> None:
    """Save what `load_index(root, save=False)` returned, unless the cache holds it already."""
    path = index_path(Path(root).resolve())
    if idx.cached:
        _touch(path)  # in use: not pruned
    else:
        _save(idx, path)


# A cold build that parses this many records no sidecar covers says how to give them one
# (`llmbench index`): from here the parse costs it 0.1 s or more (1,000 records: 0.46-0.59 s
# against 0.37-0.39 s with sidecars, 2-core VM), much of it importing DuckDB.
HINT_MIN_RECORDS = 1000


def load_index(root: Path | str, full_check: bool = False, save: bool = True,
               read: threading.Event | None = None) -> Index:
    """The index of `root`, refreshed for every directory that changed since it was saved;
    `save=False`: the caller saves it (`save_index`), e.g. once it has served a first page;
    `read`: set once the files to parse are read, when that is what it did (read_table)."""
    root = Path(root).resolve()  # absolute paths: the same index whatever the cwd
    if not root.exists():
        return Index(_table_from_rows([]), [], [], {})
    cache = index_path(root)
    old = _load_cached(cache)
    dirs = _scan(root)
    top = _list_files(str(root))
    if (old is not None and not full_check and old.dirs == dirs
            and top == old.top):
        if save:
            _touch(cache)  # in use: not pruned
        return old
    metrics = set(old.metrics) if old else set()
    workload = set(old.workload) if old else set()
    changed = [d for d, m in dirs.items() if full_check or old is None or old.dirs.get(d) != m]
    changed.append(str(root))
    gone = [d for d in (old.dirs if old else {}) if d not in dirs]
    if old is not None and old.table.num_rows:
        known = {p: (m, s) for p, m, s in zip(*(old.table.column(c).to_pylist() for c in _FILE_COLS))}
    else:
        known = {}
    drop_dirs = set(changed) | set(gone)
    # Rows to keep: files in unchanged directories, and unchanged files in changed ones.
    keep_paths = {p for p in known if os.path.dirname(p) not in drop_dirs}
    parts: list[tuple[pa.Table, set[str]]] = []  # rows from run directories' sidecars
    to_read: list[str] = []
    for d in sorted(changed):  # (sidecars in path order: mostly no sort after)
        if known:  # a catch-up: only new or changed files (name, mtime, size) are read
            current = _list_files(d)
            keep_paths |= {p for p, ms in current.items() if known.get(p) == ms}
            wanted = {p: ms for p, ms in current.items() if known.get(p) != ms}
        else:  # a cold build reads every file, and takes its mtime and size as it reads it
            wanted = None
        side = sidecar.read_sidecar(d, INDEX_VERSION) if wanted is None or wanted else None
        if side is None:
            to_read += _list_names(d) if wanted is None else list(wanted)
            continue
        if wanted is None:
            wanted = _list_files(d)
        part, left = _covered(side[0], wanted)
        parts.append((part, side[1]))
        to_read += left
    parts = _grouped(parts)
    for part, _ in parts:
        for names, found in (("_metrics", metrics), ("_workload", workload)):
            found.update(_names_in(part.column(names)))
    parts = [(t.drop_columns(["_metrics", "_workload"]), js) for t, js in parts]
    new = read_table(to_read, metrics, workload, read=read)
    if not known and new.num_rows >= HINT_MIN_RECORDS and os.access(root, os.W_OK):
        print(f"llmbench: note: {new.num_rows:,} records had no sidecar and were parsed in full; "
              f"run once: llmbench index --results {shlex.quote(str(root))}", file=sys.stderr)
    if old is not None and old.table.num_rows:
        import pyarrow.compute as pc

        mask = pc.is_in(old.table.column("path"), value_set=pa.array(sorted(keep_paths), pa.string()))
        base = old.table.filter(mask)
    else:
        base = _table_from_rows([])
    table = _merge([(base, set()), *parts, (new, set())])
    if parts and not _sorted(table.column("path")):  # as a cold build without sidecars gives them
        table = table.sort_by("path")
    idx = Index(table, sorted(metrics), sorted(workload), _settled(dirs), top)
    if save:
        _save(idx, cache)
    return idx


def write_sidecar(run_dir: Path | str) -> tuple[int, bool] | None:
    """Leave `run_dir`'s index rows as its sidecar (store/sidecar.py). The writer calls this
    when a run ends (a sweep, an import, `llmbench annotate`): once a run, never per record;
    `llmbench index` calls it on every directory of a store.
    A run that has a sidecar already (resumed) keeps its rows of the files it still covers and
    parses only the others: the same sidecar as one written from scratch; one that covers every
    record file is left as it is (no write: the directory's mtime, which the index keys on, stays).
    Returns (the records its sidecar covers, whether it was written), or None when it could not
    be: a failure is only a warning, the records are written, a cold build parses them."""
    d = str(run_dir)
    try:
        old = sidecar.read_sidecar(d, INDEX_VERSION)
        if old is not None:
            kept, left = _covered(old[0], _list_files(d))
            rows = _sidecar_rows(left)
            if not rows and kept.num_rows == old[0].num_rows:
                return kept.num_rows, False
            if (made := _extended(d, kept, *old[1:], rows)) is not None:
                sidecar.write_table(d, *made, INDEX_VERSION)
                return made[0].num_rows, True
        if rows := _sidecar_rows(_list_names(d)):
            sidecar.write(d, rows, INDEX_VERSION)
        return len(rows), bool(rows)
    except Exception as e:  # (any: a sweep never fails for what only makes reading faster)
        warnings.warn(f"could not write the index rows of {d}: {e}", stacklevel=2)
        return None


def _sidecar_rows(paths: list[str]) -> list[dict[str, Any]]:
    """The sidecar rows of the record files among `paths`, by file name (a file that is no
    record is left uncovered: read as before)."""
    files = _Files(sorted(paths))
    rows = []
    for p, data, m, s in zip(files.paths, files.data, files.mtimes, files.sizes):
        metrics: set[str] = set()
        workload: set[str] = set()
        r = _row(p, data, m, s, metrics, workload)
        if r is not None:
            r["path"] = os.path.basename(p)
            r["_metrics"], r["_workload"] = sorted(metrics), sorted(workload)
            rows.append(r)
    return rows


def _extended(d: str, kept: pa.Table, as_json: set[str], first: dict[str, str] | None,
              rows: list[dict[str, Any]]) -> tuple[pa.Table, list[str], dict[str, str]] | None:
    """A sidecar's `kept` rows (read_sidecar, _covered) and the `rows` of its other files ->
    the table, JSON columns and first rows `sidecar.write` would make of them all; None where
    that is not known (which kept row holds a column first, when its first row is gone)."""
    if first is None:
        return None
    names = [p[len(d) + 1:] for p in kept.column("path").to_pylist()]
    kept = kept.set_column(kept.column_names.index("path"), "path", pa.array(names, pa.string()))
    every = names + [r["path"] for r in rows]
    order = sorted(range(len(every)), key=every.__getitem__)  # rows by file name, as from scratch
    place = {every[i]: at for at, i in enumerate(order)}
    # A column's place: its first row's, then its place in that row (a write from scratch
    # takes the columns as they first appear); columns first in one kept row keep their old
    # order, which is their order in that row.
    new_first: dict[str, tuple[int, int, str]] = {}
    for r in rows:  # (in name order)
        for j, k in enumerate(r):
            new_first.setdefault(k, (place[r["path"]], j, r["path"]))
    rank: dict[str, tuple[int, int]] = {}
    kept_names = set(names)
    for i, c in enumerate(kept.column_names):
        was, new = first.get(c), new_first.get(c)
        if was in kept_names:
            rank[c] = min((place[was], i), new[:2]) if new else (place[was], i)
        elif new and was is not None and new[2] <= was:  # before every kept row that may hold it
            rank[c] = new[:2]
        else:
            return None
    for c, (at, j, _) in new_first.items():
        rank.setdefault(c, (at, j))
    columns = sorted(rank, key=rank.__getitem__)
    arrays, json_out, have = {}, [], set(kept.column_names)
    for c in columns:
        a = kept.column(c) if c in have else pa.chunked_array([pa.nulls(len(names))])
        vals = [r.get(c) for r in rows]
        if c in sidecar.LISTS:
            arrays[c] = pa.chunked_array([*a.cast(pa.list_(pa.string())).chunks,
                                          pa.array(vals, pa.list_(pa.string()))])
            continue
        b, js = sidecar.column(vals)
        if not js and c not in as_json and (a.type == b.type or pa.null() in (a.type, b.type)):
            typ = b.type if a.type == pa.null() else a.type
            arrays[c] = pa.chunked_array([*a.cast(typ).chunks, b.cast(typ)], typ)
        else:  # the types of the two parts mix: the values all converted as sidecar.write does
            old = a.to_pylist()
            if c in as_json:
                old = [None if v is None else json.loads(v) for v in old]
            arrays[c], js = sidecar.column(old + vals)
        if js:
            json_out.append(c)
    return pa.table(arrays).take(order), json_out, {c: every[order[rank[c][0]]] for c in columns}


def _covered(side: pa.Table, wanted: dict[str, tuple[int, int]]) -> tuple[pa.Table, list[str]]:
    """The sidecar's rows of the `wanted` files it covers (same name, mtime and size), and the
    wanted files it does not cover, to be parsed."""
    paths, mtimes, sizes = (side.column(c).to_pylist() for c in _FILE_COLS)
    mask = [wanted.get(p) == (m, s) for p, m, s in zip(paths, mtimes, sizes)]
    if not all(mask):
        side = side.filter(pa.array(mask, pa.bool_()))
    covered = {p for p, ok in zip(paths, mask) if ok}
    return side, [p for p in wanted if p not in covered]


def _names_in(col: pa.ChunkedArray) -> list[str]:
    import pyarrow.compute as pc

    return pc.unique(pc.list_flatten(col)).to_pylist()


def _grouped(parts: list[tuple[pa.Table, set[str]]]) -> list[tuple[pa.Table, set[str]]]:
    """Sidecars of one schema concatenated (zero-copy): the runs of a store mostly share one,
    and merging column by column costs per table."""
    groups: dict[tuple[pa.Schema, frozenset[str]], list[pa.Table]] = {}
    for t, js in parts:
        groups.setdefault((t.schema, frozenset(js)), []).append(t)
    return [(pa.concat_tables(ts), set(js)) for (_, js), ts in groups.items()]


def _sorted(col: pa.ChunkedArray) -> bool:
    import pyarrow.compute as pc

    a = col.combine_chunks()
    return len(a) < 2 or pc.all(pc.less_equal(a[:-1], a[1:])).as_py()


def _merge(parts: list[tuple[pa.Table, set[str]]]) -> pa.Table:
    """Tables of rows -> one, each column typed as the Python path types all of its values
    together (`_array`); each part names the columns it holds as JSON text (sidecar.py)."""
    parts = [(t, js) for t, js in parts if t.num_rows]
    if not parts:
        return _table_from_rows([])
    if len(parts) == 1 and not parts[0][1]:
        return parts[0][0]
    out: dict[str, pa.ChunkedArray | pa.Array] = {}
    by_name = [dict(zip(t.column_names, t.columns)) for t, _ in parts]
    for c in dict.fromkeys(c for t, _ in parts for c in t.column_names):
        cols = [(named.get(c), c in js, t.num_rows) for named, (t, js) in zip(by_name, parts)]
        if not any(j for _, j, _ in cols):
            types = {a.type for a, _, _ in cols if a is not None} - {pa.null()}
            if types == {pa.int64(), pa.float64()}:
                types = {pa.float64()}  # as pa.array types ints and floats together
            if len(types) <= 1:
                typ = next(iter(types), pa.null())
                try:
                    chunks = [a.cast(typ).chunks if a is not None else [pa.nulls(n, typ)]
                              for a, _, n in cols]
                    out[c] = pa.chunked_array([ch for cs in chunks for ch in cs], typ)
                    continue
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # an int64 no double holds exactly
                    pass
        vals: list[Any] = []  # mixed types: converted from Python values, as a full parse does
        for a, j, n in cols:
            if a is None:
                vals += [None] * n
            elif j:
                vals += [None if v is None else json.loads(v) for v in a.to_pylist()]
            else:
                vals += a.to_pylist()
        out[c] = _array(vals)
    return pa.table(out)
