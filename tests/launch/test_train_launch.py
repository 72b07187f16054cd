"""Training points through the shared launcher (launch/pipeline.py, isolated.py): resume after
kill -9, job-array indexing, failures and time limits that cost one point, baselines found
whichever run stored them."""

import importlib.util
import os
import random
import signal
import subprocess
import time
from collections import Counter

import pytest

from launch_helpers import LLMBENCH, fault_env, run_cli, sigint_default, stored
from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store
from llmbench.kinds.training.baselines import annotate_store
from llmbench.kinds.training.config import TrainPoint

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch not installed (pip install 'llmbench[train]')")

# three tiny block points: a few milliseconds of work each, the worker's torch import dominates
SWEEP = ["train", "--workload", "block", "--hidden", "32", "--heads", "2", "--seq-len", "8,16,24",
         "--micro-batch", "1", "--steps", "2", "--warmup", "1", "--device", "cpu"]
TINY = dict(workload="block", hidden=32, heads=2, micro_batch=1, steps=2, warmup=1, device="cpu")


def listed(res, *extra) -> list[list[str]]:
    r = run_cli(*SWEEP, "--results", res, "--list-points", *extra)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.strip().splitlines()]


@needs_torch
@pytest.mark.slow
def test_kill_9_a_training_sweep_then_resume(tmp_path):
    seed = int(os.environ.get("LLMBENCH_KILL_SEED", time.time_ns() % 10**6))
    rng = random.Random(seed)
    res = tmp_path / "results"
    keys = [k for _, k, _ in listed(res)]
    assert len(keys) == 3
    env = {k: v for k, v in os.environ.items() if k != "LLMBENCH_FAULT_INJECT"}
    kills = []
    for _ in range(2):
        p = subprocess.Popen([*LLMBENCH, *SWEEP, "--results", str(res), "--resume"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        delay = rng.uniform(0.5, 8.0)
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            kills.append(round(delay, 2))
        for d in stored(res):  # nothing torn, nothing half-written
            assert d["point_key"] in keys and d["status"] in ("ok", "failed"), (seed, d)
    r = run_cli(*SWEEP, "--results", res, "--resume")
    assert r.returncode == 0, (seed, kills, r.stderr)
    time.sleep(1.0)  # an orphaned worker, were there one, would write its record by now
    docs = stored(res)
    assert Counter(d["point_key"] for d in docs) == Counter(keys), (seed, kills)  # none doubled
    assert len({d["run_id"] for d in docs}) == 1, (seed, kills)  # --resume continues the run
    assert all(d["status"] == "ok" for d in docs), (seed, kills)


@needs_torch
def test_list_points_and_point_k_pick_the_same_point(tmp_path):
    res = tmp_path / "results"
    lines = listed(res)
    assert [i for i, _, _ in lines] == ["0", "1", "2"] and "cpu block seq=16" in lines[1][2]
    assert listed(res, "--point", "1") == [lines[1]]
    assert not res.exists()  # a dry run writes nothing
    r = run_cli(*SWEEP, "--results", res, "--point", "3")
    assert r.returncode == 2 and "out of range" in r.stderr
    r = run_cli(*SWEEP, "--results", res, "--run-id", "../x")
    assert r.returncode == 2 and "--run-id" in r.stderr


@needs_torch
@pytest.mark.slow
def test_point_k_runs_exactly_one_training_point(tmp_path):
    res = tmp_path / "results"
    lines = listed(res)
    r = run_cli(*SWEEP, "--results", res, "--point", "1", "--run-id", "array-7")
    assert r.returncode == 0, r.stderr
    (d,) = stored(res)
    assert (d["point_key"], d["run_id"], d["status"]) == (lines[1][1], "array-7", "ok")
    assert d["env"]["argv"][-4:] == ["--point", "1", "--run-id", "array-7"]  # the user's command
    assert "1 point(s) on cpu" in r.stderr and f"results: {res.resolve()}" in r.stdout
    r = run_cli(*SWEEP, "--results", res, "--point", "1", "--run-id", "array-7", "--resume")
    assert r.returncode == 0 and "skipped 1 point(s) already stored (--resume)" in r.stderr
    assert "ok (earlier)" in r.stdout
    assert len(stored(res)) == 1


@needs_torch
@pytest.mark.slow
def test_ctrl_c_names_the_command_that_continues_the_same_run(tmp_path):
    res = tmp_path / "results"
    keys = [k for _, k, _ in listed(res)]
    env = {**os.environ, **fault_env({keys[1]: "hang"}), "COLUMNS": "200"}
    p = subprocess.Popen([*LLMBENCH, *SWEEP, "--results", str(res)], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default)
    deadline = time.monotonic() + 180
    while not (res.exists() and stored(res)):  # point 0 stored; the worker hangs before point 1
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.2)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in out + err, err
    [first] = stored(res)
    line = " ".join(err.split())
    cmd = f"llmbench {' '.join(SWEEP)} --results {res} --resume --run-id {first['run_id']}"
    assert f"interrupted: 1 of 3 points stored in {res}; continue with `{cmd}`" in line, err
    r = run_cli(*cmd.split()[1:])
    assert r.returncode == 0, r.stderr
    docs = stored(res)
    assert {d["run_id"] for d in docs} == {first["run_id"]} and len(docs) == 3
    assert r.stdout.count("ok (earlier)") == 1


@needs_torch
@pytest.mark.slow
def test_a_raise_and_a_hang_each_cost_one_point(tmp_path, monkeypatch):
    from llmbench.launch.pipeline import run_sweep
    from llmbench.kinds.training.kind import TrainingKind

    hang = TrainPoint(**TINY, seq_len=8, timeout_s=10)
    bad = TrainPoint(workload="gpt2", size="small", seq_len=2048, layers=1, hidden=64, heads=2,
                     steps=1, warmup=1, device="cpu", timeout_s=10)  # over GPT-2's 1024 positions
    good = TrainPoint(**TINY, seq_len=16, timeout_s=10)
    monkeypatch.setenv(*fault_env({hang.key: "hang"}).popitem())
    result = run_sweep(TrainingKind(), [hang, bad, good], tmp_path)
    by_key = {r.point_key: r for r in result.records}
    assert len(result.records) == 3 and len(Store(tmp_path).records()) == 3
    assert by_key[hang.key].status == "failed"
    assert by_key[hang.key].error.startswith("timed out after 10 s"), by_key[hang.key].error
    assert by_key[bad.key].status == "failed" and "exceeds" in by_key[bad.key].error
    assert by_key[good.key].status == "ok", by_key[good.key].error
    assert by_key[hang.key].kind == "training" and by_key[hang.key].workload["seq_len"] == 8


@needs_torch
@pytest.mark.slow
def test_a_failing_sweep_exits_3_with_the_cause(tmp_path):
    """The CLI's exit status and message, as for `llmbench run` (a segfault injected in the
    worker just before the point)."""
    res = tmp_path / "results"
    r = run_cli("train", "--workload", "block", "--hidden", "32", "--heads", "2", "--seq-len", "8",
                "--device", "cpu", "--list-points", "--results", res)
    key = r.stdout.split("\t")[1]
    r = run_cli("train", "--workload", "block", "--hidden", "32", "--heads", "2", "--seq-len", "8",
                "--device", "cpu", "--results", res, env_extra=fault_env({key: "segv"}))
    assert r.returncode == 3, r.stderr
    assert "worker killed by signal 11 (SIGSEGV)" in r.stderr
    (d,) = stored(res)
    assert d["status"] == "failed" and d["kind"] == "training" and d["error"].startswith("worker killed")


def _record(tmp_path, run_id: str, tokens_per_s: float, **point) -> Record:
    p = TrainPoint(**{**TINY, "seq_len": 8, **point})
    rec = Record(run_id=run_id, point_key=p.key, kind="training", backend=BackendInfo(name="pytorch"),
                 model=ModelInfo(name="block-h32"), hardware=HardwareInfo(name="cpu"),
                 metrics={"tokens_per_s": summarize([tokens_per_s], "tok/s")},
                 spec=p.model_dump(mode="json"))
    Store(tmp_path).write(rec)
    return rec


@pytest.mark.parametrize("baseline_first", [True, False])
def test_baselines_count_whichever_run_stored_them(tmp_path, baseline_first):
    """Job-array tasks finish in any order: the ratio is filled by whichever finishes last."""
    if baseline_first:
        _record(tmp_path, "task-0", 100.0)
        assert annotate_store(Store(tmp_path), []) == []
    two = _record(tmp_path, "task-1", 150.0, nproc=2, parallel="ddp")
    if not baseline_first:
        assert "scaling_efficiency" not in annotate_store(Store(tmp_path), [two])[0].metrics
        _record(tmp_path, "task-0", 100.0)
    (two,) = annotate_store(Store(tmp_path), [two])
    assert two.metric("scaling_efficiency") == pytest.approx(150.0 / (2 * 100.0))
    (on_disk,) = [r for r in Store(tmp_path).records() if r.run_id == "task-1"]
    assert on_disk.metric("scaling_efficiency") == pytest.approx(0.75)
    annotate_store(Store(tmp_path), [])  # idempotent: one ratio, one note
    (on_disk,) = [r for r in Store(tmp_path).records() if r.run_id == "task-1"]
    assert sum("scaling_efficiency" in n for n in on_disk.notes) == 1


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray not installed (pip install 'llmbench[ray]')")
def test_training_sweep_on_a_local_ray_cluster(tmp_path):
    res = tmp_path / "results"
    keys = [k for _, k, _ in listed(res)]
    r = run_cli(*SWEEP, "--results", res, "--executor", "ray",
                env_extra={**fault_env({keys[2]: "segv"}), "RAY_ADDRESS": "", "RAY_AUTH_MODE": "disabled"})
    assert r.returncode == 3, r.stderr[-3000:]
    docs = {d["point_key"]: d for d in stored(res)}
    assert set(docs) == set(keys) and len(stored(res)) == 3
    assert docs[keys[2]]["error"].startswith("worker killed by signal 11 (SIGSEGV)")
    assert [docs[k]["status"] for k in keys[:2]] == ["ok", "ok"]
