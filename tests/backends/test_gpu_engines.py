"""vLLM and llama.cpp on an NVIDIA GPU through the llmbench CLI (run on the device machine: see
docs/gpu-campaign.md; skipped here without a GPU). Each test is one small real point whose
record must say how the engine really ran: vLLM in its own default mode (CUDA graphs), llama.cpp
with every layer offloaded, the GGML backend and flash attention as resolved."""

import json
import subprocess
import sys

import pytest
from tests.conftest import has

from llmbench.hardware.device import cuda_device_count

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cuda_device_count() == 0, reason="needs an NVIDIA GPU (NVML)")]


def run(tmp_path, *args):
    cmd = [sys.executable, "-m", "llmbench", "run", "--device", "cuda", "--results", str(tmp_path), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    recs = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert recs and all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    return recs


@pytest.mark.skipif(not has("vllm"), reason="vllm not installed")
def test_vllm_on_gpu_keeps_vllms_default_mode_and_forced_lengths(tmp_path):
    (rec,) = run(tmp_path, "--backend", "vllm", "--model", "llama-3-8b", "--dtype", "bf16",
                 "--batch-size", "4", "--input-len", "32", "--output-len", "16",
                 "--warmups", "1", "--repeats", "2")
    opts, m = rec["backend"]["options"], rec["metrics"]
    assert opts["enforce_eager"] is False and opts["cudagraph_mode"] not in (None, "NONE")
    assert rec["model"]["synthetic_weights"] is True
    assert m["short_outputs"]["max"] == 0
    # the engine core's clock agrees with llmbench's: its last token is inside the batch window
    assert m["engine_last_token_max_s"]["max"] <= m["batch_latency_s"]["max"] + 1e-3
    import vllm
    from packaging.version import Version

    # RequestStateStats.num_preemptions exists in 0.32, not in 0.26: absent, never invented
    assert ("engine_preemptions" in m) is (Version(vllm.__version__) >= Version("0.32"))


@pytest.mark.skipif(not has("llama_cpp"), reason="llama-cpp-python not installed")
def test_llamacpp_on_gpu_offloads_every_layer_and_batches_sequences(tmp_path):
    recs = run(tmp_path, "--backend", "llamacpp", "--model", "llama-3-8b", "-B", "llamacpp.gguf_type=q4_0",
               "--batch-size", "1,4",
               "--input-len", "32", "--output-len", "16", "-B", "llamacpp.flash_attn=true",
               "--warmups", "1", "--repeats", "2")
    for rec in recs:
        opts, m = rec["backend"]["options"], rec["metrics"]
        assert opts["ggml_backend"] == "CUDA", opts
        assert opts["layers_offloaded"] == opts["layers_offloadable"] >= opts["layers_total"] == 32
        assert opts["flash_attn"] == "enabled"
        assert rec["model"]["synthetic_weights"] is True
        assert m["short_outputs"]["max"] == 0
    by_batch = {r["workload"]["batch_size"]: r["metrics"]["output_throughput_tok_s"]["median"] for r in recs}
    # four sequences in one llama_batch: more tokens per second than one (decode is memory-bound)
    assert by_batch[4] > 2 * by_batch[1], by_batch
