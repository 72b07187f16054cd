"""`llmbench conformance`: load testers against known answers (src/llmbench/conformance/)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from llmbench.errors import SpecError

conformance_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                              help="Load testers (llmbench and the installed peers) against a "
                                   "known-answer server, side by side (docs/conformance.md).")


def register(app: typer.Typer) -> None:
    app.add_typer(conformance_app, name="conformance")


def _names(value: Optional[str], known: list[str], flag: str) -> list[str]:
    if not value or value == "all":
        return known
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise SpecError([(flag, f"{', '.join(bad)}: not one of {', '.join(known)}, all")])
    return names


@conformance_app.command("run")
def run_cmd(
    tools: Optional[str] = typer.Option(None, "--tools", help="comma list (default: all; absent ones are marked absent)"),
    scenarios: Optional[str] = typer.Option(None, "--scenarios", help="comma list (default: all)"),
    work: Path = typer.Option(Path("conformance-work"), "--work", help="each tool's outputs go here"),
    log: Optional[Path] = typer.Option(None, "--log", help="write the full result (JSON) here"),
    page: Optional[Path] = typer.Option(None, "--page", help="write the Markdown table here"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="HF tokenizer dir (default: SmolLM2-135M's)"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds one tool run may take"),
) -> None:
    """Run each tool on each scenario against a fresh known-answer server; print truth, each
    tool's value and error per scenario and metric; write the log and the page when asked."""
    from llmbench.conformance.page import render
    from llmbench.conformance.runner import run
    from llmbench.conformance.scenarios import SCENARIOS
    from llmbench.conformance.tools import TOOLS

    t = _names(tools, list(TOOLS), "--tools")
    s = _names(scenarios, list(SCENARIOS), "--scenarios")
    result = run(s, t, work.resolve(), tokenizer=tokenizer, timeout_s=timeout,
                 progress=lambda line: print(line, flush=True))
    command = "llmbench conformance run " + " ".join(shlex.quote(a) for a in sys.argv[sys.argv.index("run") + 1:]) \
        if "run" in sys.argv else "llmbench conformance run"
    result["command"] = command.strip()
    text = render(result, result["command"])
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(json.dumps(result, indent=1) + "\n")
    if page:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text)
    print(text)


@conformance_app.command("page")
def page_cmd(
    log: Path = typer.Option(..., "--log", help="a log written by `llmbench conformance run --log`"),
    page: Optional[Path] = typer.Option(None, "--page", help="write the Markdown here (default: print)"),
) -> None:
    """Re-render the table from a log, running nothing."""
    from llmbench.conformance.page import render

    if not log.is_file():
        raise SpecError([("--log", f"{log}: no such file")])
    data = json.loads(log.read_text())
    text = render(data, data.get("command") or "llmbench conformance run")
    if page:
        page.write_text(text)
    else:
        print(text)


@conformance_app.command("serve")
def serve_cmd(
    scenario: str = typer.Option("steady", "--scenario", help="a scenario name (`llmbench conformance scenarios`)"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port", help="0: any free port"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="tokenizer.json or HF dir that counts prompts (default: words)"),
) -> None:
    """Serve one scenario's known answers (an OpenAI-compatible server) until Ctrl-C."""
    from llmbench.conformance.scenarios import SCENARIOS
    from llmbench.conformance.server import main

    _names(scenario, list(SCENARIOS), "--scenario")
    main(["--scenario", scenario, "--host", host, "--port", str(port)]
         + (["--tokenizer", tokenizer] if tokenizer else []))


@conformance_app.command("scenarios")
def scenarios_cmd() -> None:
    """List the scenarios with their truth."""
    from llmbench.conformance.scenarios import SCENARIOS, truth

    for sc in SCENARIOS.values():
        t = ", ".join(f"{k}={v:.6g}" for k, v in truth(sc).items())
        print(f"{sc.name:<13} {sc.what}\n{'':<13} truth: {t}")
