"""Thin command line: parse, build a spec, hand it over. Each command lives in its own module
and registers itself on the app; errors become one clear message and an exit status
(0 success, 2 bad input, 3 partial success: some points failed, 1 anything else)."""

from __future__ import annotations

import importlib
import sys

import typer

from llmbench.errors import LLMBenchError

EXIT_PARTIAL = 3

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Benchmarks for LLM inference and training, with roofline bounds and power.")

# One module per command; each defines register(app) and imports its engine lazily.
COMMANDS = ("run", "models", "results", "serve", "train", "roofline", "importer", "report",
            "dashboard", "compare")
for _name in COMMANDS:
    importlib.import_module(f"llmbench.cli.{_name}").register(app)


def main(argv: list[str] | None = None) -> None:
    try:
        # standalone_mode=False: click returns (not raises) an exit code, e.g. 130 on Ctrl-C.
        rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except LLMBenchError as e:
        print(f"llmbench: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("llmbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as e:  # click usage errors and the like
        import click

        if isinstance(e, click.exceptions.ClickException):
            e.show()
            sys.exit(2)
        if isinstance(e, click.exceptions.Abort):
            sys.exit(130)
        raise
