#!/usr/bin/env python3
"""How stable is the measured matmul peak (what `mfu_measured_peak` divides by)? Goal: +-2%.

Issue 19: one 20-product median per run read 730, 764, 774 and 786 TFLOP/s on one H200. This
measures the peak as llmbench.kinds.training.peaks does now (WARMUP_S of back-to-back products, then
WINDOWS timed windows of WINDOW_S each, the median window) --runs times, each in a fresh
process (a new CUDA context, as each `llmbench train` run has), and prints every run's median
and within-run spread, the spread of the medians between runs, and its ratio to the +-2% goal.
Exit status 0 when the runs' medians lie within +-2% of their median, 1 otherwise.

On the device machine (torch installed there):
  PYTHONPATH=$PWD/src python3 benchmarks/matmul_peak_stability.py --runs 6 --precision bf16
A run takes about WARMUP_S + WINDOWS x WINDOW_S = 2.25 s plus CUDA start-up (~10 s each).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

ONE_RUN = ("import json, sys; from llmbench.kinds.training.peaks import measured_matmul_peak as m; "
           "print(json.dumps(m(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), "
           "float(sys.argv[5]))))")


def main() -> int:
    from llmbench.kinds.training.peaks import SPREAD_GOAL, WARMUP_S, WINDOW_S, WINDOWS, spread

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--windows", type=int, default=WINDOWS)
    ap.add_argument("--warmup-s", type=float, default=WARMUP_S)
    ap.add_argument("--window-s", type=float, default=WINDOW_S)
    ap.add_argument("--json", help="also write every run's result here")
    a = ap.parse_args()
    runs = []
    for i in range(a.runs):
        p = subprocess.run([sys.executable, "-c", ONE_RUN, a.device, a.precision, str(a.windows),
                            str(a.warmup_s), str(a.window_s)], capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            return 2
        r = json.loads(p.stdout.strip().splitlines()[-1])
        runs.append(r)
        w = [f / 1e12 for f in r["windows_flops"]]
        print(f"run {i + 1}: median {r['flops'] / 1e12:.1f} TFLOP/s, windows "
              f"{', '.join(f'{x:.1f}' for x in w)}, within-run spread +-{r['spread']:.2%} "
              f"({r['products_per_window']} products per window, {r['warmup_s']:.2f} s warm-up)")
    meds = [r["flops"] / 1e12 for r in runs]
    between = spread(meds)
    print(f"{a.precision} {runs[0]['n']}^3 on {a.device}, {a.runs} runs: median of medians "
          f"{statistics.median(meds):.1f} TFLOP/s, min {min(meds):.1f}, max {max(meds):.1f}; "
          f"between runs +-{between:.2%}, goal +-{SPREAD_GOAL:.0%}: ratio {between / SPREAD_GOAL:.2f} "
          f"({'meets' if between <= SPREAD_GOAL else 'misses'} the goal); largest within-run "
          f"spread +-{max(r['spread'] for r in runs):.2%}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "between_runs_spread": between, "goal": SPREAD_GOAL}, f, indent=1)
    return 0 if between <= SPREAD_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
