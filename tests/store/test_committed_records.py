"""The record contract across moves of its types (issue 38 moved MetricStats into measure/):
every committed record under results/ loads as a Record and writes back the same JSON, field
for field, and its point key is still the name of its file."""

import json
from pathlib import Path

import pytest

from llmbench.measure.metric_stats import MetricStats
from llmbench.store import Store
from llmbench.store.record import Record

# the records as the store finds them (results/ also holds tools' logs and cross-checks)
COMMITTED = [path for path, _ in Store(Path(__file__).parents[2] / "results").raw()]


def test_there_are_committed_records():
    assert len(COMMITTED) > 100


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_a_committed_record_round_trips_unchanged(path):
    doc = json.loads(path.read_text())
    rec = Record.model_validate(doc)
    assert json.loads(rec.model_dump_json()) == doc
    assert all(isinstance(m, MetricStats) for m in rec.metrics.values())
    assert rec.point_key in path.name
