"""Results on disk: one JSON file per record, written atomically; queried with DuckDB.

Layout: <root>/<run_id>/<kind>-<point_key>-<suffix>.json. Names are unique per writer, so
several processes (or hosts on a shared file system) can write into one root without locks;
a write is a temp file renamed into place, so a kill at any moment leaves either the whole
record or nothing, and fsyncs of the file and its directory make it durable (a sweep's writer
lets them run on a thread of their own: Store.write's sync_later). When a run ends, its writer
leaves `<root>/<run_id>/.llmbench-rows.arrow`, the run's index rows (`index.write_sidecar`): a
cold index build reads them, not every record.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from concurrent.futures import Future, ThreadPoolExecutor
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from llmbench.errors import SpecError, StoreWriteError
from llmbench.definitions import roofline_version_of
from llmbench.store.record import Record

DEFAULT_RESULTS = Path("llmbench-results")
STATS = ("mean", "median", "p50", "p90", "p95", "p99", "min", "max", "std", "n",
         "ci95_low", "ci95_high")
# What a metric says about its own trustworthiness (importers/common.py mark_bunching)
FLAGS = ("client_limited", "zero_gap_share")


def create_temp(d: Path | str) -> tuple[int, str]:
    """A new temporary file in `d` (fd, path), named `.tmp-*.part` (readers skip such names).
    Opened with mode 0666 like any new file, so the kernel applies the umask (and a directory's
    default ACL) as it would to any other: a team's shared results directory relies on the
    user's umask, e.g. 002 (mkstemp's 0600 had to be widened by hand, reading the umask)."""
    while True:
        tmp = os.path.join(d, f".tmp-{secrets.token_hex(8)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                           0o666), tmp
        except FileExistsError:
            continue


def atomic_write_text(path: Path, text: str, *, sync: bool = True) -> None:
    """Write `path` whole or not at all: a temporary file renamed into place. sync=True: the
    file and the rename are made durable (fsync of the file, then of the directory) before
    this returns; sync=False leaves that to the caller (`sync_written`)."""
    try:
        fd, tmp = create_temp(path.parent)
    except FileNotFoundError:  # the run's first record makes its directory
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = create_temp(path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync:
        _sync_dir(path.parent)


def sync_written(path: Path) -> None:
    """Make a file written by atomic_write_text(sync=False) durable: its data, then the
    directory entry its rename made. Works from any thread: fsync on a new descriptor flushes
    the file's pages however they were written."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _sync_dir(path.parent)


def _sync_dir(d: Path) -> None:
    try:  # make the rename itself durable
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


# One thread of this process makes records durable when the writer asks it to (Store.write's
# sync_later): a record's two fsyncs (~0.2-0.9 ms; H200 hosts, 2026-12-04) then overlap the
# next point instead of adding to this one. Made again in a forked child (a thread does not
# survive fork).
_SYNC_LANE: tuple[int, ThreadPoolExecutor] | None = None


def _sync_lane() -> ThreadPoolExecutor:
    global _SYNC_LANE
    if _SYNC_LANE is None or _SYNC_LANE[0] != os.getpid():
        _SYNC_LANE = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="llmbench-fsync"))
    return _SYNC_LANE[1]


# -- secrets never reach a record --------------------------------------------------------------
# API keys come from the environment or a key file; whatever holds them, their values are
# replaced before a record touches the disk. Values of environment variables named like
# *_KEY, *_TOKEN, *_SECRET, *_PASSWORD are redacted, and so is anything registered (a key read
# from a file), as is the word after a `--...key`/`--...token` flag in a recorded command line.
REDACTED = "<redacted>"
_SECRET_NAME = re.compile(r"(?i)(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(_|$)")
_SECRET_FLAG = re.compile(r"(?i)^--?[\w-]*(key|token|secret|password)(=.*)?$")
_MIN_SECRET_LEN = 8  # shorter values ("1", "true") would redact ordinary text
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mark a value (e.g. an API key read from a key file) for redaction everywhere."""
    if value and len(value.strip()) >= 4:
        _registered.add(value.strip())


def secret_values() -> list[str]:
    vals = {v for k, v in os.environ.items()
            if _SECRET_NAME.search(k) and len(v.strip()) >= _MIN_SECRET_LEN}
    vals |= _registered
    return sorted(vals, key=len, reverse=True)  # a longer secret first: never half-redacted


def redact(obj: Any, _secrets: list[str] | None = None) -> Any:
    """The same structure with every secret value replaced by REDACTED."""
    vals = secret_values() if _secrets is None else _secrets
    if isinstance(obj, str):
        for v in vals:
            if v in obj:
                obj = obj.replace(v, REDACTED)
        return obj
    if isinstance(obj, dict):
        return {redact(k, vals): redact(v, vals) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = [redact(x, vals) for x in obj]
        for i, x in enumerate(obj):  # ['--api-key', 'sk-..'] or ['--api-key=sk-..']
            if isinstance(x, str) and (m := _SECRET_FLAG.match(x)):
                if m.group(2):
                    out[i] = x.split("=", 1)[0] + "=" + REDACTED
                elif i + 1 < len(out) and isinstance(out[i + 1], str) and not out[i + 1].startswith("-"):
                    out[i + 1] = REDACTED
        return out
    return obj


def redact_json(text: str) -> str:
    """Redact a JSON document; untouched (byte for byte) when it holds no secret."""
    vals = secret_values()
    if not any(v in text or json.dumps(v)[1:-1] in text for v in vals) and not _has_flag(text):
        return text
    return json.dumps(redact(json.loads(text), vals), indent=1, ensure_ascii=False)


_FLAG_IN_JSON = re.compile(r'(?i)"--?[\w-]*(key|token|secret|password)(=[^"]*)?"')


def _has_flag(text: str) -> bool:
    """A `--...key`-like flag anywhere in a JSON text: tried only where a string starts with
    '-' (a record's every key starts a string; searching from each cost ~30 us a record)."""
    i = text.find('"-')
    while i != -1:
        if _FLAG_IN_JSON.match(text, i):
            return True
        i = text.find('"-', i + 1)
    return False


class Store:
    def __init__(self, root: Path | str = DEFAULT_RESULTS):
        self.root = Path(root)
        self._unsynced: tuple[Path, Future] | None = None  # write(sync_later=True)'s last record

    # -- writing ---------------------------------------------------------------------------
    def run_dir(self, rid: str) -> Path:
        if not rid or rid in (".", "..") or any(c in rid for c in "/\\\0"):
            raise SpecError([("run_id", f"{rid!r} cannot name a results directory")])
        return self.root / rid

    def write(self, record: Record, *, sync_later: bool = False) -> Path:
        """Write `record` as a new file of its run, whole or not at all: a kill of the process at
        any moment leaves the whole record or nothing. sync_later=True (a sweep's writer, one
        thread): it returns once the record is in place, and its fsyncs run on this process's
        sync thread while the caller goes on; the next write, and flush(), wait for them first,
        so one record at most is ever waiting. Only an operating-system crash in that ~1 ms can
        lose it (or leave it empty: read as unreadable, its point runs again on resume)."""
        # 64 random bits per name: writers on many hosts never need to coordinate
        key = re.sub(r"[^A-Za-z0-9_.-]", "_", record.point_key or "x")
        name = f"{record.kind}-{key}-{secrets.token_hex(8)}.json"
        return self.rewrite(self.run_dir(record.run_id) / name, record, sync_later=sync_later)

    def rewrite(self, path: Path, record: Record, *, sync_later: bool = False) -> Path:
        """Write `record` to `path` (a new file, or a stored record replaced whole: `llmbench
        annotate`), stamped with today's derived definitions (definitions.stamp)."""
        from llmbench.definitions import stamp

        self.flush()
        stamp(record)
        try:
            atomic_write_text(path, redact_json(record.model_dump_json(indent=1, exclude_none=False)),
                              sync=not sync_later)
        except OSError as e:  # a full disk, a read-only mount: say which record, never a traceback
            raise StoreWriteError(f"could not write the record of point {record.point_key!r} to {path}: "
                                  f"{e.strerror or e} (no partial file is left; records already "
                                  f"written are intact)") from e
        if sync_later:
            self._unsynced = (path, _sync_lane().submit(sync_written, path))
        return path

    def flush(self) -> None:
        """Wait until the last record written with sync_later is durable."""
        if self._unsynced is None:
            return
        path, done = self._unsynced
        self._unsynced = None
        try:
            done.result()
        except OSError as e:
            raise StoreWriteError(f"the record {path} was written but could not be made durable: "
                                  f"{e.strerror or e} (an operating-system crash could lose it)") from e

    def paths(self) -> list[Path]:
        if not self.root.exists():
            return []
        return sorted(p for p in self.root.rglob("*.json") if not p.name.startswith(".tmp-"))

    def raw(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        for p in self.paths():
            try:
                doc = json.loads(p.read_text())
            except (OSError, ValueError) as e:
                warnings.warn(f"skipping unreadable record {p}: {e}", stacklevel=2)
                continue
            if isinstance(doc, dict) and "run_id" in doc and "kind" in doc:
                yield p, doc

    def records(self) -> list[Record]:
        out = []
        for p, d in self.raw():
            try:
                out.append(Record.model_validate(d))
            except ValueError as e:  # valid JSON, broken fields: one bad file never hides the rest
                warnings.warn(f"skipping unreadable record {p}: {str(e).splitlines()[0]}", stacklevel=2)
        return out

    def done_keys(self, include_failed: bool = False) -> set[str]:
        """Point keys already stored (ok, or any status when include_failed)."""
        keys = set()
        for _, d in self.raw():
            k = d.get("point_key")
            if k and (include_failed or d.get("status") == "ok"):
                keys.add(k)
        return keys

    # -- querying --------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        return [flatten(d, path=p) for p, d in self.raw()]

    def query(self, where: str | None = None, order_by: str | None = None):
        """A DuckDB relation over the flattened records (table name `records`)."""
        import duckdb
        import pyarrow as pa

        rows = self.rows()
        # from_pylist takes its columns from the first row: give every row every key
        cols = list(dict.fromkeys(k for r in rows for k in r))
        rows = [{k: r.get(k) for k in cols} for r in rows]
        con = duckdb.connect()
        # An empty store still has the identity columns (a CSV header, a --where that names them).
        table = pa.Table.from_pylist(rows) if rows else \
            pa.table({c: pa.array([], pa.string()) for c in flatten({}, path=Path())})
        con.register("records", table)
        sql = "SELECT * FROM records"
        if where:
            sql += f" WHERE {where}"
        if order_by:
            sql += f" ORDER BY {order_by}"
        try:
            return con.sql(sql)
        except duckdb.Error as e:
            raise SpecError([("--where", f"bad SQL: {_sql_error(e)}")]) from None


def _sql_error(e: Exception) -> str:
    """DuckDB's first line, and for an unknown column its nearest names as 'did you mean'."""
    lines = str(e).splitlines()
    near = [ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.startswith("Candidate bindings:")]
    return lines[0] + (f" (did you mean {near[0]}?)" if near and near[0] else "")


# The request-shape options (workload.request_shape_options) and speculation settings
# (backend.options.speculative) made columns: request_shape_<option>, and these names.
SHAPE_OPTION_COLUMNS = ("mode", "dialect", "enforce", "tool_choice")
SPECULATION_COLUMNS = {"speculative": "method", "speculative_k": "k"}


def flatten(d: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """One flat row per record: identity, workload fields, `<metric>_<stat>` columns."""
    # a corrupted record may hold anything where a section belongs: read it as empty, never crash
    b, m, h = _section(d, "backend"), _section(d, "model"), _section(d, "hardware")
    row: dict[str, Any] = {
        "run_id": d.get("run_id"), "created_at": d.get("created_at"), "kind": d.get("kind"),
        "status": d.get("status"), "error": d.get("error"),
        "backend": b.get("name"), "backend_version": b.get("version"),
        "model": m.get("name"), "model_params": m.get("params"),
        "synthetic_weights": m.get("synthetic_weights"),
        "hardware": h.get("name"), "hardware_count": h.get("count"),
        "point_key": d.get("point_key"),
        # records imported from another tool (importers/*) name it; llmbench's own have none
        "source_tool": (d.get("source") or {}).get("tool") if isinstance(d.get("source"), dict) else None,
    }
    for k, v in _section(d, "workload").items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            row[k] = v
    # Engine options that are not workload fields (transformers' loop, compile_mode, ...): two
    # records can differ only there, so `results` must be able to show them.
    opts, wl = b.get("options"), d.get("workload")
    for k, v in (opts.items() if isinstance(opts, dict) else ()):
        # (a corrupted record may hold anything where a section belongs: never a crash)
        if (isinstance(v, (str, int, float, bool)) and k not in row
                and not (isinstance(wl, dict) and k in wl)):
            row[f"opt_{k}"] = v
    for name, st in _section(d, "metrics").items():
        if isinstance(st, dict):
            for s in (*STATS, *FLAGS):
                if s in st:
                    row[f"{name}_{s}"] = st[s]
    # an imported tool's own figures (importers/common.py tool_figure), beside ours
    for name, st in _section(d, "tool_figures").items():
        if isinstance(st, dict):
            for s in (*STATS, "label"):
                if s in st:
                    row[f"tool_{name}_{s}"] = st[s]
    rf = _section(d, "roofline")
    for part in ("bound", "efficiency"):
        for k, v in _section(rf, part).items():
            row[f"roofline_{part}_{k}"] = v
    row["roofline_binding_resource"] = rf.get("binding_resource")
    # which roofline version the bound and efficiencies come from (roofline/versions.py)
    row["roofline_version"] = roofline_version_of(rf)
    # energy read over a window too short for the meter (definitions.py); None when unknown
    row["energy_short_window"] = _section(d, "power").get("short_window")
    # other work shared the machine during the measured window (measure/contention.py);
    # None when the record predates the check
    cont = _section(d, "env").get("contention")
    row["contended"] = cont.get("contended") if isinstance(cont, dict) else None
    # the hardware's own counters over the measured windows (measure/gpm.py): absent stays None
    hc = _section(d, "hardware_counters")
    for k in ("dram_bw_util_pct", "sm_util_pct", "sm_occupancy_pct", "tensor_util_pct"):
        row[f"gpu_{k}"] = hc.get(k)
    row["throttled"] = hc.get("throttled")
    # settings kept in sections (not scalars) that still tell rows apart: a structured point's
    # mode and dialect, a tools point's tool choice, a speculating engine's method and k
    shape_opts = _section(_section(d, "workload"), "request_shape_options")
    for k in SHAPE_OPTION_COLUMNS:
        row[f"request_shape_{k}"] = shape_opts.get(k)
    spec = _section(_section(b, "options"), "speculative")
    for name, k in SPECULATION_COLUMNS.items():
        row[name] = spec.get(k)
    if path is not None:
        row["path"] = str(path)
    return row


def _section(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def write_all(store: Store, records: Iterable[Record], replace_runs: bool = False) -> tuple[list[Path], int]:
    """Write many records (the import path; a sweep writes one at a time through Store.write).
    replace_runs: first remove the stored records of every run id among them (a re-import
    replaces, never doubles). Returns the paths written and the number of records removed."""
    records = list(records)
    removed = 0
    if replace_runs:
        for rid in dict.fromkeys(r.run_id for r in records):
            for p in store.run_dir(rid).glob("*.json"):
                p.unlink()
                removed += 1
    with ThreadPoolExecutor(max_workers=8) as ex:  # fsync per record dominates: overlap them
        return list(ex.map(store.write, records)), removed
