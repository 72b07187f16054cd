"""--executor ray on a local Ray cluster: groups run as Ray tasks, isolated inside, and write
into one shared store."""

import importlib.util

import pytest

from launch_helpers import fault_env, keys, run_cli, stored, tiny_spec
from llmbench.kinds.inference.kind import InferenceKind
from llmbench.launch.ray_executor import resources
from llmbench.backends.options import EngineOptions
from llmbench.kinds.inference.spec import Point
from tests.conftest import needs_llamacpp

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="ray not installed (pip install 'llmbench[ray]')")


def test_task_asks_for_every_device_of_its_parallel_layout():
    p = Point(backend="vllm", model="llama-3-8b", device="cuda",
              options=EngineOptions(tensor_parallel=2, pipeline_parallel=2))
    assert resources(p, InferenceKind()) == {"num_cpus": 1, "num_gpus": 4}
    assert resources(Point(backend="llamacpp", model="smollm2-135m"), InferenceKind())["num_gpus"] == 0


@pytest.mark.engine
@pytest.mark.slow
@needs_ray
@needs_llamacpp
def test_ray_sweep_on_a_local_cluster(tmp_path):
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2), timeout_s=120)
    k = keys(spec)
    res = tmp_path / "results"
    r = run_cli("run", spec, "--executor", "ray", "--results", res,
                env_extra={**fault_env({k[0]: "segv"}), "RAY_ADDRESS": "", "RAY_AUTH_MODE": "disabled"})
    assert r.returncode == 3, r.stderr[-3000:]
    docs = {d["point_key"]: d for d in stored(res)}
    assert set(docs) == set(k) and len(stored(res)) == 2
    assert docs[k[0]]["status"] == "failed"
    assert docs[k[0]]["error"].startswith("worker killed by signal 11 (SIGSEGV)")
    assert docs[k[1]]["status"] == "ok" and docs[k[1]]["metrics"]["batch_latency_s"]["mean"] > 0

    r = run_cli("run", spec, "--executor", "ray", "--results", res, "--redo-failed",
                env_extra={"RAY_ADDRESS": "", "RAY_AUTH_MODE": "disabled"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(d["point_key"] for d in stored(res) if d["status"] == "ok") == sorted(k)


def test_devices_are_checked_against_the_largest_node():
    from llmbench.kinds.inference.kind import device_problems

    p = Point(backend="vllm", model="llama-3-8b", device="cuda",
              options=EngineOptions(tensor_parallel=4, pipeline_parallel=2))
    where = " on any one node of the Ray cluster"
    assert device_problems([p], lambda: 8, where) == []
    [(field, msg)] = device_problems([p], lambda: 4, where)
    assert field == "options.tensor_parallel" and "= 8 device(s) but only 4" in msg and msg.endswith(where)
    assert device_problems([p], lambda: 0, where)[0][0] == "device"
