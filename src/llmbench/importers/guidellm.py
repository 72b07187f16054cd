"""guidellm's `benchmarks.json` (GenerativeBenchmarksReport, guidellm 0.8) as records: one
`kind: serving` record per benchmark (one per strategy/rate of a sweep).

Definitions (guidellm/benchmark/schemas, checked on the real file's per-request rows):
- guidellm's `time_to_first_token_ms` and `request_latency` run from the actual request start;
  `request_dispatch_delay` = actual − targeted start. Ours run from the scheduled (targeted)
  start, so per request: ttft_s = ttft + dispatch delay. guidellm's latency ends with the
  response (after the last token); ours at the last token: e2e_s = dispatch delay + ttft +
  ITL × (output − 1), exact since guidellm's ITL is (t_last − t_first) / (output − 1).
- guidellm's per-request `inter_token_latency_ms` = (latency − ttft) / (output − 1): exactly our
  TPOT, imported as `tpot_s`. Its `time_per_output_token_ms` = latency / output (TTFT
  included) is not ours and is not imported.
- Our `itl_s` pools every token gap; the file holds only per-request averages, so the gap
  distribution cannot be rebuilt: not imported (noted).
- Throughputs: the benchmark's total tokens (successful requests) / its duration.
Without per-request rows (sampled out) only guidellm's summaries exist: TPOT and the request
counts are imported; TTFT/E2E as `ttft_from_send_s` / `e2e_from_send_s`, flagged.
guidellm's own headline figures (its summaries: TTFT, ITL, request latency, with its own
nearest-rank percentiles) are kept as it reported them in `tool_figures` (common.tool_figure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, dig, from_samples, from_summary,
                                       line_of, load_json, num, one, run_id_for, source,
                                       tool_figure)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "guidellm"
OUTPUT_FILES = ("benchmarks.json",)  # what `--output kind=json` writes into the output folder
MS = 1e-3
# (ours, guidellm's summary, scale to s, label)
FIGURES = (
    ("ttft_s", "time_to_first_token_ms", MS, "guidellm time_to_first_token_ms: from the actual "
     "request start; llmbench's ttft_s runs from the scheduled (targeted) start: the difference "
     "is guidellm's dispatch delay (request_dispatch_delay)"),
    ("itl_s", "inter_token_latency_ms", MS, "guidellm inter_token_latency_ms: per request (latency "
     "− TTFT) / (output − 1), token-weighted: llmbench's tpot_s; llmbench's itl_s pools the gaps "
     "between tokens, which the file does not hold"),
    ("e2e_s", "request_latency", 1.0, "guidellm request_latency: actual start to the end of the "
     "response; llmbench's e2e_s runs from the scheduled start to the last token"),
)


def sniff(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and \
        isinstance(doc.get("metadata"), dict) and "guidellm_version" in doc["metadata"]


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    doc, text = load_json(path)
    if not sniff(doc):
        raise Unreadable(f"{path}: not a guidellm benchmarks.json")
    res = ImportResult(TOOL)
    tool_version = doc["metadata"].get("guidellm_version")
    spec = (doc.get("config") or {}).get("spec") if isinstance(doc.get("config"), dict) else None
    tok = ((spec or {}).get("tokenizer") or {}).get("model") if isinstance(spec, dict) else None
    for i, b in enumerate(doc["benchmarks"]):
        bid = dig(b, "config", "id_")
        line = line_of(text, str(bid)) if isinstance(bid, str) else 1
        where = f"{path}:{line}"
        if not isinstance(b, dict):
            res.problems.append(f"{where}: benchmark {i} is not an object")
            continue
        rec = _benchmark(b, where, res)
        if rec is None:
            continue
        rec.run_id = run_id_for(TOOL, text)
        rec.workload["tokenizer"] = tok if isinstance(tok, str) else None
        rec.backend.name = backend or rec.backend.name
        rec.hardware.name = hardware or rec.hardware.name
        rec.backend.version = version
        rec.source = source(TOOL, tool_version, path, line, benchmark=i,  # type: ignore[attr-defined]
                            strategy=dig(b, "config", "strategy", "type_"))
        res.records.append(rec)
    if not doc["benchmarks"]:
        res.problems.append(f"{path}:1: no benchmarks in the file")
    return res


def _workload(b: dict) -> dict:
    st = dig(b, "config", "strategy") or {}
    kind = st.get("type_") if isinstance(st, dict) else None
    w: dict[str, Any] = {"batch_size": None}
    streams = num(st.get("streams")) if isinstance(st, dict) else None
    rate = num(st.get("rate")) if isinstance(st, dict) else None
    if kind == "synchronous":
        w.update(load="closed", concurrency=1, request_rate_label="closed")
    elif kind == "concurrent" and streams is not None:
        w.update(load="closed", concurrency=int(streams), request_rate_label="closed")
    elif kind in ("constant", "poisson", "async") and rate is not None:
        w.update(load="open", request_rate=rate, request_rate_label=f"{rate:g}",
                 burstiness=1.0 if kind == "poisson" else None)
    elif kind == "throughput":
        w.update(load="open", request_rate=None, request_rate_label="inf")
    return w


def _benchmark(b: dict, where: str, res: ImportResult) -> Record | None:
    model = dig(b, "config", "backend", "model")
    rec = Record(run_id="x", kind="serving", backend=BackendInfo(name="openai-server"),
                 model=ModelInfo(name=model if isinstance(model, str) and model else "unknown"),
                 hardware=HardwareInfo(name="unknown"), workload=_workload(b))
    if rec.model.name == "unknown":
        res.problems.append(f"{where}: config.backend.model missing")
    m = b.get("metrics") if isinstance(b.get("metrics"), dict) else {}
    for ours, theirs in (("input_len", "prompt_token_count"), ("output_len", "output_token_count")):
        v = num(dig(m, theirs, "successful", "mean"))
        if v is not None:
            rec.workload[ours] = round(v)
    totals = m.get("request_totals") if isinstance(m.get("request_totals"), dict) else {}
    ok_n, err_n, inc_n = (num(totals.get(k)) for k in ("successful", "errored", "incomplete"))
    if ok_n is not None:
        rec.metrics["requests_completed"] = one(ok_n, "req")
    if err_n is not None and inc_n is not None:
        rec.metrics["requests_failed"] = one(err_n + inc_n, "req")
    dur = num(b.get("duration"))
    if dur and dur > 0:
        for name, key in (("output_throughput_tok_s", "output_token_count"),
                          ("total_throughput_tok_s", "total_token_count")):
            tot = num(dig(m, key, "successful", "total_sum"))
            if tot is not None:
                rec.metrics[name] = one(tot / dur, "tok/s")
        if ok_n is not None:
            rec.metrics["request_throughput_req_s"] = one(ok_n / dur, "req/s")
    for ours, theirs, scale, label in FIGURES:
        tool_figure(rec, ours, _summary_stats(m, theirs, scale), label)
    rows = dig(b, "requests", "successful")
    if isinstance(rows, list) and rows:
        _per_request(rows, rec, where, res)
    else:
        _summaries(m, rec)
    rec.notes.append("itl_s not imported: guidellm keeps per-request ITL averages, not the gaps")
    if not any(k.endswith("_s") and k not in ("duration_s",) for k in rec.metrics):
        res.problems.append(f"{where}: no timing metric could be read")
        return None
    return rec


def _per_request(rows: list, rec: Record, where: str, res: ImportResult) -> None:
    ttft, e2e, tpot, bad = [], [], [], 0
    for r in rows:
        t, lat = num(dig(r, "time_to_first_token_ms")), num(dig(r, "request_latency"))
        delay = num(dig(r, "request_dispatch_delay"))
        if t is None or lat is None or delay is None:
            bad += 1
            continue
        ttft.append(t * MS + delay)
        itl, out = num(dig(r, "inter_token_latency_ms")), num(dig(r, "output_tokens"))
        if itl is not None and out is not None and out >= 1:
            # to the last token (ours), not to the end of the response (guidellm's latency)
            e2e.append(delay + (t + itl * (out - 1)) * MS)
            if out > 1:
                tpot.append(itl * MS)
    if bad:
        res.problems.append(f"{where}: {bad} of {len(rows)} request rows lack ttft/latency/"
                            "dispatch delay: left out")
    if len(e2e) < len(ttft):
        res.problems.append(f"{where}: {len(ttft) - len(e2e)} request rows lack ITL/output "
                            "tokens: no e2e_s/tpot_s for them")
    for name, xs in (("ttft_s", ttft), ("e2e_s", e2e), ("tpot_s", tpot)):
        st = from_samples(xs, "s")
        if st is not None:
            rec.metrics[name] = st


def _summary_stats(m: dict, theirs: str, scale: float):
    """guidellm's summary of the successful requests' `theirs`, scaled into seconds."""
    s = dig(m, theirs, "successful")
    if not isinstance(s, dict):
        return None
    pct = s.get("percentiles") if isinstance(s.get("percentiles"), dict) else {}
    n = num(s.get("count"))
    return from_summary("s", scale, n=int(n) if n else 1, mean=s.get("mean"),
                        median=s.get("median"), std=s.get("std_dev"), min=s.get("min"),
                        max=s.get("max"), p90=pct.get("p90"), p95=pct.get("p95"),
                        p99=pct.get("p99"))


def _summaries(m: dict, rec: Record) -> None:
    for ours, theirs, scale in (("ttft_from_send_s", "time_to_first_token_ms", MS),
                                ("tpot_s", "inter_token_latency_ms", MS),
                                ("e2e_from_send_s", "request_latency", 1.0)):
        st = _summary_stats(m, theirs, scale)
        if st is not None:
            rec.metrics[ours] = st
    if "ttft_from_send_s" in rec.metrics or "e2e_from_send_s" in rec.metrics:
        rec.notes.append("no per-request rows: TTFT/E2E run from the actual send (guidellm's "
                         "reference), not the scheduled one")
