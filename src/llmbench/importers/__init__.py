"""Importers: external result data as ordinary records in the store."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from llmbench.store.store import Store


def import_llm_inference_bench(src: Path, results: Path, annotate: bool = True) -> dict:
    """Parse every CSV under `src`, attach roofline bounds, replace the previous import in
    `results` (run id 'llm-inference-bench'), write one record per row. Returns the counts."""
    from llmbench.importers.llm_inference_bench import RUN_ID, parse_dir

    t0 = time.perf_counter()
    records, report = parse_dir(Path(src))
    t_parse = time.perf_counter() - t0
    bounded = 0
    if annotate:
        from llmbench.roofline import annotate as attach

        bounded = sum(attach(r) for r in records)
    t_roof = time.perf_counter() - t0 - t_parse
    store = Store(results)
    old = list((store.root / RUN_ID).glob("reference-*.json"))
    for p in old:  # a re-import replaces, never doubles, the reference records
        p.unlink()
    # fsync per record dominates; the writes are independent files, so overlap them
    with ThreadPoolExecutor(max_workers=8) as ex:
        list(ex.map(store.write, records))
    t_total = time.perf_counter() - t0
    return {"report": report, "records": len(records), "with_roofline": bounded,
            "replaced": len(old), "parse_s": t_parse, "roofline_s": t_roof,
            "write_s": t_total - t_parse - t_roof, "total_s": t_total,
            "dir": str(store.root / RUN_ID)}
