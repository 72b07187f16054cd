"""The statistics of one metric as a record stores them (DESIGN.md's `metrics` entry).

Its own module, free of numpy: the store (a lower layer than the code that measures) imports
this type to read records, and reading records must stay cheap (the dashboard's cold open)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MetricStats(BaseModel):
    # extra="allow": records written by a newer llmbench still load (labels of tool figures).
    model_config = ConfigDict(extra="allow")

    unit: str
    n: int
    mean: float | None = None
    median: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None
    std: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None
    samples: list[float] | None = Field(None, description="raw values (capped), for re-analysis")
