"""The plain request: a prompt, streamed text back, nothing judged (the default shape)."""

from __future__ import annotations

from typing import Any

from llmbench.loadgen.shapes.base import RequestShape


class Text(RequestShape):
    name = "text"

    def workload(self) -> dict[str, Any]:
        return {}    # the point keys and records of plain requests stay what they were
