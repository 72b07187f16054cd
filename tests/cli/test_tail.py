"""The tail every point-running command shares (cli/tail.py): the run id check and `--point K`
live there once, and run, serve and train take both from it."""

import ast
from pathlib import Path

import pytest

from llmbench.cli.tail import check_run_id, pick_point
from llmbench.errors import SpecError

CLI = Path(__file__).parents[2] / "src" / "llmbench" / "cli"


@pytest.mark.parametrize("run_id", [None, "array-7", "20261204T120000Z-ab12cd", "a.b_c", "x" * 128])
def test_a_run_id_that_names_one_directory_passes(run_id):
    check_run_id(run_id)


@pytest.mark.parametrize("run_id", ["../x", "a/b", "x..y", ".hidden", "-flag", "$(rm -rf)", "a b",
                                    "", "x" * 129])
def test_a_run_id_that_could_leave_its_directory_is_a_usage_error(run_id):
    with pytest.raises(SpecError) as err:
        check_run_id(run_id)
    assert err.value.problems[0][0] == "--run-id"


def test_pick_point_keeps_every_point_or_exactly_point_k():
    points = ["p0", "p1", "p2"]
    assert pick_point(points, None) == points
    assert pick_point(points, 0) == ["p0"] and pick_point(points, 2) == ["p2"]


@pytest.mark.parametrize("index", [3, -1])
def test_a_point_out_of_range_names_the_range(index):
    with pytest.raises(SpecError) as err:
        pick_point(["p0", "p1", "p2"], index)
    assert err.value.problems == [("--point", f"{index} is out of range: the sweep has 3 points (0..2)")]


def test_run_serve_and_train_take_both_checks_from_the_tail_and_nobody_else_defines_them():
    defined, imported = set(), {}
    for path in (CLI.parent).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ("check_run_id", "pick_point"):
                defined.add((path.relative_to(CLI.parent).as_posix(), node.name))
            if isinstance(node, ast.ImportFrom) and path.parent == CLI:
                for a in node.names:
                    if a.name in ("check_run_id", "pick_point"):
                        imported.setdefault(path.name, set()).add((node.module, a.name))
    assert defined == {("cli/tail.py", "check_run_id"), ("cli/tail.py", "pick_point")}
    both = {("llmbench.cli.tail", "check_run_id"), ("llmbench.cli.tail", "pick_point")}
    assert imported == {"run.py": both, "serve.py": both, "train.py": both}
