"""`llmbench annotate` recomputes every metric's statistics from the samples its record keeps:
a stale interval (the replaced bootstrap, stamped current) is rewritten with the Student-t
interval computed here by scipy, a metric that kept too few samples is flagged and left."""

import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from llmbench.reannotate import reannotate, reannotate_store
from llmbench.store.record import BackendInfo, HardwareInfo, MetricStats, ModelInfo, Record
from llmbench.store.store import Store


def stale_stats(samples, unit="s"):
    """A metric as the 2026-11-30 records stored it: exact percentiles, numpy's std, and the
    percentile bootstrap's interval, which at n = 3 is [min, max]."""
    a = np.asarray(samples, dtype=float)
    return MetricStats(unit=unit, n=len(a), mean=float(a.mean()), median=float(np.median(a)),
                       p50=float(np.median(a)), p90=float(np.percentile(a, 90)),
                       p95=float(np.percentile(a, 95)), p99=float(np.percentile(a, 99)),
                       min=float(a.min()), max=float(a.max()), std=float(a.std(ddof=1)),
                       ci95_low=float(a.min()), ci95_high=float(a.max()), samples=list(samples))


def stale_record(**metrics):
    return Record(run_id="20261130T085933Z-dd0838", kind="training",
                  backend=BackendInfo(name="pytorch"), model=ModelInfo(name="block-gpt-h4096"),
                  hardware=HardwareInfo(name="NVIDIA H200"), definitions_version="4",
                  metrics=metrics)


def student_t(samples):
    a = np.asarray(samples, dtype=float)
    half = stats.t.ppf(0.975, df=len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a))
    return a.mean() - half, a.mean() + half


def test_bootstrap_interval_of_1_2_3_becomes_the_student_t_interval():
    rec = stale_record(step_time_s=stale_stats([1.0, 2.0, 3.0]))
    ch = reannotate(rec, path=None, now="2026-12-04T00:00:00+00:00")
    m = ch.record.metrics["step_time_s"]
    lo, hi = student_t([1.0, 2.0, 3.0])                 # 2 -+ 4.3027 / sqrt(3)
    assert (m.ci95_low, m.ci95_high) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    assert round(lo, 4) == -0.4841 and round(hi, 4) == 4.4841
    assert m.samples == [1.0, 2.0, 3.0] and m.mean == 2.0 and m.p99 == rec.metrics["step_time_s"].p99
    assert ch.restated == {"step_time_s": ["ci95_low", "ci95_high"]}
    assert ch.restated_by_cause == {"ci95": ["step_time_s"]}
    (entry,) = ch.record.annotations                    # what was replaced is kept
    assert entry["previous"]["statistics"] == {"step_time_s": {"ci95_low": 1.0, "ci95_high": 3.0}}
    assert "metrics.step_time_s.ci95_low: 1 -> -0.484138" in entry["changed"]
    # once current, nothing to do
    assert reannotate(ch.record, path=None) is None


def test_a_wrong_percentile_is_a_statistics_cause_and_is_recomputed():
    bad = stale_stats([0.1, 0.2, 0.4, 0.8])
    lo, hi = student_t([0.1, 0.2, 0.4, 0.8])
    bad.ci95_low, bad.ci95_high, bad.p99 = lo, hi, 0.5   # only p99 is wrong
    ch = reannotate(stale_record(tokens_per_s=bad), path=None)
    assert ch.restated == {"tokens_per_s": ["p99"]}
    assert ch.restated_by_cause == {"statistics": ["tokens_per_s"]}
    assert ch.record.metrics["tokens_per_s"].p99 == pytest.approx(
        float(np.percentile([0.1, 0.2, 0.4, 0.8], 99)), rel=1e-12)


def test_a_metric_without_its_samples_is_flagged_and_left_as_measured():
    first_only = stale_stats(list(range(20)))
    first_only.samples = first_only.samples[:10]        # the old cap: the first samples only
    none_kept = stale_stats([1.0, 5.0])
    none_kept.samples = None
    server = MetricStats(unit="s", n=200, mean=0.1, p99=0.3, source="server histogram")
    rec = stale_record(itl_s=first_only, all_ttft_s=none_kept, server_ttft_s=server,
                       one=MetricStats(unit="s", n=1, mean=3.0))
    ch = reannotate(rec, path=None)
    new = ch.record
    assert ch.restated == {} and sorted(ch.unrecomputable) == ["all_ttft_s", "itl_s"]
    for name in ("itl_s", "all_ttft_s"):
        got = new.metrics[name].model_dump()
        assert got.pop("recomputable") is False
        assert got == rec.metrics[name].model_dump()    # its figures as measured
    assert "recomputable" not in new.metrics["server_ttft_s"].model_dump()
    assert "recomputable" not in new.metrics["one"].model_dump()
    (note,) = [n for n in new.notes if n.startswith("statistics not recomputable")]
    assert "itl_s (the first 10 samples of 20)" in note and "all_ttft_s (no samples of 2)" in note


def test_cli_counts_by_cause_then_rewrites_and_is_current(tmp_path):
    from llmbench.cli import app

    store = Store(tmp_path)
    paths = [store.write(stale_record(step_time_s=stale_stats([1.0, 2.0, 3.0]),
                                      tflops=stale_stats([400.0, 410.0]))),
             store.write(stale_record(step_time_s=stale_stats([1.0, 2.0, 3.0])))]
    for p, rec in zip(paths, (stale_record(step_time_s=stale_stats([1.0, 2.0, 3.0]),
                                           tflops=stale_stats([400.0, 410.0])),
                              stale_record(step_time_s=stale_stats([1.0, 2.0, 3.0])))):
        p.write_text(rec.model_dump_json(indent=1))     # as stored: stale, stamped "4"
    before = {p: p.read_bytes() for p in paths}
    r = CliRunner().invoke(app, ["annotate", "--results", str(tmp_path), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "2 would be re-annotated" in r.output
    assert ("only the ci95 differed (the replaced bootstrap interval): 3 metric(s) in 2 "
            "record(s)") in r.output
    assert {p: p.read_bytes() for p in paths} == before
    r = CliRunner().invoke(app, ["annotate", "--results", str(tmp_path)])
    assert r.exit_code == 0, r.output
    doc = json.loads(paths[0].read_text())
    lo, hi = student_t([400.0, 410.0])
    assert doc["metrics"]["tflops"]["ci95_low"] == pytest.approx(lo, rel=1e-12)
    assert doc["metrics"]["tflops"]["samples"] == [400.0, 410.0]
    n, changes = reannotate_store(tmp_path, write=False)
    assert n == 2 and changes == []


def test_the_not_recomputable_note_is_one_note_whatever_the_metrics_order():
    """A record read back from Parquet lists its metrics in another order; stamping it again
    must not add a second note (the Parquet round trip found this)."""
    from llmbench.definitions import stamp

    def bare(n):
        m = stale_stats([float(k) for k in range(n)])
        m.samples = None
        return m

    rec = stale_record(b_s=bare(3), a_s=bare(4))
    stamp(rec)
    again = Record.model_validate({**rec.model_dump(mode="json"),
                                   "metrics": dict(reversed(rec.model_dump(mode="json")["metrics"].items()))})
    stamp(again)
    notes = [n for n in again.notes if n.startswith("statistics not recomputable")]
    assert notes == ["statistics not recomputable (the record kept too few samples; left as "
                     "measured, flagged recomputable: false): a_s (no samples of 4), "
                     "b_s (no samples of 3)"]
