"""Streamed tool calls: the client collects `delta.tool_calls` (loadgen/client.py), and the tools
request shape (loadgen/shapes/tools.py) judges each call against its tool's parameters."""

import json

import pytest
from structured_streams import chat_stream, text_answer

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen import client
from llmbench.loadgen.client import RequestSpec, interpret, request_body

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time"}}

# A vLLM-style stream of one call: the name first with empty arguments, then argument fragments.
CALL = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
    {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
    {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
]


def call_stream(name="get_weather", args=('{"city": ', '"Paris"}'), finish="tool_calls"):
    deltas = [{"role": "assistant", "tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                    "function": {"name": name, "arguments": ""}}]}]
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": a}}]} for a in args]
    return chat_stream(deltas, finish)


@pytest.fixture(params=["msgspec", "json"])
def decoder(request, monkeypatch):
    """Both decoders of the client: msgspec's and the generic JSON path."""
    if request.param == "json":
        monkeypatch.setattr(client, "_fast", None)


def test_a_captured_tool_call_stream_is_parsed_to_its_call(decoder):
    resp = chat_stream(CALL, "tool_calls", t0=1.0, gap_s=0.01, usage=3)
    out = interpret(resp, 0.5, RequestSpec("p", 4, 16))
    assert out.ok, out.detail
    assert out.tool_calls == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert out.text == "" and out.finish_reason == "tool_calls"
    # the first fragment is the first token; each fragment an event (timing as for text)
    assert out.timeline.ttft_s() == pytest.approx(1.0 - 0.5)
    assert [t for t, _ in out.timeline.events] == pytest.approx([1.0, 1.01, 1.02])


def test_two_parallel_calls_are_kept_apart_by_index(decoder):
    deltas = [{"tool_calls": [{"index": 1, "function": {"name": "get_time", "arguments": "{}"}}]},
              {"tool_calls": [{"index": 0, "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]}]
    out = interpret(chat_stream(deltas, "tool_calls"), 0.5, RequestSpec("p", 4, 16))
    assert out.tool_calls == [{"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                              {"name": "get_time", "arguments": "{}"}]


def tools_shape(tmp_path, choice="auto", tools=(WEATHER, TIME)):
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(list(tools)))
    return ServeConfig(api="chat", shape="tools", shape_options={"file": str(f), "tool_choice": choice}).request_shape()


def test_the_tools_judge_gives_each_answer_its_cause(tmp_path):
    req, auto = tools_shape(tmp_path, "required"), tools_shape(tmp_path, "auto")
    spec = RequestSpec("p", 4, 16)
    judge = lambda sh, resp: sh.read(resp, 0.5, spec).invalid   # noqa: E731
    assert judge(req, call_stream()) is None
    assert judge(req, call_stream("get_time", ("{}",))) is None        # no parameters: any object
    assert judge(req, call_stream("get_wether")) == "unknown_tool"
    assert judge(req, call_stream(args=('{"city": 5}',))) == "schema_violation:city"
    assert judge(req, call_stream(args=('{}',))) == "schema_violation:$"
    assert judge(req, call_stream(args=('{"city": "Pa',), finish="length")) == "truncated"
    assert judge(req, call_stream(args=('{"city" "Paris"}',))) == "arguments_not_json"
    assert judge(req, text_answer("It is sunny.")) == "no_tool_call"
    assert judge(auto, text_answer("It is sunny.")) is None              # auto: text is an answer


def test_the_body_offers_the_tools_and_the_choice(tmp_path):
    sh = tools_shape(tmp_path, "required")
    spec = RequestSpec("p", 4, 16)
    body = sh.body(request_body(spec, "m", "chat", force_output=False), spec)
    assert body["tools"] == [WEATHER, TIME] and body["tool_choice"] == "required"
    assert sh.forces_output is False


def test_bad_tool_files_are_usage_errors(tmp_path):
    with pytest.raises(SpecError, match="--tools"):
        tools_shape(tmp_path, tools=[{"name": "x"}])
    with pytest.raises(SpecError, match="cannot read"):
        ServeConfig(api="chat", shape="tools", shape_options={"file": "/nonexistent"})
    with pytest.raises(SpecError, match="tool_choice"):
        tools_shape(tmp_path, "none")
