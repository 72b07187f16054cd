"""Kinds registry: a new kind of point is one folder under kinds/ plus one line here.

Values are "module:Class" strings, so that reading the registry imports no kind: the pipeline
(launch/) reads it to rebuild a kind from its name in a worker process or a Ray task, and
imports nothing else from kinds/."""

from __future__ import annotations

from llmbench.registry import load

REGISTRY: dict[str, str] = {
    "inference": "llmbench.kinds.inference.kind:InferenceKind",
    "serving": "llmbench.kinds.serving.kind:ServingKind",
    "training": "llmbench.kinds.training.kind:TrainingKind",
    "estimate": "llmbench.kinds.estimate.kind:EstimateKind",
}


def kind_class(name: str) -> type:
    return load(REGISTRY, name, "kind", "kind")


def get_kind(name: str):
    """A kind's PointKind, built with its defaults (as a worker rebuilds it from a job file)."""
    return kind_class(name)()
