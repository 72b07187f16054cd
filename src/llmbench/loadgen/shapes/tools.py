"""Tool calls: each chat request offers OpenAI tool definitions (`tools`, `tool_choice` auto or
required) and each answer is judged: under `required` a tool call must come; every call names
one of the tools and its arguments parse as JSON and validate against that tool's `parameters`.
The client collects streamed `delta.tool_calls` (loadgen/client.py). Under `auto` an answer in
text is valid. A tool call ends where it ends, so the forced length never applies."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from llmbench.errors import SpecError
from llmbench.loadgen.client import Outcome, RequestSpec
from llmbench.loadgen.shapes.base import RequestShape
from llmbench.loadgen.shapes.judging import jsonschema_module, validity_metric, schema_cause, truncated_or


class ToolsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str                                     # a JSON list of OpenAI tool definitions
    tool_choice: Literal["auto", "required"] = "auto"


def read_tools(path: str) -> list[dict[str, Any]]:
    """The tool definitions of `path`: a list of {"type": "function", "function": {"name",
    "parameters"?}}; a usage error naming --tools otherwise."""
    try:
        tools = json.loads(Path(path).read_text())
    except OSError as e:
        raise SpecError([("--tools", f"cannot read {path}: {e.strerror}")]) from None
    except ValueError as e:
        raise SpecError([("--tools", f"{path} is not JSON: {e}")]) from None
    ok = isinstance(tools, list) and tools and all(
        isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict)
        and isinstance(t["function"].get("name"), str) for t in tools)
    if not ok:
        raise SpecError([("--tools", f"{path}: a non-empty list of "
                                     '{"type": "function", "function": {"name": ..., "parameters": ...}}')])
    return tools


class Tools(RequestShape):
    name = "tools"
    Options = ToolsOptions
    apis = ("chat",)
    forces_output = False
    judged = True

    def check(self) -> None:
        super().check()
        self.parameters    # read and checked now, before any request
        jsonschema_module("--tools")    # the judge's, asked for before any request

    @cached_property
    def tools(self) -> list[dict[str, Any]]:
        return read_tools(self.options.file)

    @cached_property
    def parameters(self) -> dict[str, dict[str, Any]]:
        """name -> the tool's parameters schema (any object when it declares none)."""
        return {t["function"]["name"]: t["function"].get("parameters") or {"type": "object"}
                for t in self.tools}

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        return {**body, "tools": self.tools, "tool_choice": self.options.tool_choice}

    def judge(self, out: Outcome) -> str | None:
        if not out.tool_calls:
            if self.options.tool_choice == "required":
                # never `truncated`: a server that honours `required` starts with the call, so an
                # answer in text means it ignored the tools, however long the text ran
                return "no_tool_call"
            return None
        for call in out.tool_calls:
            if call["name"] not in self.parameters:
                return "unknown_tool"
            try:
                args = json.loads(call["arguments"])
            except ValueError:
                return truncated_or("arguments_not_json", out.finish_reason)
            cause = schema_cause(args, self.parameters[call["name"]])
            if cause:
                return cause
        return None

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        super().summarize(outcomes, metrics, serving, notes)
        validity_metric(outcomes, metrics)
