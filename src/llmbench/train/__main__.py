"""`python -m llmbench.train ...`: the train command alone, without importing the other
commands (a GPU machine may lack their packages, e.g. duckdb)."""

import sys

import typer

from llmbench.train.command import train
from llmbench.errors import LLMBenchError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command("train")(train)

if __name__ == "__main__":
    try:
        app(standalone_mode=False)
    except LLMBenchError as e:
        print(f"llmbench: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
