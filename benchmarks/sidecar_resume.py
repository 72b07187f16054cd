"""A resumed run's sidecar: `index.write_sidecar` on a run directory of N records that has a
sidecar and gained M more records since (a sweep resumed, then ended again).

    .venv/bin/python benchmarks/sidecar_resume.py --dir DIR [--records 50000] [--add 100] [--setup]

`--setup` generates the records (benchmarks/dashboard_scale.py's documents) into DIR/run, writes
their sidecar, keeps a copy of it as DIR/base-sidecar, then adds the M records. Each run after
puts that sidecar back and times one `write_sidecar(DIR/run)`, so that runs of two llmbench
trees (PYTHONPATH) can be alternated on one directory.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import time
from pathlib import Path

import numpy as np

from dashboard_scale import BATCH, ENGINES, HW, IO, MODELS, TP, _doc  # (this folder)
from llmbench.store.index import write_sidecar
from llmbench.store.sidecar import SIDECAR


def records(run: Path, start: int, n: int) -> None:
    rng = np.random.default_rng(start)
    grid = list(itertools.product(HW, ENGINES, MODELS, IO, BATCH, TP))
    for i in range(start, start + n):
        doc = _doc(rng, i, *grid[i % len(grid)])
        doc["run_id"] = "run"
        (run / f"{doc['kind']}-p{i}-{rng.integers(1 << 63):016x}.json").write_text(json.dumps(doc))


def main() -> None:
    ap = argparse.ArgumentParser(description="time write_sidecar on a resumed run")
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--add", type=int, default=100)
    ap.add_argument("--setup", action="store_true")
    args = ap.parse_args()
    if args.records < 1 or args.add < 0:
        ap.error("--records must be >= 1 and --add >= 0")
    run, base = args.dir / "run", args.dir / "base-sidecar"
    if args.setup:
        shutil.rmtree(args.dir, ignore_errors=True)
        run.mkdir(parents=True)
        records(run, 0, args.records)
        write_sidecar(run)
        shutil.copy(run / SIDECAR, base)
        records(run, args.records, args.add)
        return
    if not base.is_file():
        raise SystemExit(f"sidecar_resume: {args.dir} has no set-up run; make one with --setup first")
    shutil.copy(base, run / SIDECAR)
    t = time.perf_counter()
    write_sidecar(run)
    print(f"write_sidecar of {sum(1 for _ in run.glob('*.json')):,} records: "
          f"{time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
