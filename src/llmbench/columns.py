"""What the flat columns of a record (store.flatten) mean: configuration or outcome, and which
of them tell a set of rows apart. Shared by `llmbench results` and the report's tables. It
lives beside the metric catalog (metrics.py), whose names it reads: the store, a layer below,
only writes and flattens records."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from llmbench.metrics import split_column
from llmbench.store.store import FLAGS, STATS

# Never a configuration: identity, bookkeeping, outcomes and values derived from others.
NOT_CONFIG = {"run_id", "created_at", "error", "path", "point_key", "backend_version",
              "roofline_binding_resource", "model_params", "text", "requests_sent", "seed",
              "flop_params", "flops_per_token", "tokens_per_step", "steps", "hidden", "heads",
              "layers", "kv_heads", "opt_torch", "opt_torch_threads", "opt_sampling",
              "request_rate_label", "source_file", "source_row", "_mtime_ns", "_size",
              "repeats", "warmups", "warmup", "cooldown", "timeout_s", "num_prompts",
              "duration_s", "input_len_dist", "output_len_dist", "source", "sources",
              # readings of the measured window (store.flatten), outcomes a table flags
              "energy_short_window", "contended", "throttled", "gpu_dram_bw_util_pct",
              "gpu_sm_util_pct", "gpu_sm_occupancy_pct", "gpu_tensor_util_pct"}
IDENTITY = ("kind", "status", "backend", "model", "hardware", "hardware_count")
# The workload's shape: said once when every row shares it (a table of rows that differ only in
# engine options must still say at which batch size and lengths they were measured).
SHAPE = ("batch_size", "input_len", "output_len", "concurrency", "request_rate", "seq_len",
         "micro_batch")


def is_metric(c: str, cols: Sequence[str]) -> bool:
    """`<metric>_<stat>` (with a metric's flags and a tool figure's label) and roofline columns
    are outcomes, not configuration: a catalogued metric's (metrics.py), or one whose `_mean`
    column is there (a tool's own metric)."""
    if c.startswith("roofline_") or split_column(c):
        return True
    for f in (*FLAGS, "label"):
        if c.endswith(f"_{f}") and f"{c[:-len(f) - 1]}_mean" in cols:
            return True
    base, _, stat = c.rpartition("_")
    if stat in ("low", "high") and base.endswith("_ci95"):
        base, stat = base[:-len("_ci95")], "mean"
    return bool(base) and stat in STATS and f"{base}_mean" in cols


def config_columns(cols: Sequence[str]) -> list[str]:
    return [c for c in cols if c not in NOT_CONFIG and not is_metric(c, cols)]


def distinguishing(cols: Sequence[str], values: Callable[[str], Sequence[Any]]
                   ) -> tuple[list[str], dict[str, Any]]:
    """The configuration columns whose value differs between the rows (identity first, then
    as the records name them: engine options such as compile, kv_cache or loop included),
    and the identity and workload-shape values every row shares (for one caption line
    instead of a column)."""
    varying, same = [], {}
    for c in config_columns(cols):
        v = list(values(c))
        if len({json.dumps(x, default=str) for x in v}) > 1:
            varying.append(c)
        elif v and v[0] is not None and c in IDENTITY + SHAPE:
            same[c] = v[0]
    first = [c for c in IDENTITY if c in varying]
    return first + [c for c in varying if c not in first], same


# Training workload fields that name the model's family and size, which the model column says.
MODEL_FIELDS = {"workload", "size", "style", "genslm_ffn", "model_params"}


def said_once(varying: Sequence[str], cells: Callable[[str], Sequence[str]],
              header: Callable[[str], str]) -> tuple[list[str], dict[str, str]]:
    """The columns worth showing, with their headers: columns equal cell for cell are one
    column ('in/out', 'batch/conc'), and fields that only describe the model (a training
    workload's family and size) go when the model column is shown."""
    show: list[str] = []
    headers: dict[str, str] = {}
    for c in varying:  # the model comes first (IDENTITY): the fields it explains follow it
        # two yes/no settings agree row for row by chance ('compile/energy <2 s'): never one
        twin = None if _yes_no(cells(c)) else \
            next((k for k in show if list(cells(k)) == list(cells(c))), None)
        if twin is not None:
            headers[twin] += "/" + header(c)
        elif not (c in MODEL_FIELDS and "model" in show and _follows(cells("model"), cells(c))):
            show.append(c)
            headers[c] = header(c)
    return show, headers


def _yes_no(vals: Sequence[str]) -> bool:
    return all(str(v).lower() in ("true", "false", "–", "") for v in vals)


def _follows(by: Sequence[str], vals: Sequence[str]) -> bool:
    """True when `vals` holds one value per value of `by` (it tells apart no rows that `by` does not)."""
    seen: dict[str, str] = {}
    return all(seen.setdefault(b, v) == v for b, v in zip(by, vals))
