"""The structured request shape (loadgen/shapes/structured.py): the body fields each server
honours, and the judge of its answers against jsonschema as the independent truth."""

import json
import re

import jsonschema
import pytest
from structured_streams import text_answer
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen.client import RequestSpec, request_body

PERSON = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}

# (answer text, finish reason, the cause the judge must give)
HAND_MADE = [
    ('{"name": "a", "age": 3}', "stop", None),
    (' {"name":"b","age":0}\n', "stop", None),
    ('{"name": "a", "age": -1}', "stop", "schema_violation:age"),
    ('{"name": 1, "age": 2}', "stop", "schema_violation:name"),
    ('{"name": "a"}', "stop", "schema_violation:$"),
    ('[1, 2]', "stop", "schema_violation:$"),
    ('{"name": "a", "age": 3, "x": 1}', "stop", "schema_violation:$"),
    ('{"name": "a", "ag', "length", "truncated"),
    ('hello', "stop", "not_json"),
    ('{"name": "a", "age": 3.5}', "length", "truncated"),
]


def shape(tmp_path, mode, value=None, **opts):
    if mode == "json-schema":
        f = tmp_path / "schema.json"
        f.write_text(json.dumps(value))
        value = str(f)
    cfg = ServeConfig(api="chat", shape="structured", shape_options={"mode": mode, "value": value, **opts})
    return cfg.request_shape()


def read(sh, text, finish="stop"):
    spec = RequestSpec("p", 1, 16)
    return sh.read(text_answer(text, finish), 0.0, spec)


def jsonschema_valid(text):
    try:
        return jsonschema.Draft202012Validator(PERSON).is_valid(json.loads(text))
    except ValueError:
        return False


def test_the_judge_gives_each_hand_made_answer_its_cause(tmp_path):
    sh = shape(tmp_path, "json-schema", PERSON)
    for text, finish, cause in HAND_MADE:
        assert read(sh, text, finish).invalid == cause, text


def test_the_validity_rate_of_a_hand_made_set_is_jsonschemas(tmp_path):
    sh = shape(tmp_path, "json-schema", PERSON)
    outcomes = [read(sh, t, f) for t, f, _ in HAND_MADE]
    truth = sum(jsonschema_valid(t) for t, _, _ in HAND_MADE)
    assert truth == 2                       # by hand: the first two
    metrics, serving, notes = {}, {}, []
    sh.summarize(outcomes, metrics, serving, notes)
    assert serving["validity"]["valid"] == truth
    assert serving["validity"]["valid_fraction"] == pytest.approx(truth / len(HAND_MADE))
    assert metrics["valid_fraction"].mean == pytest.approx(truth / len(HAND_MADE))
    assert serving["validity"]["invalid_by_cause"] == {
        "schema_violation:$": 3, "schema_violation:age": 1, "schema_violation:name": 1,
        "truncated": 2, "not_json": 1}


def test_regex_and_choice_are_judged_by_fullmatch_and_membership(tmp_path):
    rx = shape(tmp_path, "regex", r"[0-9]{3}-[a-z]+")
    for text in ("123-abc", "123-abc ", "12-abc", "x123-abc"):
        want = None if re.fullmatch(r"[0-9]{3}-[a-z]+", text) else "regex_mismatch"
        assert read(rx, text).invalid == want, text
    assert read(rx, "123-", "length").invalid == "truncated"
    ch = shape(tmp_path, "choice", "yes,no,maybe")
    assert [read(ch, t).invalid for t in ("yes", "maybe", "Yes", "yes.")] == \
        [None, None, "not_a_choice", "not_a_choice"]


def test_the_body_carries_each_dialects_fields(tmp_path):
    spec = RequestSpec("p", 1, 16)
    plain = request_body(spec, "m", "chat", force_output=False)
    body = lambda sh: sh.body(plain, spec)   # noqa: E731
    std = body(shape(tmp_path, "json-schema", PERSON))
    assert std["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "answer", "schema": PERSON, "strict": True}}
    llama = body(shape(tmp_path, "json-schema", PERSON, dialect="json-object"))
    assert llama["response_format"] == {"type": "json_object", "schema": PERSON}
    assert body(shape(tmp_path, "regex", "a+"))["structured_outputs"] == {"regex": "a+"}
    assert body(shape(tmp_path, "choice", "yes,no"))["structured_outputs"] == {"choice": ["yes", "no"]}
    assert body(shape(tmp_path, "choice", 'yes,"no"', dialect="json-object"))["grammar"] == \
        'root ::= "yes" | "\\"no\\""'
    assert body(shape(tmp_path, "json-schema", PERSON, enforce=False)) == plain
    assert shape(tmp_path, "choice", "a").forces_output is False


def test_bad_structured_options_are_usage_errors(tmp_path):
    with pytest.raises(SpecError, match="--structured"):
        shape(tmp_path, "regex", "a(")
    with pytest.raises(SpecError, match="has no field for a regex"):
        shape(tmp_path, "regex", "a+", dialect="json-object")
    with pytest.raises(SpecError, match="not a JSON schema"):
        shape(tmp_path, "json-schema", {"type": 5})
    with pytest.raises(SpecError, match="cannot read"):
        ServeConfig(api="chat", shape="structured", shape_options={"mode": "json-schema", "value": "/nonexistent"})
    with pytest.raises(SpecError, match="sent on chat"):
        ServeConfig(shape="structured", shape_options={"mode": "choice", "value": "a"})


@pytest.mark.parametrize("argv, msg", [
    (["--structured", "jsonschema=x.json"], "json-schema=FILE"),
    (["--structured", "choice=a", "--tools", "t.json"], "one request shape at a time"),
    (["--tool-choice", "required"], "goes with --tools"),
])
def test_serve_flags_refuse_bad_combinations(argv, msg, capsys):
    from llmbench.cli import main

    with pytest.raises(SystemExit) as e:
        main(["serve", "http://127.0.0.1:9", "--api", "chat", *argv])
    assert e.value.code == 2
    assert msg in capsys.readouterr().err.replace("\n", " ")


@pytest.mark.skipif(not has("vllm"), reason="vllm not installed")
def test_vllm_reads_the_standard_fields_as_its_structured_outputs(tmp_path):
    """vLLM 0.32's own request model turns the body into the grammar asked for."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    spec = RequestSpec("p", 1, 16)
    plain = request_body(spec, "m", "chat", force_output=False)
    got = lambda sh: ChatCompletionRequest(**sh.body(plain, spec)).extract_structured_outputs()  # noqa: E731
    assert json.loads(json.dumps(got(shape(tmp_path, "json-schema", PERSON)).json)) == PERSON
    assert got(shape(tmp_path, "regex", "a+")).regex == "a+"
    assert got(shape(tmp_path, "choice", "yes,no")).choice == ["yes", "no"]


@pytest.mark.skipif(not has("llama_cpp"), reason="llama-cpp-python[server] not installed")
def test_llamacpp_server_reads_its_dialects_fields(tmp_path):
    from llama_cpp.server.types import CreateChatCompletionRequest

    spec = RequestSpec("p", 1, 16)
    plain = request_body(spec, "m", "chat", force_output=False)
    req = CreateChatCompletionRequest(**shape(tmp_path, "json-schema", PERSON, dialect="json-object").body(plain, spec))
    assert req.response_format == {"type": "json_object", "schema": PERSON}
    req = CreateChatCompletionRequest(**shape(tmp_path, "choice", "a,b", dialect="json-object").body(plain, spec))
    assert req.grammar == 'root ::= "a" | "b"'
    with pytest.raises(Exception):   # the standard json_schema type is not one it takes
        CreateChatCompletionRequest(**shape(tmp_path, "json-schema", PERSON).body(plain, spec))
