"""How a structured answer is judged against a JSON schema: the cause of an answer that is not
what was asked, or None. `jsonschema` is the truth (imported here only, when a shape judges)."""

from __future__ import annotations

import json
from typing import Any


def truncated_or(cause: str, finish_reason: str | None) -> str:
    """An answer cut by max_tokens is `truncated`, whatever else is wrong with it: the grammar
    was not given the room to finish."""
    return "truncated" if finish_reason == "length" else cause


def schema_cause(value: Any, schema: dict[str, Any]) -> str | None:
    """`schema_violation:<path>` of the error jsonschema ranks first (`$` the whole value), or
    None when `value` validates."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    err = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    if err is None:
        return None
    return "schema_violation:" + ("/".join(map(str, err.absolute_path)) or "$")


def json_cause(text: str, schema: dict[str, Any], finish_reason: str | None) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return truncated_or("not_json", finish_reason)
    cause = schema_cause(value, schema)
    return truncated_or(cause, finish_reason) if cause else None


def load_schema(path: str, flag: str) -> dict[str, Any]:
    """A JSON schema file, checked to be a schema (a usage error otherwise)."""
    from pathlib import Path

    import jsonschema

    from llmbench.errors import SpecError

    try:
        schema = json.loads(Path(path).read_text())
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except OSError as e:
        raise SpecError([(flag, f"cannot read {path}: {e.strerror}")]) from None
    except ValueError as e:
        raise SpecError([(flag, f"{path} is not JSON: {e}")]) from None
    except jsonschema.exceptions.SchemaError as e:
        raise SpecError([(flag, f"{path} is not a JSON schema: {e.message}")]) from None
    if not isinstance(schema, dict):
        raise SpecError([(flag, f"{path}: a schema is a JSON object")])
    return schema


def validity_metric(outcomes: list, metrics: dict) -> None:
    """`valid_fraction` as a metric of the point: one 0/1 sample per answered request, so its
    mean is the fraction and `llmbench compare` can set two points' side by side."""
    from llmbench.measure.stats import summarize

    answered = [o for o in outcomes if o.ok]
    if answered:
        metrics["valid_fraction"] = summarize([0.0 if o.invalid else 1.0 for o in answered], "fraction")
