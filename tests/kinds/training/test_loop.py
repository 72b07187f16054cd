"""Tiny configurations of the four workloads, timed on the CPU through the real loop."""

import pytest

torch = pytest.importorskip("torch")

from llmbench.launch.pipeline import run_sweep  # noqa: E402
from llmbench.store.store import Store  # noqa: E402
from llmbench.kinds.training.config import TrainPoint  # noqa: E402
from llmbench.kinds.training.kind import TrainingKind  # noqa: E402


def run_points(points, results):
    """The shared pipeline, in this process (the isolated launcher is tested in
    tests/launch/test_train_launch.py)."""
    return run_sweep(TrainingKind(), points, results, executor="in-process").records

TINY = {
    "block": dict(workload="block", hidden=64, heads=4, seq_len=32, micro_batch=2),
    "gpt2": dict(workload="gpt2", size="small", layers=2, hidden=64, heads=2, seq_len=32, micro_batch=2),
    "genslm": dict(workload="genslm", size="25m", layers=2, hidden=64, heads=4, seq_len=48, micro_batch=2),
    "llama": dict(workload="llama", size="3.2-1b", layers=2, hidden=64, heads=4, kv_heads=2, seq_len=32,
                  micro_batch=2),
}


@pytest.mark.parametrize("name", list(TINY))
def test_tiny_workload_record(tmp_path, name):
    p = TrainPoint(**TINY[name], grad_accum=2, steps=3, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    assert rec.kind == "training"
    m = rec.metrics
    assert m["step_time_s"].n == 3
    w = rec.workload
    assert w["tokens_per_step"] == p.micro_batch * p.seq_len * 2
    # tflops is tokens_per_s x documented flops per token (flops.py)
    fpt = 6 * w["flop_params"] + 12 * w["layers"] * w["hidden"] * p.seq_len
    assert w["flops_per_token"] == fpt
    assert m["tflops"].mean == pytest.approx(m["tokens_per_s"].mean * fpt / 1e12, rel=1e-9)
    assert m["tflops_causal"].mean < m["tflops"].mean
    assert 0 < m["mfu_measured_peak"].mean
    assert m["mem_peak_gib"].mean > 0
    assert rec.power.get("available") is not None
    # no meter and no GPU here: the contention watch is what ran, around the timed steps, and
    # the record's own fsyncs once it was written (the pipeline's writer)
    assert set(rec.observers) == {"contention", "record_sync"}
    assert "nothing inside it" in rec.observers["contention"]
    assert rec.env["contention"]["windows"] == 1
    # a CPU run: the GPU counters are absent with the reason, never zeros (measure/gpm.py)
    assert set(rec.hardware_counters) == {"absent"} and "no GPU counters" in rec.hardware_counters["absent"]
    if name != "block":
        assert m["loss_first"].mean > 0
    stored = Store(tmp_path).records()
    assert [r.point_key for r in stored] == [rec.point_key]


def test_block_forward_only_and_llama_style(tmp_path):
    pts = [TrainPoint(**TINY["block"], mode="fwd", steps=2, warmup=1),
           TrainPoint(**TINY["block"], style="llama", kv_heads=2, steps=2, warmup=1)]
    recs = run_points(pts, tmp_path)
    assert all(r.status == "ok" for r in recs), [r.error for r in recs]
    fwd, llama = recs
    assert fwd.workload["flops_per_token"] == 2 * fwd.workload["flop_params"] + 4 * 64 * 32
    assert "loss_first" not in fwd.metrics


@pytest.mark.slow
def test_learnable_loss_falls(tmp_path):
    p = TrainPoint(**{**TINY["gpt2"], "seq_len": 64}, learnable=True, lr=1e-2, steps=15, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    first, last = rec.metric("loss_first"), rec.metric("loss_last")
    assert last < 0.5 * first, (first, last)


@pytest.mark.slow
def test_llama_learnable_loss_falls(tmp_path):
    p = TrainPoint(**TINY["llama"], learnable=True, lr=1e-2, steps=15, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    assert rec.metric("loss_last") < 0.5 * rec.metric("loss_first")


@pytest.mark.slow
def test_genslm_learnable_loss_falls(tmp_path):
    p = TrainPoint(**TINY["genslm"], learnable=True, lr=1e-2, steps=60, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    assert rec.metric("loss_last") < 0.5 * rec.metric("loss_first")


def test_activation_checkpointing_same_loss(tmp_path):
    base = dict(**TINY["gpt2"], steps=1, warmup=1)
    a, b = run_points([TrainPoint(**base), TrainPoint(**base, activation_checkpointing=True)], tmp_path)
    assert a.status == b.status == "ok", (a.error, b.error)
    assert a.metric("loss_last") == pytest.approx(b.metric("loss_last"), rel=1e-5)


def test_failed_point_is_a_failed_record(tmp_path):
    p = TrainPoint(workload="gpt2", size="small", seq_len=2048, layers=1, hidden=64, heads=2)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "failed" and "exceeds" in rec.error


@pytest.mark.slow
def test_compile_on_cpu(tmp_path):
    p = TrainPoint(**TINY["block"], compile=True, steps=2, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    assert "compile_time_s" in rec.metrics


@pytest.mark.slow
def test_whole_model_compile_trains_the_same(tmp_path):
    """compile_scope=model compiles one graph of the whole forward; the training it does is the
    uncompiled one's (fp32 on the CPU), and the record names the scope."""
    base = dict(**TINY["gpt2"], steps=2, warmup=1)
    plain, whole = run_points([TrainPoint(**base), TrainPoint(**base, compile=True, compile_scope="model")],
                              tmp_path)
    assert plain.status == whole.status == "ok", (plain.error, whole.error)
    assert whole.metric("loss_last") == pytest.approx(plain.metric("loss_last"), rel=1e-4)
    assert whole.workload["compile_scope"] == "model" and "compile_scope" not in plain.workload
    assert whole.backend.options["compile_scope"] == "model"


def test_the_default_compile_scope_keeps_the_point_key():
    from llmbench.kinds.base import point_key

    p = TrainPoint(**TINY["gpt2"], compile=True)
    before = point_key(p.model_dump(mode="json", exclude={"timeout_s", "compile_scope"}))
    assert p.key == before                     # the key of a point measured before the lever
    assert TrainPoint(**TINY["gpt2"], compile=True, compile_scope="model").key != before
    with pytest.raises(ValueError, match="needs compile=true"):
        TrainPoint(**TINY["gpt2"], compile_scope="model")


def test_levers_change_speed_not_the_training(tmp_path):
    """Each lever is the same computation done another way: on the CPU in fp32 the losses
    after the same steps agree, and each record names the lever it ran."""
    base = dict(**TINY["gpt2"], steps=2, warmup=1)
    pts = [TrainPoint(**base), TrainPoint(**base, loss="chunked"),
           TrainPoint(**base, optimizer="foreach"), TrainPoint(**base, optimizer="for-loop")]
    recs = run_points(pts, tmp_path)
    assert all(r.status == "ok" for r in recs), [r.error for r in recs]
    ref = recs[0].metric("loss_last")
    for r in recs[1:]:
        assert r.metric("loss_last") == pytest.approx(ref, rel=1e-5), r.workload
    assert [r.workload["loss"] for r in recs] == ["full", "chunked", "full", "full"]
    assert [r.backend.options["optimizer"] for r in recs] == \
        ["AdamW (fused)", "AdamW (fused)", "AdamW (foreach)", "AdamW (for-loop)"]


def test_head_padding_same_loss_and_noted(tmp_path):
    # 60 wide, 4 heads: 15-wide heads, padded to 16
    base = dict(**{**TINY["genslm"], "hidden": 60}, steps=1, warmup=1)
    padded, plain = run_points([TrainPoint(**base), TrainPoint(**base, head_pad=False)], tmp_path)
    assert padded.status == plain.status == "ok", (padded.error, plain.error)
    assert padded.metric("loss_last") == pytest.approx(plain.metric("loss_last"), rel=1e-5)
    assert any("15 wide, padded with zeros to 16" in n for n in padded.notes)
    assert not any("padded" in n for n in plain.notes)
    assert padded.workload["flops_per_token"] == plain.workload["flops_per_token"]


@pytest.mark.slow
def test_compiled_chunked_head_and_cuda_graph_mode_on_cpu(tmp_path):
    p = TrainPoint(**TINY["gpt2"], compile=True, compile_mode="reduce-overhead", loss="chunked",
                   steps=1, warmup=1)
    (rec,) = run_points([p], tmp_path)
    assert rec.status == "ok", rec.error
    assert rec.backend.options["compile_mode"] == "reduce-overhead"
    assert any("CUDA graphs need a CUDA device" in n for n in rec.notes)
