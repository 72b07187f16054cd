"""Hugging Face Hub ids from the local cache, and local models' architectures read from their
files (issue 15, item 8). Every model here is a config.json or a tiny GGUF written by the test:
nothing is downloaded."""

import json

import pytest

from llmbench import roofline
from llmbench.errors import ModelError
from llmbench.measure.stats import summarize
from llmbench.models.catalog import get_arch
from llmbench.models.sources import hf_hub_cache, resolve
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

LLAMA_31_8B = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
               "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
               "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
               "max_position_embeddings": 131072, "rope_theta": 500000.0,
               "tie_word_embeddings": False}


def fake_cache(root, repo_id, config, rev="0123abcd"):
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<rev>/}."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    return snap


def test_cache_location_follows_huggingface_hub(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hf_hub_cache() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert hf_hub_cache() == tmp_path / "hub"


def test_hub_id_resolves_from_the_cache_with_its_architecture(monkeypatch, tmp_path):
    snap = fake_cache(tmp_path, "meta-llama/Llama-3.1-8B", LLAMA_31_8B)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    ref = resolve("meta-llama/Llama-3.1-8B")
    assert (ref.source, ref.path, ref.name) == ("hf-dir", snap, "meta-llama/Llama-3.1-8B")
    assert ref.arch.param_count() == 8_030_261_248  # Llama-3.1-8B's published count
    assert ref.arch.max_position == 131072 and not ref.synthetic_weights


def test_hub_id_not_in_the_cache_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelError) as e:
        resolve("meta-llama/Llama-2-7b-hf")
    msg = str(e.value)
    assert "not in the local Hugging Face cache" in msg and "does not download" in msg
    assert "huggingface-cli download meta-llama/Llama-2-7b-hf" in msg
    assert "'llama-2-7b'" in msg  # the catalog twin with random weights


def test_local_model_gets_a_roofline_like_a_catalog_model(monkeypatch, tmp_path):
    fake_cache(tmp_path, "someone/My-Llama", LLAMA_31_8B)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    ref = resolve("someone/My-Llama")
    r = Record(run_id="t", kind="inference", backend=BackendInfo(name="vllm"),
               model=ModelInfo(name=ref.name), hardware=HardwareInfo(name="NVIDIA H100 80GB HBM3"),
               workload={"batch_size": 1, "input_len": 128, "output_len": 128, "weight_dtype": "bf16"},
               metrics={"output_throughput_tok_s": summarize([50.0], "tok/s")})
    assert roofline.annotate(r) is True
    twin = r.model_copy(update={"model": ModelInfo(name="llama-3-8b"), "roofline": type(r.roofline)()})
    roofline.annotate(twin)  # same shapes as the catalog's Llama-3-8B but the vocabulary/context
    assert r.roofline.bound["output_throughput_tok_s"] == pytest.approx(
        twin.roofline.bound["output_throughput_tok_s"], rel=0.01)


def test_unreadable_architecture_is_a_note_not_an_error(tmp_path):
    d = tmp_path / "odd-model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "t5", "d_model": 512}))
    ref = resolve(str(d))
    assert ref.arch is None and "model_type 't5'" in ref.arch_note
    from llmbench.kinds.inference.kind import base_record
    from llmbench.kinds.inference.spec import Point

    rec = base_record(Point(backend="transformers", model=str(d)), "t", ref, None)
    assert any(n.startswith("no roofline: architecture not read") for n in rec.notes)


def test_gguf_metadata_gives_the_architecture(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for key, val in (("block_count", 2), ("embedding_length", 64), ("feed_forward_length", 128),
                     ("context_length", 256), ("attention.head_count", 4),
                     ("attention.head_count_kv", 2)):
        w.add_uint32(f"llama.{key}", val)
    w.add_token_list([f"t{i}".encode() for i in range(100)])
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ref = resolve(str(path))
    a = ref.arch
    assert (ref.source, a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab, a.max_position) == \
        ("gguf", 2, 64, 4, 2, 128, 100, 256)
    assert a.tie_embeddings  # no output.weight tensor: the embedding is the output layer
    assert get_arch("tiny") is a


def test_a_tiny_vlm_name_resolves_to_its_made_directory(tmp_path, monkeypatch):
    import json

    from llmbench.models.sources import model_path, resolve, tiny_vlm

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    ref = resolve("IDEFICS3-tiny")
    assert ref.source == "hf-dir" and ref.path == tmp_path / "models" / "idefics3-tiny-hf"
    assert json.loads((ref.path / "preprocessor_config.json").read_text())["image_processor_type"] \
        .startswith("Idefics3")
    assert model_path("qwen2-vl-tiny", "hf") == tiny_vlm("qwen2-vl-tiny")
    assert json.loads((tiny_vlm("qwen2-vl-tiny") / "config.json").read_text())["architectures"] == \
        ["Qwen2VLForConditionalGeneration"]


def test_models_lists_the_tiny_vlms(capsys):
    from tests.conftest import cli

    code, text = cli(["models"], capsys)
    assert code == 0 and "qwen2-vl-tiny, idefics3-tiny" in text
