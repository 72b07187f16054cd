"""A point that ran keeps its measurement when the bookkeeping after it fails: a real llama.cpp
point whose engine's effective_options / model_facts / workload_facts raise afterwards."""

import pytest

from llmbench.backends.llamacpp import LlamaCppBackend
from llmbench.kinds.inference.kind import InferenceKind
from llmbench.kinds.inference.spec import SweepSpec
from llmbench.launch.pipeline import run_sweep

pytestmark = pytest.mark.engine


def _spec():
    return SweepSpec(backends=["llamacpp"], models=["smollm2-135m"], batch_size=[1],
                     input_len=[8], output_len=[4], repeats=2, warmups=0,
                     backend_options={"llamacpp": {"n_threads": 1}})


@pytest.mark.parametrize("method", ["effective_options", "model_facts", "workload_facts"])
def test_bookkeeping_error_after_the_point_keeps_the_measurement(tmp_path, monkeypatch, method):
    pytest.importorskip("llama_cpp")
    calls = []

    def boom(self):
        calls.append(self.call)   # called after the point ran: its metrics are in
        raise KeyError(f"{method} broke")

    monkeypatch.setattr(LlamaCppBackend, method, boom)
    [rec] = run_sweep(InferenceKind(), _spec().points(), tmp_path / "res", executor="in-process", run_id="r").records
    assert calls, "the broken method was never called"
    assert rec.status == "ok" and rec.error is None, rec.error
    lat = rec.metrics["batch_latency_s"]
    assert lat.n == 2 and len(lat.samples) == 2 and all(x > 0 for x in lat.samples)
    assert rec.metrics["output_throughput_tok_s"].n == 2 and "load_time_s" in rec.metrics
    notes = [n for n in rec.notes if n.startswith("bookkeeping error")]
    # llama.cpp's workload_facts reads model_facts: a broken model_facts costs both facts
    steps = {"model_facts": ["model_facts", "workload_facts"]}.get(method, [method])
    assert [n.split(":")[1].strip() for n in notes] == steps, rec.notes
    assert all(f"{method} broke" in n for n in notes), notes
    if method != "effective_options":   # the other facts are still recorded
        assert rec.backend.options["n_threads"] == 1 and rec.backend.options["n_gpu_layers"] == 0
    if method == "effective_options":
        assert rec.workload["gguf_type"] == "q4_1" and rec.model.weight_bytes > 0
    # the stored record is the same
    from llmbench.store.store import Store

    [stored] = Store(tmp_path / "res").records()
    assert stored.status == "ok" and stored.notes == rec.notes


def test_bookkeeping_runs_before_the_energy_settle_and_the_record_has_both(tmp_path, monkeypatch):
    """The caller's bookkeeping overlaps NVML's closing energy read: it runs before
    take_energy waits for it, and the stored record still holds its facts and the energy's."""
    pytest.importorskip("llama_cpp")
    from llmbench.kinds.inference import kind, offline

    order = []
    keep, settle = kind._bookkeep, offline.OfflineRun.take_energy
    monkeypatch.setattr(kind, "_bookkeep", lambda *a: (order.append("bookkeep"), keep(*a)))
    monkeypatch.setattr(offline.OfflineRun, "take_energy",
                        lambda self: (order.append("energy"), settle(self)))
    [rec] = run_sweep(InferenceKind(), _spec().points(), tmp_path / "res", executor="in-process",
                      run_id="r").records
    assert order == ["bookkeep", "energy"], order
    assert rec.status == "ok" and "load_time_s" in rec.metrics and rec.roofline is not None
    assert rec.backend.options["n_threads"] == 1
