import json

import pytest

from llmbench.errors import SpecError
from llmbench.measure.stats import summarize
from llmbench.store import Record, Store
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo


def rec(run="r1", bs=1, status="ok", key=None, lat=1.0):
    return Record(run_id=run, point_key=key or f"k{bs}", kind="inference", status=status,
                  backend=BackendInfo(name="llamacpp", version="0.3.36"),
                  model=ModelInfo(name="smollm2-135m", params=134515008),
                  hardware=HardwareInfo(name="cpu"),
                  workload={"batch_size": bs, "input_len": 16, "output_len": 8},
                  metrics={"batch_latency_s": summarize([lat, lat * 1.1], "s")})


def test_round_trip(tmp_path):
    s = Store(tmp_path)
    r = rec()
    path = s.write(r)
    assert path.exists() and not list(tmp_path.rglob(".tmp-*"))
    back = s.records()
    assert len(back) == 1
    assert back[0].model_dump() == r.model_dump()
    assert json.loads(path.read_text())["schema_version"] == r.schema_version


def test_query_where_and_flat_columns(tmp_path):
    s = Store(tmp_path)
    for bs in (1, 2, 4):
        s.write(rec(bs=bs, lat=bs))
    rows = s.query("batch_size > 1", order_by="batch_size").fetchall()
    assert len(rows) == 2
    cols = s.query().columns
    assert "batch_latency_s_mean" in cols and "batch_latency_s_p99" in cols
    assert s.query("batch_latency_s_mean > 3").fetchall()[0][cols.index("batch_size")] == 4


def test_bad_sql_is_a_spec_error(tmp_path):
    Store(tmp_path).write(rec())
    with pytest.raises(SpecError, match="--where"):
        Store(tmp_path).query("nosuchcolumn = 1")


def test_done_keys_and_corrupt_files_skipped(tmp_path):
    s = Store(tmp_path)
    s.write(rec(bs=1))
    s.write(rec(bs=2, status="failed"))
    (tmp_path / "r1" / "garbage.json").write_text("{not json")
    with pytest.warns(UserWarning):
        assert s.done_keys() == {"k1"}
    with pytest.warns(UserWarning):
        assert s.done_keys(include_failed=True) == {"k1", "k2"}


def test_empty_store_queries(tmp_path):
    assert Store(tmp_path / "none").query().fetchall() == []


def test_records_from_newer_versions_still_load(tmp_path):
    s = Store(tmp_path)
    p = s.write(rec())
    d = json.loads(p.read_text())
    d["future_field"] = {"x": 1}
    p.write_text(json.dumps(d))
    assert s.records()[0].model_extra["future_field"] == {"x": 1}
