"""Random-weight GGUF files of catalog architectures: read back, loaded and run by llama.cpp."""

import itertools
import os

import pytest

from llmbench.errors import ModelError
from llmbench.models import gguf_synth
from llmbench.models.catalog import CATALOG, ModelArch
from llmbench.models.sources import model_path

from tests.conftest import has

gguf = pytest.importorskip("gguf", reason="the gguf package (transformers extra) is not installed")
needs_llama_cpp = pytest.mark.skipif(not has("llama_cpp"), reason="llama-cpp-python not installed")

TINY = {  # small enough to write, quantise and load in well under a second each
    "tiny-llama": dict(family="llama", tie_embeddings=True),
    "tiny-mistral": dict(family="mistral"),
    "tiny-qwen2": dict(family="qwen2", qkv_bias=True, norm_eps=1e-6),
    "tiny-mixtral": dict(family="mixtral", num_experts=4, experts_per_token=2),
    "tiny-gpt2": dict(family="gpt2", tie_embeddings=True, kv_heads=4),
    "tiny-neox": dict(family="gpt_neox", kv_heads=4, rotary_pct=0.25),
}


@pytest.fixture(autouse=True)
def tiny_catalog(tmp_path, monkeypatch):
    """Tiny test-only catalog entries, and a private cache directory."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    for name, kw in TINY.items():
        arch = ModelArch(**{**dict(name=name, layers=2, hidden=64, heads=4, kv_heads=2, ffn=128,
                                   vocab=320, max_position=256), **kw})
        monkeypatch.setitem(CATALOG, name, arch)


def field(reader, key):
    f = reader.fields[key]
    value = f.parts[f.data[0]]
    return bytes(value).decode() if key == "general.architecture" else value[0]


def test_f16_metadata_reads_back():
    path = model_path("tiny-qwen2", "gguf")
    assert path == gguf_synth.cached_path(CATALOG["tiny-qwen2"], "f16")
    assert path.name.startswith("tiny-qwen2-random-") and path.name.endswith("-f16.gguf")
    r = gguf.GGUFReader(path)
    assert field(r, "general.architecture") == "qwen2"
    assert field(r, "qwen2.block_count") == 2
    assert field(r, "qwen2.attention.head_count") == 4
    assert field(r, "qwen2.attention.head_count_kv") == 2
    assert field(r, "qwen2.vocab_size") == 320
    assert len(r.fields["tokenizer.ggml.tokens"].data) == 320
    assert bool(field(r, "llmbench.synthetic_weights"))
    tensors = {t.name: t for t in r.tensors}
    assert set(tensors) == set(gguf_synth.tensor_shapes(CATALOG["tiny-qwen2"]))
    assert list(tensors["token_embd.weight"].shape) == [64, 320]      # GGUF order: reversed
    assert list(tensors["blk.1.attn_k.weight"].shape) == [64, 32]     # kv_heads * head_dim rows
    assert "blk.0.attn_q.bias" in tensors and "output.weight" in tensors
    emb = tensors["token_embd.weight"].data
    assert emb.dtype.name == "float16" and 0.01 < float(emb.astype("float32").std()) < 0.03
    assert (tensors["blk.0.attn_norm.weight"].data == 1).all()


@pytest.mark.parametrize("name", sorted(TINY))
def test_every_tensor_is_whole_in_the_file(name):
    path = model_path(name, "gguf")
    r = gguf.GGUFReader(path)
    want = gguf_synth.tensor_shapes(CATALOG[name])
    assert [t.name for t in r.tensors] == list(want)
    for t in r.tensors:
        shape, dtype = want[t.name]
        assert list(t.shape) == list(reversed(shape)) and t.data.size == t.n_elements
        assert t.tensor_type.name == dtype.upper()
    last = r.tensors[-1]
    assert path.stat().st_size >= last.data_offset + last.n_bytes


def test_tied_embeddings_write_no_output_matrix():
    names = {t.name for t in gguf.GGUFReader(model_path("tiny-llama")).tensors}
    assert "output.weight" not in names and "token_embd.weight" in names


def test_vocabulary_has_exact_size_and_byte_fallback():
    tokens, scores, types = gguf_synth.vocabulary(1000)
    assert len(tokens) == len(set(tokens)) == len(scores) == len(types) == 1000
    assert tokens[:3] == ["<unk>", "<s>", "</s>"] and tokens[3 + 0x41] == "<0x41>"
    assert types.count(6) == 256
    assert len(gguf_synth.vocabulary(69)[0]) == 69   # GenSLM's codon vocabulary: fewer bytes


def test_cache_is_reused_without_writing(monkeypatch):
    first = model_path("tiny-llama", "gguf", gguf_type="f16")
    stamp = first.stat().st_mtime_ns

    def no_write(*a, **k):
        raise AssertionError("wrote again")

    monkeypatch.setattr(gguf_synth, "write_f16", no_write)
    monkeypatch.setattr(gguf_synth, "quantize", no_write)
    assert model_path("tiny-llama", "gguf") == first
    assert first.stat().st_mtime_ns == stamp


def test_file_mode_follows_the_umask():
    old = os.umask(0o022)
    try:
        path = model_path("tiny-llama", "gguf")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_changed_architecture_gets_a_new_file(monkeypatch):
    first = model_path("tiny-llama", "gguf")
    monkeypatch.setitem(CATALOG, "tiny-llama", CATALOG["tiny-llama"].model_copy(update={"vocab": 384}))
    second = model_path("tiny-llama", "gguf")
    assert second != first and len(gguf.GGUFReader(second).fields["tokenizer.ggml.tokens"].data) == 384


def test_failed_write_leaves_nothing_under_the_final_name(monkeypatch, tmp_path):
    def broken(arch, path, seed=0):
        path.write_bytes(b"GGUF half")
        raise OSError("disk full")

    monkeypatch.setattr(gguf_synth, "write_f16", broken)
    with pytest.raises(OSError, match="disk full"):
        model_path("tiny-llama", "gguf")
    assert list((tmp_path / "models").iterdir()) == []


def test_refusals_are_clear():
    CATALOG["tiny-gemma"] = ModelArch(name="tiny-gemma", family="gemma", layers=1, hidden=64,
                                      heads=4, kv_heads=4, ffn=128, vocab=320, max_position=64)
    try:
        with pytest.raises(ModelError, match="no random-weight GGUF writer for the 'gemma' family"):
            model_path("tiny-gemma", "gguf")
    finally:
        del CATALOG["tiny-gemma"]
    with pytest.raises(ModelError, match="not a multiple of 64 heads"):
        gguf_synth.synthetic_gguf(CATALOG["genslm-25b"])
    with pytest.raises(ModelError, match="not one of f16, q8_0, q4_0"):
        model_path("tiny-llama", "gguf", gguf_type="q5_k")
    with pytest.raises(ModelError, match="only a GGUF gets a chosen type"):
        model_path("smollm2-135m", "hf", gguf_type="q4_0")
    with pytest.raises(ModelError, match="format is hf"):
        model_path("tiny-llama", "hf", gguf_type="f16")


def test_cli_models_path_gguf_type(capsys):
    from llmbench.cli import main

    with pytest.raises(SystemExit) as e:
        main(["models", "path", "tiny-llama", "--format", "gguf", "--gguf-type", "q5"])
    assert e.value.code == 2 and "--gguf-type" in capsys.readouterr().err
    main(["models", "path", "tiny-mistral", "--format", "gguf"])
    first = capsys.readouterr()
    printed = first.out.strip()
    name = gguf_synth.cached_path(CATALOG["tiny-mistral"], "f16").name
    assert printed.endswith(name) and gguf.GGUFReader(printed).tensors
    assert f"writing {name}" in first.err
    main(["models", "path", "tiny-mistral", "--format", "gguf"])   # cached: path only, no notice
    again = capsys.readouterr()
    assert again.out.strip() == printed and again.err == ""


def _greedy_8(path):
    import llama_cpp

    llm = llama_cpp.Llama(str(path), n_gpu_layers=0, n_ctx=64, n_threads=1, verbose=False)
    try:
        assert llm.n_vocab() == 320
        out = list(itertools.islice(llm.generate([1, 100, 200, 300], temp=0.0), 8))
    finally:
        llm.close()
    assert len(out) == 8 and all(0 <= t < 320 for t in out)
    return out


@needs_llama_cpp
@pytest.mark.parametrize("name", sorted(TINY))
def test_llama_cpp_loads_every_family_and_generates(name):
    _greedy_8(model_path(name, "gguf"))


@needs_llama_cpp
@pytest.mark.parametrize("gguf_type, ggml_type", [("q4_0", "Q4_0"), ("q8_0", "Q8_0")])
def test_quantised_by_llama_cpp_loads_and_generates(gguf_type, ggml_type):
    f16 = model_path("tiny-mistral", "gguf")
    path = model_path("tiny-mistral", "gguf", gguf_type=gguf_type)
    assert path.name.endswith(f"-{gguf_type}.gguf") and path.stat().st_size < f16.stat().st_size
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}
    assert types["blk.0.attn_q.weight"] == types["blk.1.ffn_down.weight"] == ggml_type
    assert types["blk.0.attn_norm.weight"] == "F32"
    _greedy_8(path)
