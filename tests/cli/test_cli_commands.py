"""The command line imports only the module of the command it is given (each module's imports
are a share of every command's start-up), and still knows every command for help and typos."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmbench import cli


def _cli_modules_after(argv: list[str]) -> list[str]:
    code = ("import sys; from llmbench import cli; cli.build_app(cli._named(sys.argv[1:])); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('llmbench.cli.'))))")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                       check=True)
    return r.stdout.split()


def test_a_named_command_imports_its_module_alone():
    assert _cli_modules_after(["dashboard", "--results", "x"]) == [
        "llmbench.cli.common", "llmbench.cli.dashboard"]
    # an option's value is not taken for a command: the first word that is not an option is
    assert cli._named(["import", "vllm-bench", "--model", "run"]) == ["import"]


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["dashbord"]])
def test_help_and_unknown_commands_get_every_command(argv):
    assert cli._named(argv) is None
    mods = _cli_modules_after(argv)
    assert {f"llmbench.cli.{m}" for m in cli.COMMANDS.values()} <= set(mods)


def test_every_command_is_registered_under_its_name():
    click_app = __import__("typer").main.get_command(cli.app)
    assert sorted(click_app.commands) == sorted(cli.COMMANDS)
    for name in cli.COMMANDS:  # each alone, as a command line that names it builds it
        assert list(__import__("typer").main.get_command(cli.build_app([name])).commands) == [name]


def test_a_typo_is_told_with_the_nearest_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["dashbord"])
    assert e.value.code == 2
    assert "Did you mean 'dashboard'?" in capsys.readouterr().err
