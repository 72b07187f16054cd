"""Thin command line: parse, build a spec, hand it over. Each command lives in its own module
and registers itself on the app; errors become one clear message and an exit status
(0 success, 2 bad input, 3 partial success: some points failed, 1 anything else)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable

import typer

from llmbench.errors import LLMBenchError

EXIT_USAGE = 2


def _click():
    """The click that typer runs on: its vendored copy (typer >= 0.25 ships `typer._click`),
    else the click package. Catching the other copy's exceptions would match nothing."""
    try:
        from typer import _click as click
    except ImportError:  # older typer on the real click
        import click
    return click


def _version(value: bool) -> None:
    if value:
        import llmbench

        print(f"llmbench {llmbench.__version__}")
        raise typer.Exit()


# One module per command (command -> module); each defines register(app) and imports its
# engine lazily. A command line imports only the module of the command it names: every module
# at once is ~0.25 s of a `llmbench dashboard` start (2-core VM), a third of a cold open's
# start-up. Help and an unknown command get them all.
COMMANDS = {"run": "run", "models": "models", "results": "results", "serve": "serve",
            "train": "train", "roofline": "roofline", "import": "importer", "report": "report",
            "annotate": "annotate", "index": "index", "dashboard": "dashboard",
            "compare": "compare", "findings": "findings", "export": "export",
            "predict": "predict", "conformance": "conformance"}


def build_app(commands: Iterable[str] | None = None) -> typer.Typer:
    """The command line with `commands` (names in COMMANDS; all of them by default)."""
    # rich_markup_mode=None: typer's rich help labels every flag (even --help) with `<bool>`,
    # which reads as "takes a value"; the plain help shows flags as flags.
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                      rich_markup_mode=None,
                      help="Benchmarks for LLM inference and training, with roofline bounds and power.")
    app.callback()(_root)
    for name in COMMANDS if commands is None else commands:
        importlib.import_module(f"llmbench.cli.{COMMANDS[name]}").register(app)
    return app


def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print llmbench's version and exit.")) -> None:
    """Benchmarks for LLM inference and training, with roofline bounds and power."""


def _named(argv: list[str]) -> list[str] | None:
    """The one command `argv` names (its first word that is not an option), else None: all."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return [first] if first in COMMANDS else None


def __getattr__(name: str):
    if name == "app":  # the whole command line (tests drive it with typer's CliRunner)
        globals()["app"] = full = build_app()
        return full
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _usage_error(e) -> int:
    """One message for a usage mistake (unknown command or option, missing value): the
    error with click's "did you mean", and where to read the help. Returns the exit status."""
    click = _click()
    if isinstance(e, click.exceptions.NoArgsIsHelpError):  # bare `llmbench` / `llmbench import`
        e.show()
        return EXIT_USAGE
    if isinstance(e, click.exceptions.UsageError):
        cmd = e.ctx.command_path if e.ctx is not None else "llmbench"
        print(f"{cmd}: {_for_people(e.format_message())}\n(see: {cmd} --help)", file=sys.stderr)
        return e.exit_code
    e.show()  # other ClickExceptions (e.g. a bad file argument) print one line
    return e.exit_code


# typer converts option values with pydantic and passes its wording on; say it plainly.
_PYDANTIC_VOICE = (
    ("Input should be a valid integer, unable to parse string as an integer", "expects a whole number"),
    ("Input should be a valid number, unable to parse string as a number", "expects a number"),
    ("Input should be a valid boolean, unable to interpret input", "expects true or false"),
    ("Input should be greater than or equal to", "must be at least"),
    ("Input should be less than or equal to", "must be at most"),
    ("Input should be", "should be"),
    ("Value error, ", ""),
)


def _for_people(message: str) -> str:
    for theirs, ours in _PYDANTIC_VOICE:
        message = message.replace(theirs, ours)
    return message


def main(argv: list[str] | None = None) -> None:
    click = _click()
    try:
        # standalone_mode=False: click returns (not raises) an exit code, e.g. 130 on Ctrl-C.
        argv = sys.argv[1:] if argv is None else argv
        rv = build_app(_named(argv))(args=argv, standalone_mode=False, prog_name="llmbench")
        if isinstance(rv, int) and rv:
            if rv == 130:  # typer turned a Ctrl-C that no command handled into this code
                print("llmbench: interrupted", file=sys.stderr)
            sys.exit(rv)
    except LLMBenchError as e:
        print(f"llmbench: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("llmbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except click.exceptions.ClickException as e:
        sys.exit(_usage_error(e))
    except typer.Abort:  # Ctrl-C inside a prompt (typer's own class, not its click's)
        print("llmbench: interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        _forget_caught_interrupt()


def _forget_caught_interrupt() -> None:
    """A Ctrl-C that lands inside a string `exec` (a dataclass being made during a lazy import)
    marks CPython's "unhandled KeyboardInterrupt" flag even though we caught it; under
    `python -m llmbench` the interpreter then dies by SIGINT (-2) instead of exiting with our
    code (pythonrun.c run_eval_code_obj, 3.11-3.13). Every string eval clears that flag first."""
    eval("None")
