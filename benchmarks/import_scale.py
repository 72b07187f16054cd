"""How long does importing a large AIPerf per-request export take?

The real export in tests/fixtures/tools/aiperf/profile_export.jsonl (8 requests) is repeated,
each copy's request ids and timestamps shifted so that every row is distinct, up to ROWS rows;
then `llmbench import aiperf` parses it and writes the record into a fresh store. Printed: rows,
file size, seconds to generate (not counted), seconds to import (parse + statistics + write).

    .venv/bin/python benchmarks/import_scale.py [--rows 100000]

Target (issue 14): 100,000 rows in under 10 s on the 2-core development machine.
Measured 2026-12-01 there (shared with other jobs): 100,000 rows, 252 MiB, import 5.7-6.2 s
(msgspec row decoding; without its fast path and the normal-approximation interval for pools
above 5,000 values it took 179 s).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "tools" / "aiperf" / "profile_export.jsonl"


def scaled_export(rows: int, dst: Path) -> None:
    base = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    span_ns = max(r["metadata"]["request_end_ns"] for r in base) - \
        min(r["metadata"]["credit_issued_ns"] for r in base) + 1
    with open(dst, "w") as f:
        for i in range(rows):
            r = json.loads(json.dumps(base[i % len(base)]))
            shift = (i // len(base)) * span_ns
            md = r["metadata"]
            for k in ("credit_issued_ns", "request_start_ns", "request_ack_ns", "request_end_ns"):
                if isinstance(md.get(k), int):
                    md[k] += shift
            md["x_request_id"] = f"scaled-{i}"
            f.write(json.dumps(r) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    from llmbench.importers.registry import import_file

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "profile_export.jsonl"
        t0 = time.perf_counter()
        scaled_export(args.rows, src)
        gen_s = time.perf_counter() - t0
        res, run_dir, took_s = import_file("aiperf", src, Path(tmp) / "results")
        rec = res.records[0]
        print(f"rows: {args.rows}  file: {src.stat().st_size / 2**20:.1f} MiB  "
              f"(generated in {gen_s:.1f} s, not counted)")
        print(f"import: {took_s:.2f} s  -> {len(res.records)} record, ttft_s n={rec.metrics['ttft_s'].n}, "
              f"problems: {len(res.problems)}")
        print("PASS" if took_s < 10 else "FAIL", "(target < 10 s)")


if __name__ == "__main__":
    main()
