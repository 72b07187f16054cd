"""optimum-benchmark 0.6.0's real benchmark.json (tests/fixtures/tools/README.md) as a record."""

import json
from pathlib import Path

import pytest

from llmbench.importers import optimum_benchmark
from llmbench.importers.registry import detect

FILE = Path(__file__).parents[1] / "fixtures" / "tools" / "optimum-benchmark" / "benchmark.json"


def test_text_generation_report_maps_to_offline_metrics():
    rep = json.loads(FILE.read_text())["report"]
    res = optimum_benchmark.parse(FILE)
    assert res.problems == [] and detect(FILE) == "optimum-benchmark"
    (rec,) = res.records
    assert rec.kind == "inference" and rec.backend.name == "transformers"
    assert rec.backend.version == "4.57.6" and rec.hardware.name == "AMD EPYC"
    assert (rec.workload["batch_size"], rec.workload["input_len"], rec.workload["output_len"]) == (1, 16, 16)
    assert rec.workload["force_output"] is True and rec.workload["repeats"] == 5
    assert rec.metrics["batch_latency_s"].samples == rep["generate"]["latency"]["values"]
    assert rec.metrics["ttft_s"].samples == rep["prefill"]["latency"]["values"]
    # prefill + decode = generate per iteration, so TPOT = decode / 15 is first to last token
    for g, p, d in zip(*(rep[k]["latency"]["values"] for k in ("generate", "prefill", "decode"))):
        assert p + d == pytest.approx(g, rel=1e-6)
    assert rec.metric("tpot_s") == pytest.approx(rep["decode"]["latency"]["mean"] / 15)
    assert rec.metric("output_throughput_tok_s") == pytest.approx(
        sum(16 / x for x in rep["generate"]["latency"]["values"]) / 5)
    # 235 per-token steps for 5 iterations of 15 steps: not ours, kept apart and flagged
    assert "itl_s" not in rec.metrics and rec.metrics["per_token_step_s"].n == 235 and rec.notes


def test_unforced_output_length_gives_no_throughput(tmp_path):
    doc = json.loads(FILE.read_text())
    del doc["config"]["scenario"]["generate_kwargs"]["min_new_tokens"]
    p = tmp_path / "benchmark.json"
    p.write_text(json.dumps(doc))
    (rec,) = optimum_benchmark.parse(p).records
    assert "output_throughput_tok_s" not in rec.metrics and "tpot_s" not in rec.metrics
    assert "batch_latency_s" in rec.metrics and rec.workload["force_output"] is False
