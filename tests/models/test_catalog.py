import pytest

from llmbench.errors import ModelError
from llmbench.models import CATALOG, get_arch, resolve

SYNTHETIC = ["llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b", "qwen2-7b",
             "gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl"]


@pytest.mark.parametrize("name", [n for n, a in CATALOG.items() if a.public_params])
def test_param_count_matches_public_within_1pct(name):
    a = get_arch(name)
    assert abs(a.param_count() / a.public_params - 1) < 0.01


@pytest.mark.parametrize("name", SYNTHETIC)
def test_required_synthetic_models_exist(name):
    ref = resolve(name)
    assert ref.source == "synthetic" and ref.synthetic_weights and ref.params > 1e8


def test_bundled_and_paths(tmp_path):
    assert resolve("smollm2-135m").source == "bundled"
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelError, match="config.json"):
        resolve(str(tmp_path / "m"))
    (tmp_path / "m" / "config.json").write_text("{}")
    assert resolve(str(tmp_path / "m")).source == "hf-dir"
    with pytest.raises(ModelError, match="unknown model"):
        resolve("gpt-17")


def test_synthetic_hf_dir_has_config(tmp_path, monkeypatch):
    import json

    from llmbench.models.sources import model_path

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    p = model_path("llama-3-8b", "hf")
    cfg = json.loads((p / "config.json").read_text())
    assert cfg["num_key_value_heads"] == 8 and cfg["vocab_size"] == 128256
    # An HF directory has no GGUF form (a catalog model does: tests/models/test_gguf_synth.py).
    with pytest.raises(ModelError, match="no GGUF"):
        model_path(str(p), "gguf")
