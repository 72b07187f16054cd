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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from llmbench.store.store import flatten

INDEX_VERSION = "4"  # 4: rows carry `source_tool`; 3: kept in the user cache, `opt_*` engine options
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


def _read_row(path: str, mtime_ns: int, size: int, metrics: set[str],
              workload: set[str]) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError) as e:
        warnings.warn(f"skipping unreadable record {path}: {e}", stacklevel=3)
        return None
    if not (isinstance(doc, dict) and "run_id" in doc and "kind" in doc):
        return None
    metrics.update(k for k, v in (doc.get("metrics") or {}).items() if isinstance(v, dict))
    workload.update((doc.get("workload") or {}).keys())
    row = flatten(doc, path=Path(path))
    row["_mtime_ns"], row["_size"] = mtime_ns, size
    return row


def index_path(root: Path | str) -> Path:
    """Where the index of `root` is cached: the user cache, keyed by the resolved path."""
    from llmbench.cache import cache_dir

    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:24]
    return cache_dir() / "index" / f"{key}.parquet"


def _prune(folder: Path, keep: Path) -> None:
    """Drop indexes nobody read for _PRUNE_AFTER_S (their stores are mostly gone)."""
    cutoff = time.time() - _PRUNE_AFTER_S
    try:
        for p in folder.glob("*.parquet"):
            if p != keep and p.stat().st_mtime < cutoff:
                p.unlink(missing_ok=True)
    except OSError:
        pass


def _table_from_rows(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows -> Arrow, with mixed-type columns (a workload field that is 16 in one record and
    'auto' in another) made strings instead of failing the whole index."""
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
    arrays = {}
    for k, vals in cols.items():
        try:
            arrays[k] = pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays[k] = pa.array([None if v is None else str(v) for v in vals], pa.string())
    return pa.table(arrays)


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

    @property
    def signature(self) -> str:
        return _signature(self.dirs, self.top)

    def to_pandas(self):
        return self.table.to_pandas()


def _load_cached(path: Path) -> Index | None:
    try:
        t = pq.read_table(path)
        meta = json.loads((t.schema.metadata or {}).get(b"llmbench", b"{}"))
        if meta.get("version") != INDEX_VERSION:
            return None
        t = t.replace_schema_metadata(None)
        top = {p: (m, sz) for p, m, sz in meta["top"]}
        return Index(t, meta["metrics"], meta["workload"], meta["dirs"], top)
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


def load_index(root: Path | str, full_check: bool = False, save: bool = True) -> Index:
    """The index of `root`, refreshed for every directory that changed since it was saved."""
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
    current: dict[str, tuple[int, int]] = {}
    for d in changed:
        current.update(_list_files(d))
    drop_dirs = set(changed) | set(gone)
    # Rows to keep: files in unchanged directories, and unchanged files in changed ones.
    keep_paths = {p for p in known if os.path.dirname(p) not in drop_dirs}
    keep_paths |= {p for p, ms in current.items() if known.get(p) == ms}
    new_rows = [r for p, (m, s) in sorted(current.items()) if known.get(p) != (m, s)
                if (r := _read_row(p, m, s, metrics, workload)) is not None]
    if old is not None and old.table.num_rows:
        import pyarrow.compute as pc

        mask = pc.is_in(old.table.column("path"), value_set=pa.array(sorted(keep_paths), pa.string()))
        base = old.table.filter(mask)
    else:
        base = _table_from_rows([])
    table = _concat(base, _table_from_rows(new_rows))
    idx = Index(table, sorted(metrics), sorted(workload), _settled(dirs), top)
    if save:
        _save(idx, cache)
    return idx
