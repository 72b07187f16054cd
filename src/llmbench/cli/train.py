"""`llmbench train`: the training study (block micro-benchmark, GPT-2, GenSLM).

The command lives in llmbench.train.command so that `python -m llmbench.train` runs it
without importing the other commands."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from llmbench.train.command import train

    app.command("train")(train)
