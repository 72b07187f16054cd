"""Import the published LLM-Inference-Bench result data (argonne-lcf/LLM-Inference-Bench, the
`Plots/` and `gh-pages/docs/data/` CSVs) as ordinary `kind: reference` records.

Every CSV under DIR is read; every row becomes a record or is reported, never silently lost:
- blank lines are skipped (they are not rows); CRLF and trailing spaces/tabs are stripped;
- a row with one field too many whose dtype string "Weight = a, KV Cache = b" was split by
  its unquoted comma is re-joined (flagged "recovered");
- a row with fields missing keeps what it has (flagged), or is reported as malformed when no
  metric survives;
- a row that repeats an already imported row exactly (same configuration, same numbers; the
  data set holds several copies of most files) is merged into that record, whose `sources`
  lists every file:line it appears at; a row whose configuration repeats with different
  numbers is imported and both records are flagged "duplicate configuration".
Names become canonical: hardware -> catalog id (the two Intel labels are one device; MI250 and
Max 1550 are counted in whole packages/cards: see hardware/catalog.yaml and
docs/reproducing-llm-inference-bench.md for the evidence), framework -> backend name, HF id ->
catalog model id. Units become the record's: power in W (the files mix mW and W), llama.cpp's
"Batch Size" (llama-bench n_batch, one sequence) becomes n_batch with batch_size 1.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.errors import SpecError
from llmbench.importers.common import ImportResult, Unreadable, num_text, one
from llmbench.models.catalog import CATALOG, canonical_name
from llmbench.measure.metric_stats import MetricStats
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "llm-inference-bench"
RUN_ID = "llm-inference-bench"   # one run: a re-import replaces the previous one
UPSTREAM = "https://github.com/argonne-lcf/LLM-Inference-Bench"

HARDWARE = {"nvidia a100 gpu": "A100-SXM4-40GB", "nvidia h100 gpu": "H100-SXM",
            "nvidia gh200 gpu": "GH200", "amd mi250 gpu": "MI250",
            "amd mi300x gpu": "MI300X", "intel pvc gpu": "Max1550",
            "intel max 1550": "Max1550", "habana gaudi2": "Gaudi2",
            "sambanova sn40l": "SN40L"}
BACKENDS = {"vllm": "vllm", "tensorrt-llm": "tensorrt-llm", "llama.cpp": "llamacpp",
            "deepspeed-mii": "deepspeed-mii", "deepspeed": "deepspeed", "sambaflow": "sambaflow"}
WEIGHTS = {"fp16": "fp16", "full_prec": "fp16", "float16": "fp16", "bf16": "bf16",
           "fp8": "fp8", "int8_sq": "int8", "int8": "int8"}
POWER_MW_ABOVE_W = 5000.0  # no single-node reading here is above 5 kW: larger values are mW

# Columns by lower-cased, stripped header name -> canonical field.
COLUMNS = {
    "hardware": "hardware", "num of hardware": "count", "framework": "framework",
    "model": "model", "model_name": "model", "model name": "model",
    "input output length": "io", "input length": "input_len", "max_input_length": "input_len",
    "output length": "output_len", "max_output_len": "output_len",
    "batch size": "batch", "batch_size": "batch",
    "latency": "latency", "throughput": "throughput",
    "kv cache": "kv_cache", "kv cache block_size": "kv_block_size",
    "kv_cache_dtype": "dtypes", "kv cache dtype": "dtypes",
    "speculative model": "speculative_model", "num speculative tokens": "num_speculative_tokens",
    "speculative_decoding": "speculative_label", "parallelism type": "parallelism",
    "avg_power": "avg_power", "throughput_per_watt_avg": "throughput_per_watt",
    "perplexity": "perplexity", "ttft latency": "ttft", "end_latency": "end_latency",
    "tp_size": "count", "tensor_parallel": "count", "precision": "precision",
    "int8_kv_cache": "int8_kv_cache",
}


def parse_dtypes(s: str) -> tuple[str | None, str | None, str | None]:
    """'Weight = int8_sq, KV Cache = fp8' -> (weight_dtype, weight_quant, kv_cache_dtype)."""
    m = re.search(r"weight\s*=\s*([\w.]+).*kv\s*cache\s*=\s*([\w.]+)", s, re.I)
    if not m:
        return None, None, None
    w, kv = m.group(1).lower(), m.group(2).lower()
    quant = w if w in ("int8_sq", "fp8") else None
    return WEIGHTS.get(w, w), quant, ("fp16" if kv == "full_prec" else kv)


def parse_parallelism(label: str, n: int) -> tuple[int, int, int]:
    """(tp, pp, ep) for the Parallelism file's inconsistent labels on n devices."""
    s = label.lower()
    if n <= 1:
        return 1, 1, 1
    tp = re.search(r"tp\s*=\s*(\d+)|tensor\s*\((\d+)\)", s)
    pp = re.search(r"pp\s*=\s*(\d+)|pipeline\s*\((\d+)\)", s)
    ep = re.search(r"ep\s*=\s*(\d+)|expert\s*\((\d+)\)", s)
    if "hybrid" in s or "hybird" in s:
        g = lambda m: int(next(x for x in m.groups() if x)) if m else 1  # noqa: E731
        return g(tp), g(pp), g(ep)
    if s in ("tp",) or "tensor" in s:
        return n, 1, 1
    if s in ("pp",) or "pipeline" in s:
        return 1, n, 1
    if s in ("ep",) or "expert" in s:
        return 1, 1, n
    raise ValueError(f"unknown parallelism label {label!r}")


def _context(rel: str) -> dict[str, Any]:
    """What a file leaves out and its name or the README says."""
    name = rel.lower()
    if "heatmap_input_vs_output" in name:
        return {"hardware": "Nvidia A100 GPU", "framework": "TensorRT-LLM",
                "note": "hardware and framework are not in the file: 1 A100 + TensorRT-LLM, "
                        "the figure's setting (README)"}
    if "gh200_results" in name:
        return {"hardware": "Nvidia GH200 GPU", "framework": "vLLM",
                "note": "hardware from the file name; framework not in the file, taken as vLLM "
                        "(the FP8 checkpoint's engine in the other Fig_3 files)"}
    if "all_results_ttft_itl" in name:
        return {"kind": "ttft_itl"}
    if "all_results_ttft" in name:
        return {"kind": "ttft"}
    return {}


@dataclass
class _Row:
    rel: str
    line: int
    f: dict[str, str | None]
    notes: list[str]
    recovered: bool = False


def read_file(path: Path, rel: str, res: ImportResult) -> list[_Row]:
    rows: list[_Row] = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header: list[str] | None = None
        for fields in reader:
            if not any(x.strip() for x in fields):
                continue  # blank line
            if header is None:
                header = [h.strip().lower() for h in fields]
                unknown = [h for h in header if h and h not in COLUMNS]
                if unknown:
                    res.remarks.append(f"{rel}: columns not imported: {', '.join(unknown)}")
                continue
            res.counts["rows read"] += 1
            line = reader.line_num
            notes: list[str] = []
            recovered = False
            if len(fields) == len(header) + 1 and "dtypes" in (COLUMNS.get(h) for h in header):
                i = [COLUMNS.get(h) for h in header].index("dtypes")
                if fields[i].strip().lower().startswith("weight") and \
                        fields[i + 1].strip().lower().startswith("kv cache"):
                    fields = fields[:i] + [fields[i] + "," + fields[i + 1]] + fields[i + 2:]
                    notes.append("recovered: the dtype string's comma was not quoted "
                                 f"({len(header) + 1} fields for {len(header)} columns)")
                    recovered = True
            if len(fields) > len(header):
                res.problems.append(f"{rel}:{line}: {len(fields)} fields for "
                                        f"{len(header)} columns: {','.join(fields)[:120]}")
                continue
            if len(fields) < len(header):
                missing = [h for h in header[len(fields):]]
                notes.append(f"short row: {len(fields)} of {len(header)} fields; "
                             f"missing {', '.join(missing)}")
                fields = fields + [""] * (len(header) - len(fields))
            f = {}
            for h, v in zip(header, fields):
                if h in COLUMNS:
                    f[COLUMNS[h]] = v.strip() if v is not None else None
            rows.append(_Row(rel, line, f, notes, recovered))
    return rows


def to_record(row: _Row, ctx: dict[str, Any]) -> Record | None:
    """One row -> one record (None: nothing measurable in it; the caller reports it)."""
    f, notes = row.f, list(row.notes)
    hw_label = f.get("hardware") or ctx.get("hardware") or ""
    fw_label = f.get("framework") or ctx.get("framework") or ""
    if ctx.get("note"):
        notes.append(ctx["note"])
    hw = HARDWARE.get(hw_label.lower())
    backend = BACKENDS.get(fw_label.lower())
    if hw is None or backend is None:
        raise ValueError(f"unknown hardware {hw_label!r} or framework {fw_label!r}")
    model_label = f.get("model") or ""
    model = canonical_name(model_label)
    if model is None:
        notes.append(f"model {model_label!r} is not in the catalog: no roofline")
    count = int(num_text(f.get("count")) or 1)
    io = num_text(f.get("io"))
    inp = int(num_text(f.get("input_len")) or io or 0)
    out = int(num_text(f.get("output_len")) or io or 0)
    batch = int(num_text(f.get("batch")) or 1)
    latency, thr = num_text(f.get("latency")), num_text(f.get("throughput"))

    w: dict[str, Any] = {
        "source": row.rel, "source_row": row.line, "hardware_label": hw_label,
        "framework_label": fw_label, "model_label": model_label,
        "batch_size": batch, "input_len": inp, "output_len": out,
        "tensor_parallel": count, "pipeline_parallel": 1, "expert_parallel": 1,
        "kv_block_size": None, "kv_cache_dtype": "fp16", "weight_dtype": "fp16",
        # Every engine in the study decodes with a KV cache; only the rows of the KV-cache
        # experiment (Fig. 2a) say "Without". So an unstated cache is "with", which also lets
        # the same measurement in two files merge instead of showing as two configurations.
        "weight_quant": None, "kv_cache": "with", "speculative_model": None,
    }
    if "fp8" in model_label.lower():
        w["weight_dtype"] = w["weight_quant"] = "fp8"
        notes.append("FP8 checkpoint: weight dtype fp8")
    if f.get("dtypes"):
        wd, quant, kvd = parse_dtypes(f["dtypes"])
        if wd is None:
            notes.append(f"unparsed dtype string {f['dtypes']!r}")
        else:
            w.update(weight_dtype=wd, weight_quant=quant, kv_cache_dtype=kvd)
        w["dtype_label"] = f["dtypes"]
    if f.get("precision"):
        w["weight_dtype"] = WEIGHTS.get(f["precision"].lower(), f["precision"].lower())
    if f.get("int8_kv_cache") is not None:
        w["kv_cache_dtype"] = "int8" if f["int8_kv_cache"].lower() == "true" else "fp16"
    if f.get("kv_block_size"):
        w["kv_block_size"] = int(num_text(f["kv_block_size"]))
    if f.get("kv_cache"):
        w["kv_cache"] = "without" if f["kv_cache"].lower().startswith("without") else "with"
    if f.get("speculative_model") is not None or f.get("speculative_label") is not None:
        sm = f.get("speculative_model")
        w["speculative_model"] = None if (sm or "None") == "None" else sm
        w["num_speculative_tokens"] = int(num_text(f.get("num_speculative_tokens")) or 0) or None
    if f.get("parallelism"):
        w["parallelism_label"] = f["parallelism"]
        tp, pp, ep = parse_parallelism(f["parallelism"], count)
        w.update(tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=ep)
    elif backend == "llamacpp" and count > 1:
        w.update(tensor_parallel=1, pipeline_parallel=count)
        notes.append("llama.cpp on several GPUs: layer split (its default), modelled as "
                     "pipeline_parallel")

    arch = CATALOG.get(model) if model else None
    if arch and inp + out > arch.max_position and ctx.get("kind") is None:
        notes.append(f"input + output = {inp + out} tokens exceeds {model}'s context of "
                     f"{arch.max_position}: the run cannot have generated every token")
        w["context_overflow"] = True
    m: dict[str, MetricStats] = {}
    kind = ctx.get("kind")
    if backend == "llamacpp":
        w["n_batch"] = batch
        w["batch_size"] = batch = 1
        notes.append("llama.cpp: 'Batch Size' is llama-bench n_batch (prompt chunk), one "
                     "sequence; batch_size set to 1, n_batch kept; Throughput = (in+out)/Latency "
                     "(no batch factor) is right for one sequence")
    if kind == "ttft":
        w["ttft_definition"] = "batch"
        if latency is not None:
            m["ttft_s"] = one(latency, "s")
            m["batch_latency_s"] = one(latency, "s")
        notes.append("Latency of a 1-token run: the time to the whole batch's first token "
                     "(ttft_definition=batch)")
    elif kind == "ttft_itl":
        ttft, end = num_text(f.get("ttft")), num_text(f.get("end_latency"))
        w["ttft_definition"] = "batch"
        if ttft is not None:
            m["ttft_s"] = one(ttft, "s")
        if end is not None:
            out = w["output_len"] = inp  # the end-to-end run generated input_len tokens
            notes.append("Output Length says 1 (the TTFT run); end_latency is the run with "
                         f"{out} output tokens, as the figure's ITL = (end - TTFT)/(16 x 1023) "
                         "assumes")
            m["batch_latency_s"] = one(end, "s")
            m["total_throughput_tok_s"] = one(batch * (inp + out) / end, "tok/s")
            m["output_throughput_tok_s"] = one(batch * out / end, "tok/s")
            if ttft is not None:
                m["itl_s"] = one((end - ttft) / (out - 1), "s")
                m["tpot_s"] = one((end - ttft) / (out - 1), "s")
                m["paper_itl_s"] = one((end - ttft) / (batch * (out - 1)), "s")
                notes.append("itl_s = (end - TTFT)/(out - 1) per request; the paper's ITL "
                             "divides by batch x (out - 1) (paper_itl_s), a per-batch-token time")
        else:
            notes.append("end_latency missing: TTFT only")
    else:
        if latency is not None:
            m["batch_latency_s"] = one(latency, "s")
        expected = batch * (inp + out) / latency if latency else None
        if thr is None and expected is not None:
            thr = expected
            notes.append("Throughput empty: recomputed as batch x (in+out) / Latency")
        elif thr is not None and expected and abs(thr / expected - 1) > 0.01:
            notes.append(f"Throughput {thr:.6g} disagrees with batch x (in+out)/Latency "
                         f"= {expected:.6g} ({thr / expected - 1:+.1%})")
        if thr is not None:
            m["total_throughput_tok_s"] = one(thr, "tok/s")
            m["output_throughput_tok_s"] = one(thr * out / (inp + out), "tok/s")
            if latency is None and inp + out:
                lat = batch * (inp + out) / thr
                m["batch_latency_s"] = one(lat, "s")
                notes.append("Latency empty: recomputed as batch x (in+out) / Throughput")
        if backend == "sambaflow":
            notes.append("SN40L: Latency is back-computed from Throughput upstream")
    power = num_text(f.get("avg_power"))
    if power is not None:
        if power > POWER_MW_ABOVE_W:
            power /= 1000.0
            notes.append("avg_power in mW in the file: converted to W")
        m["avg_power_w"] = one(power, "W")
        lat = m.get("batch_latency_s")
        if lat is not None:
            m["energy_j"] = one(power * lat.mean, "J")
        if "total_throughput_tok_s" in m:
            tpj = m["total_throughput_tok_s"].mean / power
            m["total_tokens_per_joule"] = one(tpj, "tok/J")
            m["tokens_per_joule"] = one(m["output_throughput_tok_s"].mean / power, "tok/J")
            paper = num_text(f.get("throughput_per_watt"))
            if paper is not None and abs(paper / tpj - 1) > 0.01:
                notes.append(f"Throughput_per_watt_avg {paper:.4g} differs from "
                             f"Throughput / avg_power(W) = {tpj:.4g}")
    ppl = num_text(f.get("perplexity"))
    if ppl is not None:
        m["perplexity"] = one(ppl, "")
    if not m:
        return None
    rec = Record(
        run_id=RUN_ID, kind="reference", status="ok",
        point_key=hashlib.sha256(f"{row.rel}:{row.line}".encode()).hexdigest()[:16],
        backend=BackendInfo(name=backend, options={"label": fw_label}),
        model=ModelInfo(name=model or model_label, source="reference",
                        params=arch.param_count() if arch else None, hf_id=model_label),
        hardware=HardwareInfo(name=hw, count=count),
        workload=w, metrics=m, notes=notes,
        power={"unit_in_file": "mW" if "converted to W" in " ".join(notes) else "W"}
        if power is not None else {"available": False, "reason": "not in this file"},
        env={"source": UPSTREAM, "paper": "arXiv 2411.00136"},
    )
    rec.sources = [f"{row.rel}:{row.line}"]
    return rec


def _identity(rec: Record) -> tuple:
    w = rec.workload
    keys = ("batch_size", "n_batch", "input_len", "output_len", "tensor_parallel",
            "pipeline_parallel", "expert_parallel", "kv_block_size", "kv_cache_dtype",
            "weight_dtype", "kv_cache", "speculative_model", "ttft_definition")
    return (rec.hardware.name, rec.hardware.count, rec.backend.name, rec.model.name,
            *(w.get(k) for k in keys))


def _values(rec: Record) -> tuple:
    return tuple(sorted((k, float(f"{v.mean:.9g}")) for k, v in rec.metrics.items()))


def sniff_path(path: Path) -> bool:
    """A directory holding CSVs of the study's schema (a Hardware or Framework column)."""
    if not path.is_dir():
        return False
    for csv_path in path.rglob("*.csv"):
        try:
            with open(csv_path, newline="", encoding="utf-8-sig") as fh:
                header = {h.strip().lower() for h in next(csv.reader(fh), [])}
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        if header & {"hardware", "framework", "model_name"} and header & {"latency", "throughput",
                                                                          "ttft latency", "perplexity"}:
            return True
    return False


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    """Every CSV under the directory `path` -> records; counts, malformed rows and unmapped
    columns in the result (the rows name their own engine and hardware: no overrides)."""
    root = Path(path)
    given = [n for n, v in (("--backend", backend), ("--hardware", hardware),
                            ("--engine-version", version)) if v]
    if given:
        raise SpecError([(given[0], "the study's rows name their own engine, hardware and versions")])
    if not root.is_dir():
        raise Unreadable(f"{root}: not a directory (the study's data is a directory of CSVs)")
    files = sorted(p for p in root.rglob("*.csv") if p.is_file())
    if not files:
        raise Unreadable(f"{root}: no CSV files under it")
    res = ImportResult(TOOL, counts={"files read": 0, "rows read": 0, "recovered": 0,
                                     "merged (rows repeating an imported row exactly, listed "
                                     "in its `sources`)": 0})
    merged_key = list(res.counts)[-1]
    records = res.records
    seen: dict[tuple, list[Record]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        res.counts["files read"] += 1
        ctx = _context(rel)
        try:
            rows = read_file(path, rel, res)
        except (UnicodeDecodeError, csv.Error) as e:  # reported, never a crash or a silent skip
            res.problems.append(f"{rel}: unreadable file ({type(e).__name__}: {e})")
            continue
        for row in rows:
            try:
                rec = to_record(row, ctx)
            except (ValueError, TypeError) as e:
                res.problems.append(f"{rel}:{row.line}: {e}")
                continue
            if rec is None:
                res.problems.append(f"{rel}:{row.line}: no latency, throughput or other metric")
                continue
            res.counts["recovered"] += row.recovered
            ident = _identity(rec)
            same = seen.setdefault(ident, [])
            copy = next((r for r in same if _values(r) == _values(rec)), None)
            if copy is not None:
                copy.sources.append(f"{rel}:{row.line}")
                res.counts[merged_key] += 1
                continue
            for other in same:
                other.workload["duplicate_config"] = rec.workload["duplicate_config"] = True
                other.notes.append(f"duplicate configuration with different numbers: {rel}:{row.line}")
                rec.notes.append(f"duplicate configuration with different numbers: "
                                 f"{other.workload['source']}:{other.workload['source_row']}")
            same.append(rec)
            records.append(rec)
    for r in records:  # queryable: which files hold this row (rows live in `sources`)
        r.workload["in_files"] = ";".join(dict.fromkeys(x.rsplit(":", 1)[0] for x in r.sources))
    return res
