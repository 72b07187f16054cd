"""Tool name -> importer module, and format auto-detection. Each module has
`sniff(doc) -> str | None` and `parse(path, backend=, hardware=, version=) -> ImportResult`.
Adding a tool is one module and one line here."""

from __future__ import annotations

import importlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from llmbench.errors import SpecError
from llmbench.importers.common import ImportResult, Unreadable

TOOLS = {
    "vllm-bench": "llmbench.importers.vllm_bench",
    "guidellm": "llmbench.importers.guidellm",
    "aiperf": "llmbench.importers.aiperf",
    "inference-perf": "llmbench.importers.inference_perf",
    "optimum-benchmark": "llmbench.importers.optimum_benchmark",
    "llama-bench": "llmbench.importers.llama_bench",
    "parquet": "llmbench.importers.parquet",
}


def module(tool: str) -> ModuleType:
    if tool not in TOOLS:
        raise SpecError([("TOOL", f"{tool!r} is not one of {', '.join(TOOLS)}, auto")])
    return importlib.import_module(TOOLS[tool])


def detect(path: Path) -> str:
    """The tool whose format `path` is; SpecError naming the tools tried when none fits."""
    from llmbench.importers.common import load_json

    for tool in TOOLS:
        mod = module(tool)
        try:
            # JSONL formats read the file themselves; JSON ones look at the parsed document
            found = mod.sniff_path(path) if hasattr(mod, "sniff_path") else mod.sniff(load_json(path)[0])
            if found:
                return tool
        except (Unreadable, OSError, UnicodeError):
            continue
    raise SpecError([("PATH", f"{path}: not a result file of any known tool ({', '.join(TOOLS)})")])


def parse(tool: str, path: Path, **names) -> ImportResult:
    if tool == "auto":
        tool = detect(path)
    try:
        return module(tool).parse(path, **names)
    except Unreadable as e:
        raise SpecError([("PATH", str(e))]) from None


def import_file(tool: str, path: Path, results: Path, **names) -> tuple[ImportResult, Path, float]:
    """Parse and write into the store; a re-import of the same file replaces its records."""
    from llmbench.store.store import Store

    t0 = time.perf_counter()
    res = parse(tool, Path(path), **names)
    store = Store(results)
    run_dir = store.root / (res.records[0].run_id if res.records else "none")
    if res.replace:
        for p in run_dir.glob("*.json") if res.records else []:
            p.unlink()
    else:
        from llmbench.exporters.identity import record_id

        held = {record_id(d) for _, d in store.raw()}
        res.records = [r for r in res.records if record_id(r.model_dump()) not in held]
    with ThreadPoolExecutor(max_workers=8) as ex:  # fsync per record dominates: overlap them
        list(ex.map(store.write, res.records))
    return res, run_dir, time.perf_counter() - t0
