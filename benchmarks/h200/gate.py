"""The regression gate for llmbench's own engines (issue 37 item 5): a fixed set of committed
H200 points, re-run with the commands that made them, then `llmbench compare` of the committed
records against the new ones, with 95% Welch intervals.

Nothing flagged two moves in llmbench's own engines (the transformers fast path at batch 1 read
207.2 out tok/s in results/h200/20261203T063725Z-258b5b and 186 two days later on a fresh H200):
this part of the campaign re-runs the points every release touches and prints the table.

    python3 benchmarks/h200/campaign.py gate-inference --out DIR   # on the H200, one 10-minute call
    python3 benchmarks/h200/campaign.py gate-training --out DIR    # a second call
    python3 benchmarks/h200/gate.py --new DIR/records-gate-inference --points inference  # the table alone
    python3 benchmarks/h200/gate.py --list                    # the points and their records

Each point names, per card, one committed record (run directory and point key) and the command
that re-measures it (the record's own `env.argv`, narrowed to the point). A call for an H200 may
run on an H100, and a compare across cards compares nothing, so the baseline is kept per card
(results/h200, results/h100) and picked by the card the re-run's records name. The base side is a
copy of those records (DIR/gate-base), so `llmbench compare` pairs each with its re-run by
identity and refuses a pair whose engine version changed ("not comparable"); a point with no
baseline on that card is named, and its re-run is the record to commit as one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"
# the results folder of each card by the name NVML reports (records' hardware.name)
CARDS = {"h200": "NVIDIA H200", "h100": "NVIDIA H100 80GB HBM3"}
MODEL = "llama-3-8b"
IO_128 = ("--input-len", "128", "--output-len", "128", "--warmups", "1", "--repeats", "3")


def card_of(hardware_name: str) -> str:
    """The results folder of a card, from the name its records carry."""
    for card, name in CARDS.items():
        if hardware_name == name:
            return card
    raise ValueError(f"no gate baselines are kept for {hardware_name!r} (cards: {', '.join(CARDS.values())})")


@dataclass(frozen=True)
class GatePoint:
    name: str
    point_key: str           # the record's point key (the same on every card)
    runs: dict[str, str]     # card -> its baseline's run directory under results/CARD
    rerun: tuple[str, ...]   # argv after `python -m llmbench`, without --results

    def record_path(self, card: str = "h200", root: Path = RESULTS) -> Path:
        """The committed record's file on that card; an error naming the point when it is missing."""
        if card not in self.runs:
            raise KeyError(f"gate point {self.name!r} has no baseline on {card}")
        hits = sorted((root / card / self.runs[card]).glob(f"*-{self.point_key}-*.json"))
        if len(hits) != 1:
            raise FileNotFoundError(f"gate point {self.name!r}: {len(hits)} records for point "
                                    f"{self.point_key} in {root / card / self.runs[card]} (one expected)")
        return hits[0]


def _run(*args: str) -> tuple[str, ...]:
    return ("run", "--model", MODEL, "--device", "cuda", *args)


def _train(*args: str) -> tuple[str, ...]:
    return ("train", "--device", "cuda", *args)


TRANSFORMERS = ("--backend", "transformers", "--dtype", "bf16", "--in-process",
                "-o", "kv_cache=static", "-o", "compile=true")
LLAMACPP_F16 = ("--backend", "llamacpp", "-B", "llamacpp.flash_attn=true", "-B", "llamacpp.gguf_type=f16")
VLLM = ("--backend", "vllm", "--dtype", "bf16")

GATE = (
    GatePoint("transformers fast path b1", "551021879b455de1",
              {"h200": "20261203T063725Z-258b5b", "h100": "20261207T221723Z-2d65ac"},
              _run(*TRANSFORMERS, "--batch-size", "1", *IO_128)),
    GatePoint("transformers fast path b16", "92e6eaaad17ceb0d",
              {"h200": "20261203T070828Z-1948fe", "h100": "20261207T221939Z-5dd0b2"},
              _run(*TRANSFORMERS, "--batch-size", "16", *IO_128)),
    GatePoint("llama.cpp F16 b1", "a0543abef0c84539",
              {"h200": "20261202T131434Z-804460"},
              _run(*LLAMACPP_F16, "--batch-size", "1", *IO_128)),
    GatePoint("vLLM b1", "e5b23429100431bd",
              {"h200": "20261202T043415Z-fd0a3d"},
              _run(*VLLM, "--batch-size", "1", *IO_128)),
    GatePoint("vLLM b64", "b28ac6db41512a0b",
              {"h200": "20261202T043415Z-fd0a3d"},
              _run(*VLLM, "--batch-size", "64", *IO_128)),
    GatePoint("training block bf16", "68d081e2b453b3cd",
              {"h200": "20261202T181911Z-b78e58", "h100": "20261207T220252Z-3e261e"},
              _train("--workload", "block", "--hidden", "4096", "--heads", "32", "--seq-len", "2048",
                     "--micro-batch", "4", "--steps", "150", "--warmup", "3", "--mode", "fwdbwd",
                     "--compile", "true", "--precision", "bf16")),
    GatePoint("training GPT-2 XL", "fe9a445e2ac0aabc",
              {"h200": "20261203T065704Z-54ccfb", "h100": "20261207T220326Z-5ed751"},
              _train("--workload", "gpt2", "--size", "xl", "--seq-len", "1024", "--micro-batch", "16",
                     "--steps", "8", "--warmup", "3", "--compile", "true",
                     "--compile-mode", "max-autotune-no-cudagraphs")),
    GatePoint("training GenSLM-250M", "63b790f74f220d15",
              {"h200": "20261202T181716Z-85218d", "h100": "20261207T220718Z-c88841"},
              _train("--workload", "genslm", "--size", "250m", "--steps", "20", "--warmup", "3",
                     "--seq-len", "2048", "--micro-batch", "8", "--compile", "true", "--head-pad", "true")),
)


POINT_SETS = ("inference", "training", "all")


def select(which: str = "all") -> tuple[GatePoint, ...]:
    """The gate's points of one campaign part: `llmbench run` ones, `llmbench train` ones, or all."""
    if which not in POINT_SETS:
        raise ValueError(f"{which!r} is not one of {POINT_SETS}")
    keep = {"inference": ("run",), "training": ("train",), "all": ("run", "train")}[which]
    return tuple(p for p in GATE if p.rerun[0] in keep)


def stage_base(dest: Path, points=GATE, card: str = "h200", root: Path = RESULTS) -> list[Path]:
    """Copy each point's committed record on `card` into `dest` (the compare's BASE side);
    points without a baseline on that card are left out (main names them)."""
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(p.record_path(card, root), dest / p.record_path(card, root).name))
            for p in points if card in p.runs]


def rerun_card(new: Path) -> str:
    """The card the re-run ran on, from its records (one card per re-run, or an error)."""
    import json

    names = {json.loads(f.read_text()).get("hardware", {}).get("name") for f in new.rglob("*.json")}
    names.discard(None)
    if len(names) != 1:
        raise ValueError(f"{new}: the re-run's records name {len(names)} cards {sorted(names)}; one expected")
    return card_of(names.pop())


def rerun_argv(point: GatePoint, results: str) -> list[str]:
    return [sys.executable, "-m", "llmbench", *point.rerun, "--results", results]


def compare_argv(base: Path, new: Path) -> list[str]:
    """`llmbench compare` of the committed points against their re-runs: each point's verdict
    metric (batch_latency_s, step_time_s) and every shared metric, with 95% Welch intervals."""
    return [sys.executable, "-m", "llmbench", "compare", str(base), str(new), "--all-metrics"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new", type=Path, help="the re-run's results directory")
    ap.add_argument("--base", type=Path, help="where to stage the committed records (default: a temporary directory)")
    ap.add_argument("--list", action="store_true", help="the points, their records and commands")
    ap.add_argument("--points", choices=POINT_SETS, default="all", help="which points the re-run holds")
    ap.add_argument("--card", choices=sorted(CARDS), help="the baseline's card (default: the re-run's)")
    a = ap.parse_args()
    if a.list or a.new is None:
        for p in select(a.points):
            print(f"{p.name}:")
            for card in p.runs:
                print(f"    {card}: {p.record_path(card).relative_to(REPO)}")
            print(f"    llmbench {' '.join(p.rerun)}")
        return 0 if a.list else 2
    card = a.card or rerun_card(a.new)
    points = select(a.points)
    for p in points:
        if card not in p.runs:
            print(f"{p.name}: no committed baseline on {card}; its re-run is the record to commit as one")
    with tempfile.TemporaryDirectory() as tmp:
        base = a.base or Path(tmp) / "gate-base"
        if not stage_base(base, points, card):
            print(f"no gate point of {a.points!r} has a baseline on {card}: nothing to compare")
            return 0
        print(f"baseline: results/{card}", flush=True)
        return subprocess.run(compare_argv(base, a.new)).returncode


if __name__ == "__main__":
    sys.exit(main())
