"""`llmbench export mlflow DIR --tracking-uri URI [--experiment NAME]`: one MLflow run per record.

- params: the point's identity (kind, engine, model, hardware, every workload field and engine
  option of the flat row: what tells two points apart);
- metrics: every `<metric>_<stat>` and roofline column, by llmbench's names and in the units
  the names carry (MLflow has no unit field);
- tags: source (llmbench, or the imported tool), engine, hardware, kind, status, run id, point
  key, and `llmbench.record_id`, by which a re-export finds the run it made before and updates
  it instead of adding another;
- artifact: the record itself, `record.json`.
Reads only the store: nothing is exported that `results` does not show."""

from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.exporters.identity import record_id
from llmbench.columns import is_metric
from llmbench.store.store import Store, flatten

DEFAULT_EXPERIMENT = "llmbench"
ID_TAG = "llmbench.record_id"
# MLflow's limits (mlflow/utils/validation.py): a param value of 6000 characters, batches of
# 100 params / 1000 metrics.
PARAM_MAX_CHARS = 6000
PARAMS_PER_BATCH = 100
METRICS_PER_BATCH = 1000
# Bookkeeping columns: never a param, never a metric.
SKIP = {"path", "created_at", "error", "_mtime_ns", "_size"}


@dataclass
class ExportSummary:
    created: int = 0
    updated: int = 0
    experiment_id: str = ""

    def lines(self) -> list[str]:
        return [f"created {self.created} MLflow runs, updated {self.updated} "
                f"(experiment id {self.experiment_id})"]


def split_row(row: dict[str, Any]) -> tuple[dict[str, str], dict[str, float]]:
    """A flat row as MLflow params (strings) and metrics (finite numbers)."""
    cols = list(row)
    params, metrics = {}, {}
    for c, v in row.items():
        if c in SKIP or v is None:
            continue
        if is_metric(c, cols) or c.startswith("roofline_efficiency_") or c.startswith("roofline_bound_"):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                metrics[c] = float(v)
        elif c != "roofline_binding_resource" or v:
            params[c] = str(v)[:PARAM_MAX_CHARS]
    return params, metrics


def tags_for(doc: dict[str, Any], row: dict[str, Any]) -> dict[str, str]:
    src = doc.get("source")
    tool = src.get("tool") if isinstance(src, dict) else None
    tags = {ID_TAG: record_id(doc), "source": f"imported: {tool}" if tool else "llmbench",
            "engine": row.get("backend"), "hardware": row.get("hardware"), "kind": row.get("kind"),
            "status": row.get("status"), "llmbench.run_id": row.get("run_id"),
            "llmbench.point_key": row.get("point_key"), "model": row.get("model")}
    if row.get("error"):
        tags["error"] = str(row["error"])[:5000]
    return {k: str(v) for k, v in tags.items() if v is not None}


def export_mlflow(store: Store, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT) -> ExportSummary:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    known = _runs_by_record(client, exp_id)
    summary = ExportSummary(experiment_id=exp_id)
    for path, doc in store.raw():
        row = flatten(doc, path=path)
        params, metrics = split_row(row)
        tags = tags_for(doc, row)
        run_id = known.get(tags[ID_TAG])
        if run_id is None:
            run = client.create_run(exp_id, run_name=_run_name(row), tags=tags,
                                    start_time=_ms(doc.get("created_at")))
            run_id = run.info.run_id
            summary.created += 1
            new_params = params
        else:
            held = client.get_run(run_id).data.params
            # MLflow params are write-once: log only those the run lacks (a record's identity
            # does not change; re-annotation changes metrics, which are re-logged)
            new_params = {k: v for k, v in params.items() if k not in held}
            summary.updated += 1
        # MLflow shows a metric's value of the highest (step, timestamp): stamping each export
        # with its own time makes a re-annotated figure the one shown (the history keeps both)
        stamp = int(time.time() * 1000)
        items = list(new_params.items())
        for i in range(0, len(items), PARAMS_PER_BATCH):
            client.log_batch(run_id, params=[Param(k, v) for k, v in items[i:i + PARAMS_PER_BATCH]])
        mitems = list(metrics.items())
        for i in range(0, len(mitems), METRICS_PER_BATCH):
            client.log_batch(run_id, metrics=[Metric(k, v, stamp, 0)
                                              for k, v in mitems[i:i + METRICS_PER_BATCH]])
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "record.json"
            f.write_text(json.dumps(doc, indent=1, ensure_ascii=False))
            client.log_artifact(run_id, str(f))
        client.set_terminated(run_id, status="FINISHED" if row.get("status") == "ok" else "FAILED")
    return summary


def _runs_by_record(client, exp_id: str) -> dict[str, str]:
    """record id -> MLflow run id, for the runs an earlier export made in this experiment."""
    out: dict[str, str] = {}
    token = None
    while True:
        page = client.search_runs([exp_id], max_results=1000, page_token=token)
        for r in page:
            rid = r.data.tags.get(ID_TAG)
            if rid:
                out.setdefault(rid, r.info.run_id)
        token = page.token
        if not token:
            return out


def _run_name(row: dict[str, Any]) -> str:
    bits = [row.get("kind"), row.get("backend"), row.get("model")]
    for k in ("batch_size", "concurrency", "request_rate", "input_len", "output_len"):
        if row.get(k) is not None:
            bits.append(f"{k}={row[k]}")
    return " ".join(str(b) for b in bits if b is not None)[:250]


def _ms(iso: Any) -> int | None:
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(str(iso)).timestamp() * 1000)
    except ValueError:
        return None
