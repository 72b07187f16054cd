"""The result record: one self-describing JSON document per measured point.

The contract is DESIGN.md's; fields may be added, never renamed or removed.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench import SCHEMA_VERSION
from llmbench.measure.metric_stats import MetricStats


class Open(BaseModel):
    # extra="allow": records written by a newer llmbench still load.
    model_config = ConfigDict(extra="allow")


class BackendInfo(Open):
    name: str
    version: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class ModelInfo(Open):
    name: str
    source: str | None = None
    params: int | None = None
    synthetic_weights: bool = False


class HardwareInfo(Open):
    name: str
    count: int = 1
    driver: str | None = None


class Roofline(Open):
    bound: dict[str, float] | None = None
    binding_resource: str | None = None
    efficiency: dict[str, float] | None = None
    version: str | None = Field(None, description="roofline/versions.py ROOFLINE_VERSION the "
                                "bound came from; absent: before versioning ('1')")


class Record(Open):
    schema_version: str = SCHEMA_VERSION
    run_id: str
    point_key: str | None = None
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat())
    kind: Literal["inference", "serving", "training", "perplexity", "reference", "estimate"]
    status: Literal["ok", "failed", "skipped"] = "ok"
    error: str | None = None
    backend: BackendInfo
    model: ModelInfo
    hardware: HardwareInfo
    workload: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, MetricStats] = Field(default_factory=dict)
    tool_figures: dict[str, MetricStats] = Field(
        default_factory=dict, description="imported records: the tool's own headline figures as "
        "it reported them, keyed by the llmbench metric each stands beside, each with a `label`")
    roofline: Roofline = Roofline()
    power: dict[str, Any] = Field(default_factory=dict,
                                  description="meter used, or why none (never a silent zero)")
    hardware_counters: dict[str, Any] = Field(
        default_factory=dict, description="NVML GPM utilisations, clocks and throttle reasons over "
        "the measured windows (measure/gpm.py), or {absent: reason}; empty in older records")
    notes: list[str] = Field(default_factory=list, description="warnings, e.g. short outputs")
    observers: dict[str, str] = Field(
        default_factory=dict,
        description="what ran beside the engine during the point's measured window, and how "
                    "(energy, contention, hardware_counters, progress, timelines, "
                    "server_metrics; measure/observers.py): name -> what it did; one that "
                    "did nothing in or around the window is left out")
    env: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] | None = Field(None, description="the point as run, for resume")
    definitions_version: str | None = Field(
        None, description="definitions.py DEFINITIONS_VERSION of the derived flags (energy "
        "window); absent: before versioning ('1')")
    annotations: list[dict[str, Any]] = Field(
        default_factory=list, description="re-annotations (`llmbench annotate`): when, from and "
        "to which versions, what changed, the previous values; measured metrics never change")

    def metric(self, name: str, stat: str = "mean") -> float | None:
        m = self.metrics.get(name)
        return None if m is None else getattr(m, stat)


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
