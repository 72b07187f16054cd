"""vllm bench serve's real output (tests/fixtures/tools/README.md says how it was made) as a
record: metric definitions converted where the raw lists allow, flagged where not."""

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmbench.cli import app
from llmbench.importers import vllm_bench
from llmbench.importers.registry import detect
from llmbench.store.store import Store

TOOLS = Path(__file__).parents[1] / "fixtures" / "tools"
SERVE = TOOLS / "vllm-bench-serve.json"


def _parse_doc(tmp_path, doc):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    return vllm_bench.parse(p)


def test_serve_detailed_matches_vllms_own_summary():
    doc = json.loads(SERVE.read_text())
    res = vllm_bench.parse(SERVE)
    assert res.problems == []
    (rec,) = res.records
    ok = [i for i, e in enumerate(doc["errors"]) if not e]
    assert rec.kind == "serving" and rec.backend.name == "openai-server"
    assert rec.workload["load"] == "closed" and rec.workload["concurrency"] == 1
    assert rec.workload["input_len"] == 16 and rec.workload["output_len"] == 16
    assert rec.metrics["ttft_s"].n == len(ok) == 7
    assert rec.metric("requests_failed") == 1 and rec.metric("requests_completed") == 7
    # same data, same definition (closed loop: no queue time added) -> vLLM's own figures
    assert rec.metric("ttft_s") == pytest.approx(doc["mean_ttft_ms"] / 1e3, rel=1e-9)
    assert rec.metric("tpot_s") == pytest.approx(doc["mean_tpot_ms"] / 1e3, rel=1e-9)
    assert rec.metric("e2e_s", "p99") <= max(doc["latencies"])
    # llama.cpp's server ends each stream with an empty chunk: one gap too many per request,
    # so the gaps are not per token -> kept per chunk and flagged, never called itl_s
    assert "itl_s" not in rec.metrics and "itl_per_chunk_s" in rec.metrics
    assert any("per streamed chunk" in n for n in rec.notes)
    assert rec.source["tool"] == "vllm-bench" and rec.source["at"].endswith("vllm-bench-serve.json:1")


def test_open_loop_adds_the_client_queue_time(tmp_path):
    doc = json.loads(SERVE.read_text())
    doc["request_rate"] = 0.5
    rec = _parse_doc(tmp_path, doc).records[0]
    ok = [i for i, e in enumerate(doc["errors"]) if not e]
    want = sum(doc["ttfts"][i] + doc["queue_times"][i] for i in ok) / len(ok)
    assert rec.workload["load"] == "open" and rec.workload["max_concurrency"] == 1
    assert rec.metric("ttft_s") == pytest.approx(want)


def test_summary_only_file_uses_vllms_numbers_and_flags(tmp_path):
    doc = json.loads(SERVE.read_text())
    for k in ("ttfts", "itls", "latencies", "input_lens", "output_lens", "errors",
              "queue_times", "start_times", "generated_texts"):
        doc.pop(k)
    rec = _parse_doc(tmp_path, doc).records[0]
    assert rec.metric("ttft_s", "median") == pytest.approx(doc["median_ttft_ms"] / 1e3)
    assert rec.metric("ttft_s", "p99") == pytest.approx(doc["p99_ttft_ms"] / 1e3)
    assert rec.metrics["ttft_s"].n == 7 and rec.metrics["ttft_s"].samples is None
    assert rec.workload["output_len"] == round(109 / 7)   # from the totals
    assert "itl_per_chunk_s" in rec.metrics
    open_loop = copy.deepcopy(doc)
    open_loop["request_rate"] = 2.0
    rec = _parse_doc(tmp_path, open_loop).records[0]
    assert "ttft_s" not in rec.metrics and "ttft_from_send_s" in rec.metrics


def test_detect_and_cli_import_replaces(tmp_path):
    assert detect(SERVE) == "vllm-bench"
    res = tmp_path / "res"
    for _ in range(2):
        r = CliRunner().invoke(app, ["import", "auto", str(SERVE), "--results", str(res),
                                     "--hardware", "AMD EPYC"])
        assert r.exit_code == 0, r.output
        assert "imported: 1 records" in r.output
    recs = Store(res).records()
    assert len(recs) == 1 and recs[0].hardware.name == "AMD EPYC"
    assert Store(res).query("backend = 'openai-server'").fetchall()


LATENCY = TOOLS / "vllm-bench-latency.json"


def test_latency_per_iteration_values_are_repeats(tmp_path):
    doc = json.loads(LATENCY.read_text())
    (rec,) = vllm_bench.parse(LATENCY).records
    assert detect(LATENCY) == "vllm-bench" and rec.kind == "inference"
    assert rec.metric("batch_latency_s") == pytest.approx(doc["avg_latency"], rel=1e-12)
    assert rec.metrics["batch_latency_s"].samples == doc["latencies"]
    # batch size and lengths come from the sibling .pytorch.json vLLM wrote
    assert (rec.workload["batch_size"], rec.workload["input_len"], rec.workload["output_len"]) == (1, 16, 16)
    assert rec.metric("output_throughput_tok_s") == pytest.approx(
        sum(16 / x for x in doc["latencies"]) / 5)
    alone = tmp_path / "lat.json"
    alone.write_text(LATENCY.read_text())
    (rec,) = vllm_bench.parse(alone).records
    assert "input_len" not in rec.workload and "output_throughput_tok_s" not in rec.metrics
    assert any("pytorch.json" in n for n in rec.notes)


def test_throughput_counts_prompt_and_output_tokens():
    path = TOOLS / "vllm-bench-throughput.json"
    doc = json.loads(path.read_text())
    (rec,) = vllm_bench.parse(path).records
    assert rec.workload["input_len"] == 16 and rec.workload["output_len"] == 16   # from .pytorch.json
    assert rec.metric("total_throughput_tok_s") == doc["tokens_per_second"]
    assert doc["tokens_per_second"] * doc["elapsed_time"] == pytest.approx(8 * (16 + 16))
    assert "output_throughput_tok_s" not in rec.metrics   # the file has no generated-token count


def test_serve_keeps_vllm_figures_and_flags_bunched_gaps(tmp_path):
    """vLLM's own TTFT median (numpy's, over the successful requests, from the actual send)
    kept beside ours; gaps read several at once (zeros) mark the pooled ITL client-limited."""
    import numpy as np

    from llmbench.importers import vllm_bench

    doc = json.loads((TOOLS / "vllm-bench-serve.json").read_text())
    (rec,) = vllm_bench.parse(TOOLS / "vllm-bench-serve.json").records
    ok = [t for t, e in zip(doc["ttfts"], doc["errors"]) if not e and t > 0]
    assert rec.tool_figures["ttft_s"].median == pytest.approx(float(np.median(ok)))
    assert "queue time" in rec.tool_figures["ttft_s"].label
    assert rec.metrics["itl_per_chunk_s"].client_limited is False
    # every other gap read at once: zeros where the server's tokens were
    for i, g in enumerate(doc["itls"]):
        doc["itls"][i] = [x if j % 2 else 0.0 for j, x in enumerate(g)]
    p = tmp_path / "bunched.json"
    p.write_text(json.dumps(doc))
    (rec,) = vllm_bench.parse(p).records
    gaps = [x for g, e in zip(doc["itls"], doc["errors"]) if not e for x in g]
    (name,) = [k for k in rec.metrics if k.startswith("itl")]
    assert rec.metrics[name].zero_gap_share == pytest.approx(sum(x == 0 for x in gaps) / len(gaps))
    assert rec.metrics[name].client_limited is True and any("client-limited" in n for n in rec.notes)
