"""The regression gate (benchmarks/h200/gate.py, issue 37 item 5): its points are the committed
records the issue names, its re-run commands measure those same points (checked against each
record's own command line and workload), and its table is `llmbench compare`'s, whose change
and 95% Welch interval are recomputed here with scipy from the records' samples."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))
import campaign  # noqa: E402
import gate  # noqa: E402


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def flags(argv) -> dict[str, list[str]]:
    """--flag value pairs of a command line (a flag given twice keeps both values)."""
    out: dict[str, list[str]] = {}
    for i, a in enumerate(argv):
        if a.startswith("-") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out.setdefault(a, []).append(argv[i + 1])
    return out


def test_the_gate_holds_the_points_the_issue_names():
    names = [p.name for p in gate.GATE]
    assert names == ["transformers fast path b1", "transformers fast path b16", "llama.cpp F16 b1",
                     "vLLM b1", "vLLM b64", "training block bf16", "training GPT-2 XL",
                     "training GenSLM-250M"]
    for p in gate.GATE:
        assert "h200" in p.runs
        for card in p.runs:     # each baseline is its card's record of the point
            d = load(p.record_path(card))
            assert d["status"] == "ok" and d["point_key"] == p.point_key
            assert gate.card_of(d["hardware"]["name"]) == card


def test_the_baseline_is_the_rerun_card(tmp_path):
    """A call for an H200 that ran on an H100 compares against the H100's baseline, never
    across cards; a card with no baselines is an error naming the kept ones."""
    new = tmp_path / "new"
    new.mkdir()
    h100 = [p for p in gate.GATE if "h100" in p.runs]
    shutil.copy2(h100[0].record_path("h100"), new / "r.json")
    assert gate.rerun_card(new) == "h100"
    staged = gate.stage_base(tmp_path / "base", gate.GATE, "h100")
    assert sorted(p.name for p in staged) == sorted(p.record_path("h100").name for p in h100)
    assert len(h100) == 5       # vLLM and llama.cpp have no H100 baseline yet
    with pytest.raises(ValueError, match="no gate baselines are kept for 'AMD MI300X'"):
        gate.card_of("AMD MI300X")
    shutil.copy2(gate.GATE[0].record_path("h200"), new / "s.json")
    with pytest.raises(ValueError, match="2 cards"):
        gate.rerun_card(new)


@pytest.mark.parametrize("point, card", [(p, c) for p in gate.GATE for c in p.runs],
                         ids=lambda x: x if isinstance(x, str) else x.name)
def test_each_rerun_measures_its_records_point(point, card):
    d = load(point.record_path(card))
    w, mine, theirs = d["workload"], flags(point.rerun), flags(d["env"]["argv"])
    # every value the re-run gives is one the record's own command swept (the repeat count is
    # how the run is done, not which point: compare pairs without it, and the gate takes 3)
    for flag, values in mine.items():
        if flag == "--repeats":
            continue
        if flag in ("-o", "-B"):  # key=a,b sweeps key=a and key=b
            swept = {f"{kv.split('=')[0]}={v}" for kv in theirs.get(flag, []) for v in kv.split("=", 1)[1].split(",")}
            assert set(values) <= swept, (flag, values, swept)
            continue
        assert flag in theirs, (flag, d["env"]["argv"])
        assert values[0] in theirs[flag][0].split(","), (flag, values, theirs[flag])
    # and the values that make the point are the record's
    if point.rerun[0] == "run":
        assert d["backend"]["name"] == mine["--backend"][0]
        assert [w["batch_size"], w["input_len"], w["output_len"]] == \
            [int(mine["--batch-size"][0]), 128, 128]
    else:
        assert w["workload"] == mine["--workload"][0] and w["seq_len"] == int(mine["--seq-len"][0])
        assert w["micro_batch"] == int(mine["--micro-batch"][0]) and w["compile"] is True
        assert w["steps"] == int(mine["--steps"][0]) and w["precision"] == "bf16"


@pytest.mark.parametrize("which, n", [("inference", 5), ("training", 3)])
def test_each_campaign_part_reruns_its_points_then_compares(tmp_path, which, n):
    res = str(tmp_path / f"records-gate-{which}")
    steps = campaign.plan(f"gate-{which}", res)
    runs = [s for s in steps if s[0].startswith("gate: ") and "compare" not in s[0]]
    points = gate.select(which)
    assert len(runs) == len(points) == n
    for (label, argv, _, _), p in zip(runs, points):
        assert p.name in label and argv[3:] == [*p.rerun, "--results", res]
    label, argv, _, _ = steps[-1]
    assert "compare" in label and argv[-6:] == ["--new", res, "--points", which, "--base",
                                                str(tmp_path / f"gate-base-{which}")]
    # each part fits one 10-minute call of the device tool by its own estimates
    assert sum(s[2] for s in steps) <= 560
    assert gate.select("all") == gate.GATE


def welch_pct(base: list[float], new: list[float]) -> tuple[float, float, float]:
    """(change %, CI low %, CI high %) of the mean, 95% Welch, relative to the base mean."""
    import statistics

    from scipy import stats

    mb, mn = statistics.fmean(base), statistics.fmean(new)
    vb, vn = statistics.variance(base) / len(base), statistics.variance(new) / len(new)
    df = (vb + vn) ** 2 / (vb ** 2 / (len(base) - 1) + vn ** 2 / (len(new) - 1))
    half = stats.t.ppf(0.975, df) * (vb + vn) ** 0.5
    return 100 * (mn - mb) / mb, 100 * (mn - mb - half) / mb, 100 * (mn - mb + half) / mb


def test_the_gate_table_against_an_earlier_committed_run(tmp_path, monkeypatch):
    """NEW: the same transformers b1 point measured the day before (20261202T185038Z-38ea74):
    the table's change and interval are recomputed from both records' samples."""
    from llmbench.cli import app

    base = tmp_path / "gate-base"
    staged = gate.stage_base(base)
    assert sorted(p.name for p in staged) == sorted(p.record_path().name for p in gate.GATE)
    new = tmp_path / "new"
    new.mkdir()
    earlier = gate.GatePoint("b1 earlier", "551021879b455de1", {"h200": "20261202T185038Z-38ea74"}, ())
    shutil.copy2(earlier.record_path(), new / earlier.record_path().name)
    monkeypatch.setenv("COLUMNS", "250")
    r = CliRunner().invoke(app, gate.compare_argv(base, new)[3:])
    assert r.exit_code == 0, r.output
    b = load(gate.GATE[0].record_path())["metrics"]["batch_latency_s"]["samples"]
    n = load(earlier.record_path())["metrics"]["batch_latency_s"]["samples"]
    pct, lo, hi = welch_pct(b, n)
    row = next(line for line in r.output.splitlines() if "batch_latency_s" in line)
    assert f"{pct:+.1f}%" in row and f"[{lo:+.1f}%, {hi:+.1f}%]" in row, row
    # the other seven points have no re-run here: each is named, none is dropped silently
    assert r.output.count("only in BASE") == len(gate.GATE) - 1
