"""Isolation: a crash, hang or out-of-memory in a real llama.cpp worker costs only its point."""

import signal
import subprocess
from collections import Counter

import pytest

from launch_helpers import LLMBENCH, fault_env, keys, run_cli, stored, tiny_spec
from llmbench.launch import faults
from llmbench.launch.isolated import _exit_cause
from llmbench.launch.failures import describe, is_out_of_memory
from tests.conftest import needs_llamacpp


def by_key(docs):
    out = {}
    for d in docs:
        out.setdefault(d["point_key"], []).append(d)
    return out


@pytest.mark.engine
@pytest.mark.slow
@needs_llamacpp
def test_each_fault_costs_only_its_point_then_resume_completes(tmp_path):
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2), timeout_s=8, output_len=[2, 3, 4])
    k = keys(spec)
    plan = {k[0]: "segv", k[2]: "hang", k[3]: "oom", k[4]: "abort"}
    res = tmp_path / "results"

    r = run_cli("run", spec, "--results", res, env_extra=fault_env(plan))
    assert r.returncode == 3, r.stderr  # partial success
    assert "Traceback" not in r.stderr
    got = by_key(stored(res))
    assert set(got) == set(k) and all(len(v) == 1 for v in got.values())
    status = {key: v[0]["status"] for key, v in got.items()}
    assert status == {k[0]: "failed", k[1]: "ok", k[2]: "failed", k[3]: "failed",
                      k[4]: "failed", k[5]: "ok"}
    error = {key: v[0]["error"] for key, v in got.items()}
    assert error[k[0]].startswith("worker killed by signal 11 (SIGSEGV)")
    assert error[k[2]].startswith("timed out after 8 s")
    assert error[k[3]].startswith("out of memory: OutOfMemoryError")
    assert error[k[4]].startswith("worker killed by signal 6 (SIGABRT)")
    # the points after a crash ran in a fresh worker and were really measured
    for key in (k[1], k[5]):
        m = got[key][0]["metrics"]
        assert m["batch_latency_s"]["mean"] > 0 and m["load_time_s"]["mean"] > 0
    # a failed record still says what was asked for
    assert got[k[0]][0]["workload"]["batch_size"] == 1 and got[k[0]][0]["backend"]["name"] == "llamacpp"
    assert got[k[0]][0]["workload"]["output_len"] == 2

    r = run_cli("run", spec, "--results", res, "--resume", "--redo-failed")
    assert r.returncode == 0, r.stderr
    ok = Counter(d["point_key"] for d in stored(res) if d["status"] == "ok")
    assert ok == Counter({key: 1 for key in k})

    r = run_cli("run", spec, "--results", res, "--resume")
    assert r.returncode == 0, r.stderr
    assert "skipped 6 point(s)" in r.stderr
    assert len(stored(res)) == 6 + 4  # nothing new: every point is stored


@pytest.mark.engine
@needs_llamacpp
def test_job_array_points_write_into_one_run(tmp_path):
    """Slurm/PBS arrays: `--point K` per task, one shared --run-id, one results directory."""
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2, 3))
    k = keys(spec)
    res = tmp_path / "results"
    procs = [subprocess.Popen([*LLMBENCH, "run", str(spec), "--point", str(i),
                               "--run-id", "array-42", "--results", str(res)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in (0, 2)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    docs = stored(res)
    assert sorted(d["point_key"] for d in docs) == sorted([k[0], k[2]])
    assert {d["run_id"] for d in docs} == {"array-42"}
    assert all(d["status"] == "ok" for d in docs)


def test_fault_plan_parsing():
    assert faults.plan("segv@abc|hang@def") == {"abc": "segv", "def": "hang"}
    assert faults.plan("") == {}
    with pytest.raises(ValueError, match="KIND@POINT_KEY"):
        faults.plan("explode@abc")
    with pytest.raises(ValueError):
        faults.plan("segv@")


def test_exit_causes_name_the_signal():
    assert _exit_cause(-signal.SIGSEGV) == "worker killed by signal 11 (SIGSEGV)"
    assert _exit_cause(-signal.SIGABRT) == "worker killed by signal 6 (SIGABRT)"
    assert "out-of-memory killer" in _exit_cause(-signal.SIGKILL)
    assert _exit_cause(1) == "worker exited with status 1"


def test_out_of_memory_is_named_as_such():
    class OutOfMemoryError(RuntimeError):  # torch.cuda.OutOfMemoryError's name, without torch
        pass

    assert is_out_of_memory(OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(ValueError("bad shape"))
    assert describe(OutOfMemoryError("CUDA out of memory. Tried")).startswith("out of memory: ")


def test_failed_records_get_the_engine_error_lines(tmp_path):
    """An engine that reports its root cause only on stderr (vLLM's worker processes) still
    gets it into the failed record."""
    import io

    from llmbench.launch.isolated import _error_lines, _Worker
    from llmbench.store import Record, Store
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo

    log = io.BytesIO(b"INFO starting\n(Worker pid=1) ERROR [x.py:1] ValueError: No common block size "
                     b"for 16 (CPU_ATTN: [MultipleOf(32)]).\nRuntimeError: Engine core initialization "
                     b"failed. See root cause above.\n")
    assert _error_lines(log) == ("ValueError: No common block size for 16 (CPU_ATTN: [MultipleOf(32)]). | "
                                 "RuntimeError: Engine core initialization failed. See root cause above.")
    store = Store(tmp_path)
    path = store.write(Record(run_id="r", point_key="k", kind="inference", status="failed",
                              error="load failed: RuntimeError: Engine core initialization failed.",
                              backend=BackendInfo(name="vllm"), model=ModelInfo(name="m"),
                              hardware=HardwareInfo(name="cpu")))
    sup = _Worker.__new__(_Worker)
    sup.log = log
    rec = sup._with_engine_errors(path)
    assert "No common block size" in rec.error
    assert "No common block size" in Store(tmp_path).records()[0].error
