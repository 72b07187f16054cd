"""Tool name -> importer module, format auto-detection, and the one import path into the
store. Every module follows importers/common.py's protocol (`parse`, `sniff`/`sniff_path`,
`OUTPUT_FILES`). Adding a tool is one module and one line here."""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
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
    "llm-inference-bench": "llmbench.importers.llm_inference_bench",  # the published study
    "parquet": "llmbench.importers.parquet",
}


def module(tool: str) -> ModuleType:
    if tool not in TOOLS:
        raise SpecError([("TOOL", f"{tool!r} is not one of {', '.join(TOOLS)}, auto")])
    return importlib.import_module(TOOLS[tool])


def _sniffs(mod: ModuleType, path: Path) -> bool:
    from llmbench.importers.common import load_json

    try:
        # JSONL formats and directories are read by the module; JSON ones by their document
        if hasattr(mod, "sniff_path"):
            return bool(mod.sniff_path(path))
        return path.is_file() and bool(mod.sniff(load_json(path)[0]))
    except (Unreadable, OSError, UnicodeError):
        return False


def resolve(tool: str, path: Path) -> Path:
    """The file a tool's output directory is imported through (its OUTPUT_FILES, preferred
    first); a file, or a directory the module reads whole, as it is."""
    mod = module(tool)
    if path.is_dir() and not _sniffs(mod, path):
        for name in getattr(mod, "OUTPUT_FILES", ()):
            if (path / name).is_file():
                return path / name
        raise SpecError([("PATH", f"{path}: no {tool} output in it (looked for "
                                  f"{', '.join(getattr(mod, 'OUTPUT_FILES', ())) or 'a file'})")])
    return path


def detect(path: Path) -> str:
    """The tool whose format `path` (a file or a tool's output directory) is; SpecError naming
    the tools tried when none fits."""
    for tool in TOOLS:
        mod = module(tool)
        if _sniffs(mod, path):
            return tool
        if path.is_dir():
            for name in getattr(mod, "OUTPUT_FILES", ()):
                if (path / name).is_file() and _sniffs(mod, path / name):
                    return tool
    raise SpecError([("PATH", f"{path}: not a result file or output directory of any known tool "
                              f"({', '.join(TOOLS)})")])


def parse(tool: str, path: Path, **names) -> ImportResult:
    path = Path(path)
    if tool == "auto":
        tool = detect(path)
    try:
        return module(tool).parse(resolve(tool, path), **names)
    except Unreadable as e:
        raise SpecError([("PATH", str(e))]) from None


@dataclass
class Imported:
    result: ImportResult
    run_dirs: list[Path]
    with_roofline: int
    replaced: int
    parse_s: float
    roofline_s: float
    write_s: float


def import_path(tool: str, path: Path, results: Path, annotate: bool = True, **names) -> Imported:
    """Parse, attach roofline bounds where the hardware and model are known, and write through
    the store's one batch write path; a re-import of the same data replaces its records."""
    from llmbench.store.index import write_sidecar
    from llmbench.store.store import Store, write_all

    t0 = time.perf_counter()
    res = parse(tool, Path(path), **names)
    t1 = time.perf_counter()
    bounded = 0
    if annotate and res.replace:   # an llmbench export carries its own bounds, as stored
        from llmbench.roofline import annotate as attach

        bounded = sum(bool(attach(r)) for r in res.records)
    t2 = time.perf_counter()
    store = Store(results)
    if not res.replace:   # an llmbench export: its records keep their run ids; skip those held
        from llmbench.exporters.identity import record_id

        held = {record_id(d) for _, d in store.raw()}
        res.records = [r for r in res.records if record_id(r.model_dump()) not in held]
    _, replaced = write_all(store, res.records, replace_runs=res.replace)
    dirs = [store.run_dir(rid) for rid in dict.fromkeys(r.run_id for r in res.records)]
    for d in dirs:  # each imported run ends here: its index rows (store/sidecar.py)
        write_sidecar(d)
    return Imported(res, dirs, bounded, replaced, t1 - t0, t2 - t1, time.perf_counter() - t2)
