"""On a real GPU: a CUDA out-of-memory point and a crashed worker each cost one point; the
tensor-parallel check counts the GPUs that are really there. Skipped without an NVIDIA GPU;
proven on the H200 device machine (see the issue 7 report)."""

import importlib.util

import pytest
import yaml

from launch_helpers import fault_env, run_cli, stored
from llmbench.hardware.device import cuda_device_count
from llmbench.kinds.inference.spec import load_spec

pytestmark = [pytest.mark.gpu, pytest.mark.engine,
              pytest.mark.skipif(cuda_device_count() == 0, reason="needs an NVIDIA GPU (NVML sees none)"),
              pytest.mark.skipif(importlib.util.find_spec("transformers") is None
                                 or importlib.util.find_spec("torch") is None,
                                 reason="needs torch and transformers")]


def test_cuda_oom_and_a_crash_each_cost_one_point(tmp_path):
    # Synthetic LLaMA-3-8B (bf16, 16 GB). batch 65536 x 128 tokens needs far more than any GPU
    # holds in its first layer: a real torch.cuda.OutOfMemoryError, not an injected one.
    spec = tmp_path / "gpu.yaml"
    spec.write_text(yaml.safe_dump({
        "backends": ["transformers"], "models": ["llama-3-8b"], "device": "cuda", "dtype": ["bf16"],
        "batch_size": [1, 65536, 2, 3, 4], "input_len": [128], "output_len": [4],
        "repeats": 1, "warmups": 0, "timeout_s": 600}))
    k = [p.key for p in load_spec(spec).points()]
    res = tmp_path / "results"
    r = run_cli("run", spec, "--results", res, env_extra=fault_env({k[3]: "segv"}), timeout=900)
    print(r.stdout[-4000:])
    assert r.returncode == 3, r.stderr[-4000:]
    got = {d["point_key"]: d for d in stored(res)}
    assert set(got) == set(k) and len(stored(res)) == 5
    status = [got[x]["status"] for x in k]
    assert status == ["ok", "failed", "ok", "failed", "ok"], [got[x].get("error") for x in k]
    assert got[k[1]]["error"].startswith("out of memory: OutOfMemoryError"), got[k[1]]["error"]
    assert got[k[3]]["error"].startswith("worker killed by signal 11 (SIGSEGV)")
    load = [got[x]["metrics"].get("load_time_s", {}).get("mean") for x in k]
    assert load[0] == load[2]  # the worker survived the OOM: same engine load, no reload
    assert load[4] != load[0]  # after the crash a fresh worker loaded the engine again
    for x in (k[0], k[2], k[4]):
        assert got[x]["metrics"]["batch_latency_s"]["mean"] > 0


def test_tensor_parallel_beyond_the_gpus_present_is_refused(tmp_path):
    n = cuda_device_count()
    res = tmp_path / "results"
    r = run_cli("run", "-b", "transformers", "-m", "llama-3-8b", "--device", "cuda",
                "-o", f"tensor_parallel={n + 1}", "--results", res)
    assert r.returncode == 2, r.stderr
    assert f"only {n} CUDA device(s) are present" in r.stderr and "options.tensor_parallel" in r.stderr
    assert "Traceback" not in r.stderr and not res.exists()
