"""Predictions stored as records of kind `estimate` (llmbench predict --save, kinds/estimate):
the value is the roofline bound times the synthetic set's known efficiency, and every view
(`llmbench results`, the report's frame, the best-configuration ranking) marks estimates and
never ranks them beside measurements unless asked."""

import json

import numpy as np
import pytest
from tests.conftest import cli

from llmbench.kinds.registry import get_kind
from llmbench.measure.stats import summarize
from llmbench.report import best as best_mod
from llmbench.report import data as data_mod
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_predict import _true_eff, synthetic  # the set whose generating efficiency is known


@pytest.fixture
def no_study(monkeypatch):
    from llmbench.analysis import predict_report

    monkeypatch.setattr(predict_report, "study_frame", lambda d: synthetic())


def _measured(thr: float, batch: int = 8) -> Record:
    return Record(run_id="own", kind="inference", point_key=f"own-{batch}",
                  backend=BackendInfo(name="eng"), model=ModelInfo(name="llama-3-8b"),
                  hardware=HardwareInfo(name="H100", count=1),
                  workload={"batch_size": batch, "input_len": 128, "output_len": 128},
                  metrics={"output_throughput_tok_s": summarize([thr], "tok/s"),
                           "batch_latency_s": summarize([batch * 128 / thr], "s")})


def _save(tmp_path, capsys, batch=8):
    code, text = cli(["predict", "--study", "x", "--model", "llama-3-8b", "--engine", "eng",
                        "--hardware", "H100", "--batch-size", str(batch), "--save",
                        "--results", str(tmp_path)], capsys)
    assert code == 0, text
    return text


def test_save_writes_an_estimate_record_of_bound_times_the_known_efficiency(no_study, tmp_path, capsys):
    text = _save(tmp_path, capsys)
    assert "estimate record:" in text
    (path,) = list(tmp_path.glob("*/estimate-*.json"))
    doc = json.loads(path.read_text())
    rec = Record.model_validate(doc)
    assert rec.kind == "estimate" and rec.model.name == "llama-3-8b" and rec.hardware.name == "H100-SXM"  # the catalog id
    eff = _true_eff(8)  # the synthetic set's generating efficiency at batch 8
    thr, lat = rec.metrics["output_throughput_tok_s"].mean, rec.metrics["batch_latency_s"].mean
    # 10%: the ridge (lambda 1) shrinks the batch slope of a fit pooled over both accelerators
    assert thr == pytest.approx(rec.roofline.bound["output_throughput_tok_s"] * eff, rel=0.1)
    assert lat == pytest.approx(rec.roofline.bound["batch_latency_s"] / eff, rel=0.1)
    est = doc["estimate"]["metrics"]["output_throughput_tok_s"]
    assert est["lo"] <= thr <= est["hi"] and est["interval_from"] == "leave-one-accelerator-out"
    assert est["fit_hardware"] == ["X1", "X2"] and est["fit_engines"] == ["eng"]
    assert any("ESTIMATE" in n for n in rec.notes)


def test_the_kind_is_registered_and_runs_a_group(no_study):
    kind = get_kind("estimate")
    p = kind.parse_point({"study": "x", "model": "llama-3-8b", "engine": "eng", "hardware": "H100",
                          "batch_size": 32})
    ctx = kind.context([p])
    (got_p, rec), = kind.run_group([p], ctx, "r1", lambda *a: None)
    assert got_p == p and rec.kind == "estimate" and rec.point_key == p.key
    assert rec.metrics["output_throughput_tok_s"].mean == pytest.approx(
        rec.roofline.bound["output_throughput_tok_s"] * _true_eff(32), rel=0.1)


def test_results_table_marks_estimates(no_study, tmp_path, capsys):
    Store(tmp_path).write(_measured(900.0))
    _save(tmp_path, capsys)
    code, text = cli(["results", "--results", str(tmp_path)], capsys)
    assert code == 0, text
    assert "1 ESTIMATE(S): predicted by llmbench predict, not measured" in text.replace("\n", " ") \
        or "ESTIMATE(S)" in text
    lines = [ln for ln in text.splitlines() if "ESTIMATE" in ln and "│" in ln]
    assert len(lines) == 1  # the estimate's row, and only it, says so
    assert any("inference" in ln for ln in text.splitlines() if "│" in ln)


def test_report_frame_gives_estimates_their_own_source_and_engine_label(no_study, tmp_path, capsys):
    Store(tmp_path).write(_measured(900.0))
    _save(tmp_path, capsys)
    df = data_mod.load(tmp_path).df.set_index("kind")
    assert df.loc["estimate", "source"] == "estimate" and df.loc["inference", "source"] == "own"
    assert df.loc["estimate", "engine"] == "eng (estimate)"
    assert df.loc["inference", "engine"] == "eng (own)"


def test_best_leaves_estimates_out_by_default_and_marks_them_when_asked(no_study, tmp_path, capsys):
    Store(tmp_path).write(_measured(1.0))  # slower than any estimate: ranking them together
    _save(tmp_path, capsys)                 # silently would put the estimate first
    data = data_mod.load(tmp_path)
    ranked, notes = best_mod.find_best(data, best_mod.BestQuery())
    assert list(ranked["source"]) == ["own"]
    assert any("1 estimate(s)" in n and "left out" in n for n in notes)
    ranked, notes = best_mod.find_best(data, best_mod.BestQuery(sources=["own", "estimate"]))
    rows = best_mod.table_rows(ranked)
    assert [r["source"] for r in rows] == ["ESTIMATE", "own"]
    assert any("ranked beside measurements" in n for n in notes)
    assert np.isclose(ranked.loc[ranked["source"] == "own", "throughput_tok_s"].iloc[0], 1.0)


def test_a_list_saved_at_once_is_one_run(no_study, tmp_path, capsys):
    code, text = cli(["predict", "--study", "x", "--model", "llama-3-8b", "--engine", "eng",
                      "--hardware", "H100", "--batch-size", "8,16,32", "--save",
                      "--results", str(tmp_path)], capsys)
    assert code == 0, text
    recs = Store(tmp_path).records()
    assert sorted(r.workload["batch_size"] for r in recs) == [8, 16, 32]
    assert len({r.run_id for r in recs}) == 1 and len(list(tmp_path.glob("*/estimate-*.json"))) == 3
