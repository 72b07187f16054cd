"""llama.cpp's llama-bench (`-o json` or `-o jsonl`) as records: one `kind: inference` record
per test line.

llama-bench times engine work only: a `pp` test (n_prompt = P, n_gen = 0) decodes a P-token
prompt, a `tg` test (n_gen = N) runs N single-token decode steps without sampling, a `pg` test
both; `samples_ns` holds one wall time per repetition. These are the engine's own view, like
the `engine_prefill_s` / `engine_decode_s` counters llmbench records from llama.cpp during its
own runs, and are imported under those names (plus `engine_prefill_tok_s` /
`engine_decode_tok_s` from `samples_ts`); llama-bench has no TTFT, TPOT or end-to-end time
(no sampling, no detokenisation, no client), so none is made up. llama.cpp's "batch" is
`n_batch` (the prompt chunk), not concurrent sequences: batch_size is 1 and n_batch/n_ubatch
are their own workload fields (DESIGN.md's pitfall).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, from_samples, num, numbers,
                                       run_id_for, source)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "llama-bench"
KEYS = {"model_filename", "n_prompt", "n_gen", "samples_ns"}


def sniff(doc: Any) -> bool:
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and KEYS <= set(doc[0])


def sniff_path(path: Path) -> bool:
    text = path.read_text(errors="replace")
    try:
        return sniff(json.loads(text))
    except ValueError:
        first = text.split("\n", 1)[0]
        try:
            return sniff([json.loads(first)])
        except ValueError:
            return False


def _rows(text: str) -> list[tuple[int, Any]]:
    """(line, object) for a JSON array or JSONL; Unreadable when neither."""
    try:
        doc = json.loads(text)
    except ValueError:
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((i, json.loads(line)))
                except ValueError:
                    rows.append((i, None))
        if not any(isinstance(r, dict) for _, r in rows):
            raise Unreadable("not llama-bench JSON or JSONL") from None
        return rows
    if not isinstance(doc, list):
        raise Unreadable("not a llama-bench JSON array")
    # the array is printed one test object per block: locate each by its opening brace
    lines, at = [], 0
    for obj in doc:
        at = text.find("{", at)
        lines.append((text.count("\n", 0, at) + 1 if at >= 0 else 1, obj))
        at = text.find("}", at) + 1 if at >= 0 else at
    return lines


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    text = path.read_text(errors="replace")
    try:
        rows = _rows(text)
    except Unreadable as e:
        raise Unreadable(f"{path}: {e}") from None
    res = ImportResult(TOOL)
    for line, r in rows:
        where = f"{path}:{line}"
        if not isinstance(r, dict) or not KEYS <= set(r):
            res.problems.append(f"{where}: not a llama-bench test object")
            continue
        rec = _record(r, text, backend, hardware, version)
        if not rec.metrics:
            res.problems.append(f"{where}: no readable samples_ns/samples_ts")
            continue
        rec.source = source(TOOL, rec.backend.version, path, line)  # type: ignore[attr-defined]
        res.records.append(rec)
    return res


def _int(v: Any) -> int | None:
    x = num(v)
    return int(x) if x is not None else None


def _record(r: dict, text: str, backend: str | None, hardware: str | None,
            version: str | None) -> Record:
    build = r.get("build_commit") if isinstance(r.get("build_commit"), str) else None
    gpu, cpu = r.get("gpu_info"), r.get("cpu_info")
    hw = hardware or (gpu if isinstance(gpu, str) and gpu else cpu if isinstance(cpu, str) and cpu
                      else "unknown")
    model = r.get("model_filename")
    rec = Record(run_id=run_id_for(TOOL, text), kind="inference",
                 backend=BackendInfo(name=backend or "llamacpp",
                                     version=version or (f"build {r.get('build_number')} ({build})" if build else None),
                                     options={k: r.get(k) for k in ("n_threads", "n_gpu_layers", "backends")
                                              if k in r}),
                 model=ModelInfo(name=Path(model).name if isinstance(model, str) and model else "unknown",
                                 source=model if isinstance(model, str) else None,
                                 params=_int(r.get("model_n_params"))),
                 hardware=HardwareInfo(name=hw.strip()))
    n_prompt, n_gen = _int(r.get("n_prompt")), _int(r.get("n_gen"))
    rec.workload = {"batch_size": 1, "concurrency": 1, "input_len": n_prompt, "output_len": n_gen,
                    "n_batch": _int(r.get("n_batch")), "n_ubatch": _int(r.get("n_ubatch")),
                    "n_depth": _int(r.get("n_depth")), "kv_cache_dtype": r.get("type_k"),
                    "flash_attn": r.get("flash_attn"), "test": _test(n_prompt, n_gen)}
    ns, ts = numbers(r.get("samples_ns")), numbers(r.get("samples_ts"))
    part = {"pp": "prefill", "tg": "decode", "pg": "total"}.get(rec.workload["test"] or "")
    if part and ns:
        rec.workload["repeats"] = len(ns)
        if (st := from_samples([x * 1e-9 for x in ns], "s")) is not None:
            rec.metrics[f"engine_{part}_s"] = st
    if part and ts and (st := from_samples(ts, "tok/s")) is not None:
        rec.metrics[f"engine_{part}_tok_s"] = st
    return rec


def _test(n_prompt: int | None, n_gen: int | None) -> str | None:
    if n_prompt and not n_gen:
        return "pp"
    if n_gen and not n_prompt:
        return "tg"
    if n_prompt and n_gen:
        return "pg"
    return None
