"""The findings over the committed H200 records (results/h200) beside the published data read in
place: the verdicts read as the records say. The expected ratios are recomputed here from the
record files themselves (json module), by run id."""

import json
from pathlib import Path

import pytest

from llmbench.analysis import findings as F
from llmbench.analysis.verdict import outcome_of, overall
from tests.analysis.test_findings import REF, needs_ref

H200 = Path(__file__).resolve().parents[2] / "results" / "h200"
pytestmark = [needs_ref, pytest.mark.skipif(not H200.is_dir(), reason=f"committed records not at {H200}")]


def thr(run: str, backend: str, batch: int, **want) -> float:
    """total_throughput_tok_s mean of the one ok record of `run` at this point."""
    hits = []
    for p in (H200 / run).glob("*.json"):
        d = json.loads(p.read_text())
        w = d["workload"]
        if (d["status"] == "ok" and d["backend"]["name"] == backend and d["model"]["name"] == "llama-3-8b"
                and w["batch_size"] == batch and w["input_len"] == 128 and w["output_len"] == 128
                and all(w.get(k) == v for k, v in want.items())):
            hits.append(d["metrics"]["total_throughput_tok_s"]["mean"])
    assert len(hits) == 1, (run, backend, batch, want, hits)
    return hits[0]


@pytest.fixture(scope="module")
def fs():
    return {f.key: f for f in F.load(H200, REF, hardware="NVIDIA H200")}


def test_every_verdict_follows_its_parts_and_numbers(fs):
    for f in fs.values():
        assert f.verdict == overall(f.parts)
        for p in f.parts:
            assert p.outcome == outcome_of(p), (f.key, p)


def test_other_models_are_untested_not_holds(fs):
    f = fs["more-models"]
    assert f.verdict == "untested" and "no claim" in f.reason
    assert {s.what for s in f.own} >= {"vLLM qwen2-7b bf16, batch 64, in/out 128",
                                      "vLLM mixtral-8x7b bf16, batch 64, in/out 128"}


def test_fp8_int8_partly_holds_with_int8_at_batch_64_contradicted(fs):
    f = fs["fp8-int8"]
    parts = {p.claim: p for p in f.parts}
    q8_64 = parts["INT8 faster than 16-bit at batch 64 (llama.cpp Q8_0 over F16)"]
    # Q8_0 and F16 of the 2026-12-02 llama.cpp run
    run = "20261202T131434Z-804460"
    want = thr(run, "llamacpp", 64, gguf_type="q8_0") / thr(run, "llamacpp", 64, gguf_type="f16")
    assert q8_64.own == pytest.approx(want) and want == pytest.approx(0.78, abs=0.005)
    assert q8_64.outcome == "contradicted"
    assert parts["FP8 weights faster than 16-bit at batch 1 (vLLM)"].outcome == "holds"
    assert f.verdict == "partly holds"
    # Q4_0 over F16 at batch 64 from one run (2026-12-01), not over the next day's F16
    run = "20261201T211323Z-68c2af"
    q4 = next(s for s in f.own if s.what == "llama.cpp Q4_0 over F16, batch 64, in/out 128")
    assert q4.value == pytest.approx(thr(run, "llamacpp", 64, gguf_type="q4_0") / thr(run, "llamacpp", 64, gguf_type="f16"))
    assert q4.pairing == f"one run: {run} (2026-12-01)"
    # vLLM's FP8 weights and their bf16 baseline ran in two runs of one machine and day, named
    fp8 = next(s for s in f.own if s.what == "vLLM FP8 weights over bf16, batch 64, in/out 128")
    assert fp8.pairing == ("one machine and day: host vm, 2026-12-02: fp8 weights from 20261202T043108Z-cc2555, "
                           "bf16 from 20261202T043415Z-fd0a3d")
    assert fp8.value == pytest.approx(thr("20261202T043108Z-cc2555", "vllm", 64, weight_quant="fp8")
                                      / thr("20261202T043415Z-fd0a3d", "vllm", 64, weight_quant=None))


def test_block_size_partly_holds_where_block_8_cannot_run(fs):
    f = fs["kv-block-size"]
    sixteen_8, alike = f.parts
    assert sixteen_8.outcome == "untested" and "refused" in sixteen_8.why and "block_size=8" in sixteen_8.why
    blocks = [thr("20261202T043415Z-fd0a3d", "vllm", 64, kv_block_size=None),
              thr("20261202T044239Z-5d8870", "vllm", 64, kv_block_size=32),
              thr("20261202T044239Z-5d8870", "vllm", 64, kv_block_size=64)]
    assert alike.own == pytest.approx(max(blocks) / min(blocks)) and alike.outcome == "holds"
    assert f.verdict == "partly holds"
