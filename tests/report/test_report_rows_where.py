"""rows_where (report/aggregate.py): df[mask], without the copy when the mask keeps every row;
and every view's default figure and pins the same as with a copy at each step."""

import json

import numpy as np
import pandas as pd
import pytest

from llmbench.report import aggregate as agg_mod
from llmbench.report import data as data_mod
from llmbench.report import views
from llmbench.report.aggregate import rows_where


def test_rows_where_known_answers():
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=[10, 11, 12])
    assert rows_where(df, df["a"] > 0) is df
    assert rows_where(df, np.ones(3, bool)) is df
    got = rows_where(df, df["a"] != 2)
    assert got.index.tolist() == [10, 12] and got["b"].tolist() == ["x", "z"]
    assert rows_where(df, np.zeros(3, bool)).empty
    empty = df.iloc[0:0]
    assert rows_where(empty, empty["a"] > 0) is empty
    na = pd.array([True, None, True], dtype="boolean")  # a missing value: as df[mask] reads it
    assert rows_where(df, na).equals(df[na]) and rows_where(df, na) is not df


def _copying(df, mask):
    return df[mask]


@pytest.mark.parametrize("failed", [False, True], ids=["all-ok", "some-failed"])
def test_views_unchanged_by_skipped_copies(fixture_store, monkeypatch, failed):
    """Each view's opening choice (axes, colour, pins) and figure, with rows_where against a
    plain df[mask] at every step: the same, whether every row is kept or some are dropped."""
    d = data_mod.load(fixture_store)
    if failed:
        d.df.loc[d.df.index[::7], "status"] = "failed"

    def opening_of(view_key):
        view = views.VIEWS[view_key]
        rows = views.view_rows(d, view)
        x, y = views.default_x(d, view, rows), views.default_y(d, view, rows)
        color, pins = views.default_choice(d, view, x, y, df=rows)
        fig, pts = views.build(d, views.Choice(view=view_key, x=x, y=y, color=color, filters=pins))
        return (x, y, color, json.dumps(pins, sort_keys=True, default=str),
                json.dumps(fig.to_dict(), sort_keys=True, default=str), pts.to_json())

    got = {k: opening_of(k) for k in views.VIEWS}
    for mod in (agg_mod, views):
        monkeypatch.setattr(mod, "rows_where", _copying)
    want = {k: opening_of(k) for k in views.VIEWS}
    assert got == want
