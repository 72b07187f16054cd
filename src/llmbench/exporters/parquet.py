"""`llmbench export parquet DIR OUT`: one flat row per record (the columns of
`llmbench results --format csv`, typed by DuckDB) plus `record_json`, the whole record, and
`record_id` (exporters/identity.py). pandas, Polars, Spark and DuckDB read it as it is;
`llmbench import parquet OUT` turns it back into the same records."""

from __future__ import annotations

import json
from pathlib import Path

from llmbench.errors import SpecError
from llmbench.exporters.identity import record_id
from llmbench.store.store import Store

RECORD_COLUMN = "record_json"
ID_COLUMN = "record_id"
# A path on the exporting machine means nothing to the reader of the file.
LOCAL_COLUMNS = ("path",)


def export_parquet(store: Store, out: Path, where: str | None = None) -> int:
    """Write the store's records (those matching `where`, SQL over the flat columns) to `out`,
    atomically (a temp file renamed). Returns the number of rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = {str(p): d for p, d in store.raw()}
    table = store.query(where, order_by="created_at, path" if docs else None).to_arrow_table()
    paths = table.column("path").to_pylist() if "path" in table.column_names else []
    records = [docs[p] for p in paths]
    table = table.drop_columns([c for c in LOCAL_COLUMNS if c in table.column_names])
    table = table.append_column(ID_COLUMN, pa.array([record_id(d) for d in records], pa.string()))
    table = table.append_column(RECORD_COLUMN, pa.array(
        [json.dumps(d, ensure_ascii=False, sort_keys=True) for d in records], pa.string()))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".tmp-{out.name}")
    try:
        pq.write_table(table, tmp)
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return table.num_rows


def read_records(path: Path) -> list[dict]:
    """The whole records kept in an exported file, in its row order."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as e:  # pyarrow raises its own ArrowInvalid for a non-Parquet file
        raise SpecError([("PATH", f"{path}: not a Parquet file ({e})")]) from None
    if RECORD_COLUMN not in schema.names:
        raise SpecError([("PATH", f"{path}: a Parquet file without a {RECORD_COLUMN!r} column "
                          "(not written by `llmbench export parquet`)")])
    return [json.loads(s) for s in pq.read_table(path, columns=[RECORD_COLUMN])
            .column(RECORD_COLUMN).to_pylist()]
