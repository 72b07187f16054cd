"""Exporters: the store's records out to the tools teams keep their experiments in.

Each reads only the store (the same records `results`, `report` and `dashboard` show):
`parquet` (one flat row per record, the `results` columns, plus the whole record as JSON, so a
file read back with `llmbench import parquet` gives the records again) and `mlflow` (one MLflow
run per record, updated in place on a re-export)."""
