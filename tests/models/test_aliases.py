import pytest

from llmbench.models.catalog import CATALOG, canonical_name

REFERENCE_LABELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b", "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3-70b", "mistralai/Mistral-7B-v0.1": "mistral-7b",
    "mistralai/Mistral-7B-v0.3": "mistral-7b-v0.3", "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2-7B": "qwen2-7b", "Qwen/Qwen2-72B": "qwen2-72b", "Qwen/Qwen1.5-7B": "qwen1.5-7b",
    "Deci/DeciLM-7B": "decilm-7b", "neuralmagic/Meta-Llama-3-8B-Instruct-FP8": "llama-3-8b",
    "BAAI/Aquila-7B": "aquila-7b", "bigscience/bloom-7b1": "bloom-7b1",
    "EleutherAI/gpt-j-6b": "gpt-j-6b", "huggyllama/llama-7b": "llama-7b",
    "huggyllama/llama-13b": "llama-13b", "facebook/opt-6.7b": "opt-6.7b",
    "facebook/opt-13b": "opt-13b", "google/gemma-7b": "gemma-7b",
    "google/gemma-1.1-7b-it": "gemma-1.1-7b",
}


@pytest.mark.parametrize("label,name", REFERENCE_LABELS.items())
def test_every_reference_model_label_has_a_catalog_entry(label, name):
    assert canonical_name(label) == name
    assert canonical_name(label.upper()) == name


def test_catalog_ids_and_unknowns():
    assert canonical_name("LLaMA-3-8B") == "llama-3-8b"
    assert canonical_name("nobody/model") is None
    for n in ("genslm-25m", "genslm-250m", "genslm-2.5b", "genslm-25b", "qwen-7b"):
        assert n in CATALOG
    g = CATALOG["genslm-25b"]
    assert (g.family, g.vocab, g.rotary_pct, g.hidden, g.layers, g.heads) == ("gpt_neox", 69, 0.25, 8196, 64, 64)
    # the two GenSLM sizes without a claimed count still land near their names
    assert 2.3e8 < CATALOG["genslm-250m"].param_count() < 2.6e8
    assert 2.4e10 < g.param_count() < 2.7e10
    assert CATALOG["gemma-7b"].head_dim == 256 and CATALOG["llama-3-8b"].q_dim == 4096
