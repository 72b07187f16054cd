"""Two source trees of llmbench on one command, alternating: did the code or the machine move a
figure? (issue 48 item 2: the transformers fast path at batch 1 read 207 out tok/s at commit
7536a05 on 2026-12-03 and 186 on later days, and no run has yet told the two apart).

    git archive 7536a05 src | (mkdir -p .ab/old && tar -x -C .ab/old)    # here, once
    git archive HEAD src | (mkdir -p .ab/new && tar -x -C .ab/new)
    python3 benchmarks/ab_trees.py --a .ab/old --b .ab/new --rounds 3 \
        --metric output_throughput_tok_s -- run --model llama-3-8b --device cuda \
        --backend transformers --dtype bf16 --in-process -o kv_cache=static -o compile=true \
        --batch-size 1 --input-len 128 --output-len 128 --warmups 1 --repeats 3

Each side runs `python -m llmbench COMMAND --results TMP` in a fresh process with its tree's
`src` first on PYTHONPATH, so both share the machine, the engine and the environment and differ
only in llmbench's code. A goes first in even rounds, B in odd ones. Each side's figure per round
is the median of the metric's samples in its one record; the ratio is B / A as the metric's
direction makes it a speed-up (> 1 = B better), with the Student-t interval of the per-round
ratios (crosscheck_stats.paired_ratio). An interval holding 1 says the code did not move the
figure at this resolution.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from crosscheck_stats import paired_ratio  # noqa: E402


def tree_src(tree: Path) -> Path:
    src = tree / "src"
    if not (src / "llmbench" / "__init__.py").is_file():
        raise SystemExit(f"{tree}: no src/llmbench in it (make it with `git archive REV src | tar -x -C {tree}`)")
    return src


def one_side(tree: Path, command: list[str], metric: str) -> float:
    """The median of `metric` in the one record a fresh run of `command` under `tree` writes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tree_src(tree)), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "llmbench", *command, "--results", d], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        records = [json.loads(p.read_text()) for p in Path(d).rglob("*.json")]
    ok = [r for r in records if r.get("status") == "ok"]
    if len(ok) != 1:
        raise RuntimeError(f"{tree}: {len(ok)} ok records of {len(records)} (one point expected)")
    m = ok[0]["metrics"].get(metric)
    if m is None:
        raise RuntimeError(f"{tree}: the record has no metric {metric!r}")
    return float(m["median"])


def higher_is_better(metric: str) -> bool:
    """The catalog's direction of a metric (llmbench.metrics); one without a direction is refused."""
    from llmbench.metrics import direction

    d = direction(metric)
    if d == "none":
        raise SystemExit(f"{metric!r} has no direction in llmbench's metric catalog: name a throughput or a time")
    return d == "higher"


def run(a: Path, b: Path, command: list[str], metric: str, rounds: int, better_high: bool,
        progress: Path | None = None) -> dict:
    figures: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            figures[side].append(one_side(a if side == "a" else b, command, metric))
            print(f"round {r + 1} {side.upper()}: {figures[side][-1]:,.4g} {metric}", flush=True)
            if progress:   # a call cut at its time limit keeps the rounds it finished
                progress.write_text(json.dumps({"a_values": figures["a"], "b_values": figures["b"]}))
    # as a speed-up: a time is inverted so that > 1 always means B is better
    ours, theirs = (figures["b"], figures["a"]) if better_high else (figures["a"], figures["b"])
    return {"a": str(a), "b": str(b), "command": command, "metric": metric, "rounds": rounds,
            "a_values": figures["a"], "b_values": figures["b"],
            "direction": "B / A as a speed-up: > 1 = B better", **paired_ratio(ours, theirs)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="tree A (holds src/llmbench)")
    ap.add_argument("--b", type=Path, required=True, help="tree B")
    ap.add_argument("--metric", required=True, help="a metric of the record (the catalog's name)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the result here too")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the llmbench command, without --results")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("give the llmbench command after --")
    if a.rounds < 2:
        ap.error("--rounds must be >= 2 for an interval")
    for t in (a.a, a.b):
        tree_src(t)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
    res = run(a.a, a.b, command, a.metric, a.rounds, higher_is_better(a.metric), a.json)
    lo, hi = res["ci95"]
    holds = lo <= 1 <= hi
    print(f"B / A: {res['mean']:.3f} [{lo:.3f}, {hi:.3f}] 95% t over {a.rounds} rounds; "
          + ("the interval holds 1: no change the rounds can resolve" if holds else
             f"B {'faster' if res['mean'] > 1 else 'slower'} than A beyond the interval"))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
