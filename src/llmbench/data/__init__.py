"""Text that ships with llmbench: the English prose (eval_text.txt) that prompts are cut from
and perplexity is measured on. Below every kind, so that each kind reads it without importing
another."""

from __future__ import annotations

from importlib import resources


def bundled_text() -> str:
    return resources.files("llmbench.data").joinpath("eval_text.txt").read_text(encoding="utf-8")
