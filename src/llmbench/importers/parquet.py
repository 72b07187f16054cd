"""`llmbench import parquet FILE`: records exported by `llmbench export parquet` come back as
they were (same run ids, point keys, metrics and samples); nothing is converted or added.
Records the store already holds (same identity, exporters/identity.py) are not written twice."""

from __future__ import annotations

from pathlib import Path

from llmbench.importers.common import ImportResult, Unreadable
from llmbench.store.record import Record

TOOL = "parquet"
MAGIC = b"PAR1"


def sniff_path(path: Path) -> str | None:
    with open(path, "rb") as f:
        return TOOL if f.read(4) == MAGIC else None


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    from llmbench.errors import SpecError
    from llmbench.exporters.parquet import read_records

    if sniff_path(path) is None:
        raise Unreadable(f"{path}: not a Parquet file")
    try:
        docs = read_records(path)
    except SpecError as e:
        raise Unreadable(e.problems[0][1]) from None
    res = ImportResult(tool=TOOL, replace=False)
    for i, doc in enumerate(docs, 1):
        try:
            res.records.append(Record.model_validate(doc))
        except ValueError as e:
            res.problems.append(f"{path}: row {i}: {str(e).splitlines()[0]}")
    return res
