"""benchmarks/ab_trees.py: two trees on one command, alternating, ratio B / A with its t interval.
Each tree here is a made-up `llmbench` package whose `run` writes one record of a known median,
so the truth (the per-round ratios and their interval) is computed here independently."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ab_trees  # noqa: E402

FAKE = '''import json, sys, pathlib
args = sys.argv[1:]
out = pathlib.Path(args[args.index("--results") + 1])
log = pathlib.Path({log!r})
log.open("a").write("{name}\\n")
v = {values!r}[sum(1 for l in log.read_text().splitlines() if l == "{name}") - 1]
(out / "r.json").write_text(json.dumps({{"status": "ok", "metrics": {{"output_throughput_tok_s": {{"median": v}}}}}}))
'''


def tree(root: Path, name: str, values: list[float], log: Path) -> Path:
    pkg = root / name / "src" / "llmbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(FAKE.format(log=str(log), name=name, values=values))
    return root / name


def test_rounds_alternate_and_the_ratio_is_b_over_a(tmp_path, capsys):
    stats = pytest.importorskip("scipy.stats")
    log = tmp_path / "order.log"
    a = tree(tmp_path, "a", [100.0, 100.0, 100.0], log)
    b = tree(tmp_path, "b", [110.0, 120.0, 100.0], log)
    res = ab_trees.run(a, b, ["run"], "output_throughput_tok_s", 3, better_high=True)
    # A first in round 1, B first in round 2, A first in round 3
    assert log.read_text().split() == ["a", "b", "b", "a", "a", "b"]
    assert res["ratios"] == pytest.approx([1.1, 1.2, 1.0])
    lo, hi = stats.t.interval(0.95, 2, loc=1.1, scale=stats.sem([1.1, 1.2, 1.0]))
    assert res["ci95"] == pytest.approx([lo, hi])
    # a time is inverted: B taking 10% longer reads as 1/1.1 of A's speed
    log.unlink()
    res = ab_trees.run(a, b, ["run"], "output_throughput_tok_s", 1, better_high=False)
    assert res["ratios"] == pytest.approx([100 / 110])


def test_a_tree_without_llmbench_and_a_metric_without_direction_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="no src/llmbench"):
        ab_trees.tree_src(tmp_path)
    with pytest.raises(SystemExit, match="no direction"):
        ab_trees.higher_is_better("no_such_metric")
    assert ab_trees.higher_is_better("output_throughput_tok_s") is True
    assert ab_trees.higher_is_better("tpot_s") is False
