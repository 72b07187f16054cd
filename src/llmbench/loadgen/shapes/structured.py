"""Structured output: each chat request asks for an answer a grammar admits (a JSON schema, a
regular expression, or one of a few choices), and each answer is judged against it.

The body's fields, per server dialect (what each server here honours, read from its code):
- `standard` (vLLM, SGLang, OpenAI): a schema as OpenAI's
  `response_format: {type: json_schema, json_schema: {name, schema, strict}}`; a regex or
  choice has no OpenAI field, so vLLM's `structured_outputs: {regex}` / `{choice}` (vLLM 0.32
  `StructuredOutputsParams`; its older `guided_*` fields are gone from the protocol);
- `json-object` (llama-cpp-python's server, whose `response_format.type` is `text` or
  `json_object` only; named for the format, not the engine): `response_format: {type: json_object, schema}`, a choice as a GBNF
  `grammar`; a regex has no field there (a usage error).
A grammar ends the answer where it ends, so the forced length (ignore_eos) never applies.
`enforce=false` sends the same requests without the grammar and judges them the same way: the
unconstrained twin (docs/serving.md "Structured output and tool calls").
"""

from __future__ import annotations

import json
import re
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from llmbench.errors import SpecError
from llmbench.loadgen.client import Outcome, RequestSpec
from llmbench.loadgen.shapes.base import RequestShape
from llmbench.loadgen.shapes.judging import validity_metric, json_cause, load_schema, truncated_or

MODES = ("json-schema", "regex", "choice")


class StructuredOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["json-schema", "regex", "choice"]
    value: str          # the schema file, the pattern, or the choices "A,B,C"
    dialect: Literal["standard", "json-object"] = "standard"
    # false: the same requests without the grammar, their answers judged all the same (the
    # unconstrained twin a grammar's cost and its validity gain are measured against)
    enforce: bool = True

    @field_validator("value")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        if not v:
            raise ValueError("empty")
        return v


def _regex_could_continue(pattern: str, text: str) -> bool:
    """Whether `text` is the start of some string `pattern` matches whole: the `regex`
    package's partial match (installed with transformers); without it, assumed (no claim
    that the server ignored the grammar is made from a guess)."""
    try:
        import regex
    except ImportError:
        return True
    try:
        return regex.fullmatch(pattern, text, partial=True) is not None
    except regex.error:   # a pattern `re` takes and `regex` does not
        return True


def parse_flag(text: str) -> dict[str, str]:
    """`--structured MODE=VALUE` as the shape's options."""
    mode, eq, value = text.partition("=")
    if not eq or mode not in MODES:
        raise SpecError([("--structured", f"{text!r} is not one of "
                                          "json-schema=FILE, regex=PATTERN, choice=A,B,C")])
    return {"mode": mode, "value": value}


class Structured(RequestShape):
    name = "structured"
    Options = StructuredOptions
    apis = ("chat",)
    forces_output = False
    judged = True

    def check(self) -> None:
        super().check()
        o = self.options
        if o.mode == "regex":
            try:
                re.compile(o.value)
            except re.error as e:
                raise SpecError([("--structured", f"regex {o.value!r}: {e}")]) from None
            if o.dialect == "json-object":
                raise SpecError([("--structured", "the json-object dialect has no field for a "
                                                  "regex (only a JSON schema or a GBNF grammar)")])
        elif o.mode == "json-schema":
            self.schema    # read and checked now, a usage error before any request

    @cached_property
    def schema(self) -> dict[str, Any]:
        return load_schema(self.options.value, "--structured")

    @property
    def choices(self) -> list[str]:
        return self.options.value.split(",")

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        o = self.options
        if not o.enforce:
            return body
        if o.mode == "json-schema":
            if o.dialect == "json-object":
                return {**body, "response_format": {"type": "json_object", "schema": self.schema}}
            return {**body, "response_format": {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": self.schema, "strict": True}}}
        if o.mode == "choice" and o.dialect == "json-object":
            return {**body, "grammar": "root ::= " + " | ".join(json.dumps(c) for c in self.choices)}
        key = "regex" if o.mode == "regex" else "choice"
        return {**body, "structured_outputs": {key: o.value if o.mode == "regex" else self.choices}}

    def judge(self, out: Outcome) -> str | None:
        o = self.options
        # without the grammar (enforce=false) a cut answer is only `truncated`: nothing to ignore
        if o.mode == "json-schema":
            return json_cause(out.text, self.schema, out.finish_reason, o.enforce)
        if o.mode == "regex":
            ok = re.fullmatch(o.value, out.text) is not None
            return None if ok else truncated_or("regex_mismatch", out.finish_reason,
                                                not o.enforce or _regex_could_continue(o.value, out.text))
        return None if out.text in self.choices else truncated_or(
            "not_a_choice", out.finish_reason,
            not o.enforce or any(c.startswith(out.text) for c in self.choices))

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        super().summarize(outcomes, metrics, serving, notes)
        validity_metric(outcomes, metrics)
