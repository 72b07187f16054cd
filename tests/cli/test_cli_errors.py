"""Every command, every kind of usage mistake: exit status 2, one short message, never a
traceback (issue 15, item 1). Driven in-process through the real entry point (fast), plus a
few through `python -m llmbench` to prove the process itself behaves the same."""

import os
import subprocess
import sys

import pytest
from tests.conftest import cli

from llmbench.cli import main

# (argv, a phrase the message must hold)
MISTAKES = [
    ([], "Usage:"),
    (["runn"], "Did you mean 'run'"),
    (["reslts"], "Did you mean 'results'"),
    (["models", "pathh"], "Did you mean 'path'"),
    (["import"], "Usage:"),
    (["import", "llm-inference-bnch"], "Did you mean 'llm-inference-bench'"),
    (["run", "--bogus-flag", "1"], "No such option: --bogus-flag"),
    (["run", "--batch-size"], "requires an argument"),
    (["run", "--repeats", "x"], "'--repeats': expects a whole number"),
    (["run", "--resume", "true"], "flags take no value"),
    (["run", "--resum"], "Possible options: --no-resume, --results, --resume"),
    (["run", "--power-sampling", "sparse", "--list-points"], "is not one of: auto, dense, off"),
    (["results", "--bogus-flag"], "No such option"),
    (["results", "--format"], "requires an argument"),
    (["serve", "--bogus-flag", "1"], "No such option"),
    (["serve", "--rate"], "requires an argument"),
    (["serve", "--seed", "x"], "expects a whole number"),
    (["serve", "http://127.0.0.1:1", "--power-sampling", "sparse", "--list-points"],
     "--power-sampling: should be 'auto', 'dense' or 'off'"),
    (["train", "--bogus-flag"], "No such option"),
    (["train", "--steps"], "requires an argument"),
    (["train", "--steps", "ten"], "expects a whole number"),
    (["roofline", "--bogus-flag"], "No such option"),
    (["roofline", "--model"], "requires an argument"),
    (["roofline", "--hardware", "H100"], "Missing option '--model'"),
    (["roofline", "--model", "llama-2-7b", "--hardware", "H100", "--batch-size", "0"], "must be at least 1"),
    (["roofline", "--model", "llama-2-7b", "--hardware", "H1000"], "did you mean H100-SXM"),
    (["roofline", "--model", "llama-2-7bb", "--hardware", "H100"], "did you mean 'llama-2-7b'"),
    (["compare", "--bogus-flag", "1"], "No such option"),
    (["compare", "/nonexistent-base", "/nonexistent-new"], "is neither a directory nor a run id"),
    (["compare", "--fail-on-regression", "x", "a", "b"], "expects a number"),
    (["annotate", "--bogus-flag"], "No such option"),
    (["export"], "Usage:"),
    (["export", "parqet"], "Did you mean 'parquet'"),
    (["export", "parquet", "/nonexistent-results", "/tmp/x.parquet"], "not a results directory"),
    (["export", "mlflow", "/nonexistent-results"], "Missing option '--tracking-uri'"),
    (["findings", "--bogus-flag"], "No such option"),
    (["findings", "--format", "yaml"], "yaml"),
    (["annotate", "--results"], "requires an argument"),
    (["annotate", "--results", "/nonexistent-results"], "is not a results directory"),
    (["index", "--bogus-flag"], "No such option"),
    (["conformance", "runn"], "Did you mean 'run'"),
    (["conformance", "serve", "--scenario", "stedy"], "stedy: not one of steady"),
    (["conformance", "page", "--log", "/nonexistent-log.json"], "no such file"),
    (["index", "--results", "/nonexistent-results"], "is not a results directory"),
    (["report", "--bogus-flag"], "No such option"),
    (["report", "--out"], "requires an argument"),
    (["dashboard", "--bogus-flag"], "No such option"),
    (["dashboard", "--port", "http"], "expects a whole number"),
    (["dashboard", "--port", "0"], "must be at least 1"),
    (["models", "--bogus-flag"], "No such option"),
    (["models", "path"], "Missing argument"),
    (["models", "path", "x", "--format"], "requires an argument"),
    (["import", "llm-inference-bench"], "Missing argument"),
    (["import", "llm-inference-bench", "--bogus-flag", "d"], "No such option"),
    (["predict", "--bogus-flag"], "No such option"),
]


@pytest.mark.parametrize("argv,phrase", MISTAKES, ids=[" ".join(a) or "(none)" for a, _ in MISTAKES])
def test_every_usage_mistake_is_one_message_and_exit_2(argv, phrase, capsys):
    code, text = cli(argv, capsys)
    assert code == 2, text
    assert phrase in text, text
    assert "Traceback" not in text
    if phrase != "Usage:":  # help is long on purpose; a mistake is a line or two
        assert len(text.strip().splitlines()) <= 3, text


def test_every_command_is_covered():
    from llmbench.cli import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    tried = {argv[0] for argv, _ in MISTAKES if argv}
    assert names <= tried, names - tried


def test_version(capsys):
    import llmbench

    code, text = cli(["--version"], capsys)
    assert code == 0 and text.strip() == f"llmbench {llmbench.__version__}"


@pytest.mark.parametrize("command", ["run", "train", "report", "dashboard", "roofline", "serve"])
def test_help_shows_flags_as_flags(command, capsys):
    code, text = cli([command, "--help"], capsys)
    assert code == 0 and "--help" in text
    assert "<bool>" not in text  # typer's rich help labelled every flag as taking a bool


def test_run_help_shows_the_defaults(capsys):
    _, text = cli(["run", "--help"], capsys)
    text = " ".join(text.split())
    for flag, default in (("--batch-size", "(1,4)"), ("--input-len", "(32)"), ("--output-len", "(32)"),
                          ("--repeats", "(3)"), ("--device", "(auto)")):
        assert default in text.split(flag, 1)[1].split("--", 1)[0], (flag, default)
    assert "--resume / --no-resume" in text


@pytest.mark.parametrize("argv,phrase", [(["runn"], "Did you mean 'run'"),
                                         (["run", "--batch-size"], "requires an argument"),
                                         ([], "Usage:")])
def test_the_process_itself(argv, phrase):
    env = {**os.environ, "COLUMNS": "120"}
    r = subprocess.run([sys.executable, "-m", "llmbench", *argv], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 2, r.stderr
    assert phrase in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize("exc", [KeyboardInterrupt, "abort", "exit130"])
def test_interrupts_end_with_130_and_one_line(monkeypatch, capsys, exc):
    """Every except clause of main() must itself be valid against the installed typer (a
    clause naming a class typer's click lacks once turned Ctrl-C into a traceback)."""
    import typer

    import llmbench.cli as cli_module

    def fake_app(**kw):
        if exc == "abort":
            raise typer.Abort()
        if exc == "exit130":
            return 130  # what typer returns for a Ctrl-C it caught itself
        raise exc()

    monkeypatch.setattr(cli_module, "build_app", lambda commands=None: fake_app)
    code, text = cli([], capsys)
    assert code == 130 and text.strip() == "llmbench: interrupted"


def test_a_caught_ctrl_c_exits_130_under_python_m(tmp_path):
    # CPython marks a KeyboardInterrupt that ends a string exec as unhandled even when caught,
    # and under `python -m` then dies by SIGINT (-2) whatever code the program exits with.
    # The control (the same interrupt outside llmbench's main) shows the trap is real here.
    (tmp_path / "probe.py").write_text(
        "import sys\n"
        "import llmbench.cli as cli\n"
        "def interrupted_in_exec(*a, **k):\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt', {})\n"
        "    except KeyboardInterrupt:\n"
        "        raise SystemExit(130)\n"
        "if sys.argv[1] == 'main':\n"
        "    cli.build_app = lambda names=None: interrupted_in_exec\n"
        "    cli.main(['serve'])\n"
        "else:\n"
        "    interrupted_in_exec()\n")
    codes = {how: subprocess.run([sys.executable, "-m", "probe", how], cwd=tmp_path).returncode
             for how in ("control", "main")}
    assert codes == {"control": -2, "main": 130}
