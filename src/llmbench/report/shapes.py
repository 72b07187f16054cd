"""Serving records by request shape (workload.request_shape; loadgen/shapes): each shape's
points are shown under its own headline metrics, which the catalog names (metrics.headline,
SHAPE_SHOWN_FIRST), so a new shape needs a catalog line at most, never report code.

A record without the field is a plain text request (the text shape writes no field, so its
point keys stay what they were)."""

from __future__ import annotations

import pandas as pd

from llmbench.loadgen.shapes import DEFAULT
from llmbench.metrics import SHAPE_SHOWN_FIRST, headline, split_column

FIELD = "request_shape"


def shape_of(df: pd.DataFrame) -> pd.Series:
    """Each row's request shape, 'text' where the record names none."""
    if FIELD not in df.columns:
        return pd.Series(DEFAULT, index=df.index, dtype=object)
    return df[FIELD].astype(object).where(df[FIELD].notna(), DEFAULT)


def shapes_in(df: pd.DataFrame) -> list[str]:
    """The shapes of these rows, the plain text shape first, then by name."""
    found = set(shape_of(df))
    return sorted(found, key=lambda s: (s != DEFAULT, s))


def of_shape(df: pd.DataFrame, shape: str) -> pd.DataFrame:
    return df[(shape_of(df) == shape).to_numpy()]


def own_headline(shape: str) -> bool:
    """Whether the catalog gives the shape a headline of its own (else its kind's is shown)."""
    return shape in SHAPE_SHOWN_FIRST


def headline_metrics(kind: str, shape: str) -> list[str]:
    """The metric base names of a kind's and shape's headline columns, in order, each once
    (what a figure of that shape plots: e2e_s for 'e2e_s_p50')."""
    out = []
    for col in headline(kind, shape):
        found = split_column(col)
        out.append(found[0].name if found else col)
    return list(dict.fromkeys(out))


def shape_title(title: str, shape: str) -> str:
    """A kind's title with the shape said, when it is not plain text."""
    return title if shape == DEFAULT else f"{title} — {shape} requests"
