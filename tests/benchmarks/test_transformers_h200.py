"""benchmarks/transformers_h200.py's issue-22 check: the fast path's batch 1/16/64 points beside
vLLM's newest default-KV bf16 record of each, and batch 1 as a fraction of the 180 tok/s goal."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import transformers_h200 as bench  # noqa: E402


def vllm_record(path: Path, created_at: str, batch: int, tok_s: float, **workload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    w = {"batch_size": batch, "input_len": 128, "output_len": 128, "weight_dtype": "bf16",
         "weight_quant": None, "kv_cache_dtype": None, "kv_block_size": None, **workload}
    path.write_text(json.dumps({
        "backend": {"name": "vllm"}, "model": {"name": "llama-3-8b"}, "status": "ok",
        "created_at": created_at, "workload": w,
        "metrics": {"output_throughput_tok_s": {"mean": tok_s}}}))


def test_vllm_reference_takes_the_newest_default_record(tmp_path):
    vllm_record(tmp_path / "old" / "inference-a.json", "2026-12-01T10:00:00", 1, 190.0)
    vllm_record(tmp_path / "new" / "inference-b.json", "2026-12-02T10:00:00", 1, 200.0)
    vllm_record(tmp_path / "fp8" / "inference-c.json", "2026-12-03T10:00:00", 1, 280.0,
                weight_quant="fp8")
    vllm_record(tmp_path / "new" / "inference-d.json", "2026-12-02T10:00:00", 16, 2800.0)
    assert bench.vllm_reference(tmp_path) == {(1, 128, 128): (200.0, "new"),
                                              (16, 128, 128): (2800.0, "new")}


def row(batch, tok_s, token_clock="device", loop="step"):
    return {"status": "ok", "loop": loop, "compile": True, "token_clock": token_clock,
            "batch": batch, "in": 128, "out": 128, "output_tok_s": tok_s}


def test_goal_rows_divide_by_vllm_and_by_the_goal(capsys):
    rows = [row(1, 189.0), row(16, 2100.0), row(64, 4250.0), row(1, 140.0, "host_sync"),
            row(1, 999.0, loop="generate")]
    vllm = {(1, 128, 128): (210.0, "r1"), (16, 128, 128): (2800.0, "r2")}
    goal = bench.goal_rows(rows, vllm)
    assert [(g["batch"], g["output_tok_s"], g["vllm_output_tok_s"]) for g in goal] == [
        (1, 189.0, 210.0), (16, 2100.0, 2800.0), (64, 4250.0, None)]
    assert goal[0]["of_goal"] == pytest.approx(1.05) and goal[0]["of_vllm"] == pytest.approx(0.9)
    assert goal[1]["of_vllm"] == pytest.approx(0.75) and goal[1]["of_goal"] is None
    assert goal[2]["of_vllm"] is None
    bench.print_goal(goal, rows)
    out = capsys.readouterr().out
    assert "1 | 189.0 | 210.0 (r1) | 0.900 | 1.050" in out
    assert "64 | 4250.0 | - (no record) | - | -" in out
    assert "token_clock=device 189.0 vs host_sync 140.0 out tok/s (1.350x)" in out


def test_one_gpu_runs_the_fast_path_first():
    assert bench.plans(1) == {0: bench.FAST_PATH + bench.BASELINES}
    assert bench.plans(2) == {0: bench.FAST_PATH, 1: bench.BASELINES}
    label, args = bench.FAST_PATH[0]
    assert args[args.index("--batch-size") + 1] == "1,16,64"
