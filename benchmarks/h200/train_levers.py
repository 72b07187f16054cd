"""The training levers table of docs/training.md, recomputed from the committed H200 records
(issue 37 item 8): one statistic throughout, the MEAN over a record's timed steps of its metric
(MFU, or causal TFLOP/s for the block), and each lever's change with its 95% Welch interval
from the records' per-step samples (analysis/compare.py, as `llmbench compare` computes it).

The first pass (2026-12-02 13:51-13:55 UTC, commit ef6d1bc) quoted medians, the second
(18:17-18:33 UTC, commit 26463a7) means; GPT-2 XL micro-batch 16 -> 24 read "0.507 -> 0.504" by
the median and 0.501 -> 0.507 by the mean. Here both passes are read the same way, and the
interval says whether a lever moved anything.

    python3 benchmarks/h200/train_levers.py        # prints the markdown table
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "results" / "h200"

# (workload, lever, metric, off record, on record): a record is "RUN/POINTKEY-PREFIX"
LEVERS = (
    ("block h4096/32 heads s2048 fwd+bwd bf16 mb4", "attention: memory-efficient -> flash (eager)",
     "tflops_causal", "20261202T135531Z-a52dd2/a88f6249", "20261202T135531Z-a52dd2/e80f716e"),
    ("same", "torch.compile (flash)", "tflops_causal",
     "20261202T135531Z-a52dd2/e80f716e", "20261202T135115Z-ab1921/1bd25107"),
    ("same", "attention: flash -> cuDNN (compiled)", "tflops_causal",
     "20261202T135115Z-ab1921/1bd25107", "20261202T135115Z-ab1921/7d0b872c"),
    ("same", "micro-batch 4 -> 8 (compiled, flash)", "tflops_causal",
     "20261202T135115Z-ab1921/1bd25107", "20261202T135115Z-ab1921/c88d7ea0"),
    ("same", "compile mode default -> max-autotune-no-cudagraphs", "tflops_causal",
     "20261202T181911Z-b78e58/68d081e2", "20261202T182002Z-a50a2b/f52b9a54"),
    ("same", "compile mode default -> reduce-overhead", "tflops_causal",
     "20261202T181911Z-b78e58/68d081e2", "20261202T182002Z-a50a2b/a635e838"),
    ("same", "bf16 -> fp8 (torchao float8, tensorwise)", "tflops_causal",
     "20261202T181911Z-b78e58/68d081e2", "20261202T181911Z-b78e58/e5a4563f"),
    ("GPT-2 XL s1024 bf16 mb16", "torch.compile (regional, per layer)", "mfu",
     "20261202T135514Z-c277f8/420bc636", "20261202T135203Z-2da47c/ecf6d666"),
    ("same", "attention: auto -> cuDNN (compiled)", "mfu",
     "20261202T135203Z-2da47c/ecf6d666", "20261202T135203Z-2da47c/f1dc4ba5"),
    ("same", "micro-batch 16 -> 24 (compiled)", "mfu",
     "20261202T135203Z-2da47c/ecf6d666", "20261202T135440Z-4f3226/7d2793ff"),
    ("same", "AdamW for-loop -> fused (compiled)", "mfu",
     "20261202T181842Z-614906/2f032e10", "20261202T181802Z-4097ce/1baa3bb5"),
    ("same", "AdamW foreach -> fused (compiled)", "mfu",
     "20261202T181842Z-614906/cfc0ca7b", "20261202T181802Z-4097ce/1baa3bb5"),
    ("same", "loss full -> chunked logits (compiled)", "mfu",
     "20261202T181802Z-4097ce/1baa3bb5", "20261202T181802Z-4097ce/b7b426cb"),
    ("same", "compile mode default -> reduce-overhead", "mfu",
     "20261202T181802Z-4097ce/1baa3bb5", "20261202T182932Z-a627b7/dadca050"),
    ("same", "bf16 -> fp8 (TFLOP/s per device; fp8 MFU is of the fp8 peak)", "tflops_per_device",
     "20261202T181802Z-4097ce/1baa3bb5", "20261202T182853Z-3f04ca/be88bf58"),
    ("GenSLM-250M s2048 bf16 mb8", "torch.compile", "mfu",
     "20261202T135353Z-3a01a3/89a14bc5", "20261202T135353Z-3a01a3/fe909c2b"),
    ("same", "micro-batch 8 -> 16 (compiled)", "mfu",
     "20261202T135353Z-3a01a3/fe909c2b", "20261202T135353Z-3a01a3/9be895e1"),
    ("same", "heads 115 wide padded to 120 (`--head-pad`), compiled", "mfu",
     "20261202T181716Z-85218d/1df7a682", "20261202T181716Z-85218d/63b790f7"),
    ("same", "heads padded, eager", "mfu",
     "20261202T181716Z-85218d/45fc27ae", "20261202T181716Z-85218d/0724ad80"),
)


def record(ref: str) -> dict:
    """The committed record named RUN/POINTKEY-PREFIX (exactly one file)."""
    run, key = ref.split("/")
    hits = sorted((H200 / run).glob(f"*-{key}*.json"))
    if len(hits) != 1:
        raise FileNotFoundError(f"{ref}: {len(hits)} records match")
    return json.loads(hits[0].read_text())


def row(workload: str, lever: str, metric: str, off_ref: str, on_ref: str) -> dict:
    from llmbench.analysis.compare import metric_change
    from llmbench.store.record import MetricStats

    off, on = record(off_ref), record(on_ref)
    a, b = MetricStats(**off["metrics"][metric]), MetricStats(**on["metrics"][metric])
    c = metric_change(metric, a, b)
    return {"workload": workload, "lever": lever, "metric": metric, "off": a.mean, "on": b.mean,
            "pct": c.pct, "ci": c.pct_ci, "off_ref": off_ref, "on_ref": on_ref,
            "mem": (off["metrics"]["mem_peak_gib"]["mean"], on["metrics"]["mem_peak_gib"]["mean"])}


def fmt(metric: str, v: float) -> str:
    return f"{v:.3f}" if metric == "mfu" else f"{v:.1f}"


def table() -> str:
    lines = ["| workload | lever | metric | off | on | change [95% CI] | memory GiB | records (off -> on) |",
             "|---|---|---|---|---|---|---|---|"]
    for spec in LEVERS:
        r = row(*spec)
        lo, hi = r["ci"]
        verdict = "" if lo > 0 or hi < 0 else " (no significant change)"
        lines.append(f"| {r['workload']} | {r['lever']} | {r['metric']} | {fmt(r['metric'], r['off'])} | "
                     f"{fmt(r['metric'], r['on'])} | {r['pct']:+.1f}% [{lo:+.1f}%, {hi:+.1f}%]{verdict} | "
                     f"{r['mem'][0]:.1f} / {r['mem'][1]:.1f} | `{r['off_ref']}` -> `{r['on_ref']}` |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    print(table())
