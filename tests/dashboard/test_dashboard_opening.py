"""The live dashboard opens on the user's own results when the store has any."""

import pytest

from report_records import own_records, reference_records

from llmbench.dashboard.app import _explore_layout, opening
from llmbench.report import data as data_mod
from llmbench.store.store import Store


def _find(node, id_):
    if getattr(node, "id", None) == id_:
        return node
    kids = getattr(node, "children", None)
    for k in kids if isinstance(kids, (list, tuple)) else [kids] if kids is not None else []:
        if (hit := _find(k, id_)) is not None:
            return hit
    return None


def _store(root, records):
    s = Store(root)
    for r in records:
        s.write(r)
    return data_mod.load(root)


def test_opens_on_own_results_beside_reference_data(fixture_store):
    data = data_mod.load(fixture_store)
    assert opening(data) == ("batch", "own")
    layout = _explore_layout(data)
    traces = [t for t in _find(layout, "graph").figure["data"] if t.get("x") is not None and len(t["x"])]
    names = {t.get("name") or "" for t in traces}
    measured = {n for n in names if n and "bound" not in n}
    assert measured and all(n.startswith("cpu-2core") for n in measured), names
    src = _find(layout, {"type": "filter", "field": "source"})
    assert src.value == ["own"]  # one click away from the published data


def test_opens_on_the_kind_the_user_measured(tmp_path):
    serving = [r for r in own_records() if r.kind == "serving"]
    data = _store(tmp_path / "a", serving + reference_records()[:20])
    assert opening(data) == ("serving", "own")
    layout = _explore_layout(data)
    assert _find(layout, "view").value == "serving"
    fig = _find(layout, "graph").figure
    assert any(len(t.get("x") or []) == 4 for t in fig["data"])  # the four request rates


@pytest.mark.parametrize("own", [False, True])
def test_reference_only_or_failed_only_opens_on_published_data(tmp_path, own):
    recs = reference_records()[:20]
    if own:  # the user's only record failed: nothing of theirs to show
        recs += [r for r in own_records() if r.status == "failed"]
    data = _store(tmp_path / "b", recs)
    assert opening(data) == ("batch", None)
