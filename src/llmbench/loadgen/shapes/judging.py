"""How a structured answer is judged against a JSON schema: the cause of an answer that is not
what was asked, or None. `jsonschema` is the truth (imported here only, when a shape judges)."""

from __future__ import annotations

import json
from typing import Any

from llmbench.errors import SpecError


def jsonschema_module(flag: str):
    """`jsonschema`, or a usage error naming the extra that installs it: the judge needs it,
    and a shape asks for it in its check, before any request (never a traceback mid-run)."""
    try:
        import jsonschema
    except ImportError:
        raise SpecError([(flag, "judging answers needs the Python package 'jsonschema', which is "
                                "not installed (pip install 'llmbench[structured]'; `make run` "
                                "installs it)")]) from None
    return jsonschema


def truncated_or(cause: str, finish_reason: str | None, could_continue: bool = True) -> str:
    """An answer cut by max_tokens is `truncated` when what came could still have become a
    valid answer (the grammar was not given the room to finish); one that could not
    (`could_continue` false: text no answer the grammar admits starts with) is
    `grammar_ignored`: the server sent the grammar's fields to no use (seen: llama-cpp-python's
    server ignores vLLM's `structured_outputs`)."""
    if finish_reason != "length":
        return cause
    return "truncated" if could_continue else "grammar_ignored"


def json_could_continue(text: str) -> bool:
    """Whether `text` can be the start of a JSON value (its first character's test: an answer
    in prose is not)."""
    head = text.lstrip()
    return not head or head[0] in '{["-0123456789tfn'


def schema_cause(value: Any, schema: dict[str, Any]) -> str | None:
    """`schema_violation:<path>` of the error jsonschema ranks first (`$` the whole value), or
    None when `value` validates."""
    jsonschema = jsonschema_module("--structured / --tools")
    cls = jsonschema.validators.validator_for(schema)
    err = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    if err is None:
        return None
    return "schema_violation:" + ("/".join(map(str, err.absolute_path)) or "$")


def json_cause(text: str, schema: dict[str, Any], finish_reason: str | None,
               grammar_sent: bool = True) -> str | None:
    """`grammar_sent` false (the unconstrained twin): a cut answer is only `truncated`, since
    no grammar was there to ignore."""
    try:
        value = json.loads(text)
    except ValueError:
        return truncated_or("not_json", finish_reason, not grammar_sent or json_could_continue(text))
    cause = schema_cause(value, schema)
    return truncated_or(cause, finish_reason) if cause else None


def load_schema(path: str, flag: str) -> dict[str, Any]:
    """A JSON schema file, checked to be a schema (a usage error otherwise). The file is read
    first: a path mistake is reported as such whether or not jsonschema is installed."""
    from pathlib import Path

    try:
        schema = json.loads(Path(path).read_text())
    except OSError as e:
        raise SpecError([(flag, f"cannot read {path}: {e.strerror}")]) from None
    except ValueError as e:
        raise SpecError([(flag, f"{path} is not JSON: {e}")]) from None
    if not isinstance(schema, dict):
        raise SpecError([(flag, f"{path}: a schema is a JSON object")])
    jsonschema = jsonschema_module(flag)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        raise SpecError([(flag, f"{path} is not a JSON schema: {e.message}")]) from None
    return schema


def validity_metric(outcomes: list, metrics: dict) -> None:
    """`valid_fraction` as a metric of the point: one 0/1 sample per request sent (one without
    an answer is 0), so its mean is the fraction and `llmbench compare` can set two points'
    side by side."""
    from llmbench.measure.stats import summarize

    if outcomes:
        metrics["valid_fraction"] = summarize([1.0 if o.ok and not o.invalid else 0.0 for o in outcomes],
                                              "fraction")
