"""The H200 records beside LLM-Inference-Bench's A100 / H100 / GH200 records of the same engine,
model and lengths, each as a fraction of its own hardware's roofline (analysis/study.py), as the
Markdown table docs/h200-vs-study.md shows.

    python benchmarks/h200/study_table.py [--own results/h200] [--reference ../shared/reference/llm-inference-bench]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--own", type=Path, default=ROOT / "results" / "h200")
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "llm-inference-bench")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead")
    a = ap.parse_args()

    from llmbench.analysis.study import markdown, side_by_side
    from llmbench.importers.llm_inference_bench import parse
    from llmbench.roofline import annotate
    from llmbench.store.record import Record
    from llmbench.store.store import flatten

    refs = parse(a.reference).records
    rows = []
    for rec in refs:
        annotate(rec)
        rows.append(flatten(rec.model_dump(mode="json")))
    own = []
    for p in sorted(a.own.rglob("*.json")):
        try:
            rec = Record.model_validate_json(p.read_text())
        except ValueError:
            continue
        annotate(rec)  # the bound as the current roofline model computes it
        own.append(flatten(rec.model_dump(mode="json"), path=p))
    table = side_by_side(rows + own)
    print(json.dumps(table, indent=1) if a.json else markdown(table))


if __name__ == "__main__":
    main()
