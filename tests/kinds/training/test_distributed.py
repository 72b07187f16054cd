"""2-process runs through torchrun (gloo on the CPU), started by the shared launcher
(launch/isolated.py) as one unit: DDP with gradient accumulation, FSDP2, and the scaling
baseline found whichever run stored it."""

import pytest

torch = pytest.importorskip("torch")

from llmbench.launch.pipeline import run_sweep  # noqa: E402
from llmbench.store.store import Store  # noqa: E402
from llmbench.kinds.training.config import TrainPoint  # noqa: E402
from llmbench.kinds.training.kind import TrainingKind  # noqa: E402

TINY = dict(workload="gpt2", size="small", layers=2, hidden=64, heads=2, seq_len=32, micro_batch=2,
            grad_accum=2, steps=3, warmup=1, timeout_s=300)


def run_points(points, results, run_id=None):
    return run_sweep(TrainingKind(), points, results, run_id=run_id).records


@pytest.mark.slow
def test_ddp_two_processes_with_grad_accum(tmp_path):
    # the 2-process point first, as its own run (a job-array task); its 1-process baseline
    # arrives later from another run and still counts
    (two,) = run_points([TrainPoint(**TINY, nproc=2, parallel="ddp")], tmp_path, run_id="task-1")
    assert two.status == "ok", two.error
    assert "scaling_efficiency" not in two.metrics
    (one,) = run_points([TrainPoint(**TINY)], tmp_path, run_id="task-0")
    assert one.status == "ok", one.error
    (two,) = [r for r in Store(tmp_path).records() if r.run_id == "task-1"]
    assert two.workload["parallel"] == "ddp" and two.workload["nproc"] == 2
    # rank 0 watched the machine around its timed steps, the other rank counted as its own
    assert "contention" in two.observers and two.env["contention"]["windows"] == 1
    assert two.workload["tokens_per_step"] == 2 * 2 * 32 * 2
    assert two.metric("tokens_per_s_per_device") == pytest.approx(two.metric("tokens_per_s") / 2)
    eff = two.metric("scaling_efficiency")
    assert eff == pytest.approx(two.metric("tokens_per_s") / (2 * one.metric("tokens_per_s")))


@pytest.mark.slow
def test_fsdp2_two_processes(tmp_path):
    (rec,) = run_points([TrainPoint(**TINY, nproc=2, parallel="fsdp")], tmp_path)
    assert rec.status == "ok", rec.error
    assert rec.workload["parallel"] == "fsdp"
    assert rec.metric("loss_last") > 0


def test_grad_accum_no_sync_matches_one_big_batch():
    """Under DDP the gradient after k micro-steps with no_sync equals the gradient of one batch of
    k micro-batches: checks the accumulation arithmetic the loop uses (loss / k per micro-step)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 1)
    xs = [torch.randn(4, 8) for _ in range(3)]
    for x in xs:
        (lin(x).pow(2).mean() / len(xs)).backward()
    acc = lin.weight.grad.clone()
    lin.weight.grad = None
    lin(torch.cat(xs)).pow(2).mean().backward()
    assert torch.allclose(acc, lin.weight.grad, atol=1e-6)
