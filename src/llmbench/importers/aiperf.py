"""NVIDIA AIPerf's profile exports as records: the per-request `profile_export.jsonl` (exact
conversion) or the aggregate `profile_export_aiperf.json` (summaries, flagged).

Per request (aiperf/metrics/types, checked on a real export):
- AIPerf's `time_to_first_token` runs from the actual request start (`request_start_ns`); the
  request was due when its credit was issued (`credit_issued_ns`, the closed loop's free slot or
  the open loop's scheduled time). ttft_s = (request_start − credit_issued) + TTFT.
- `inter_chunk_latency` lists the gaps between content chunks, so t_last − t_first = their sum;
  e2e_s = ttft_s + that sum (AIPerf's `request_latency` ends at the last content response too).
- Token counts are AIPerf's `output_sequence_length` (its tokenizer's re-count of the text
  unless `--use-server-token-count`). tpot_s = sum(gaps) / (tokens − 1), as ours. itl_s pools
  the gaps when every request had one token per chunk (chunks == tokens), else the gaps are kept
  as `itl_per_chunk_s` and the record is flagged: the split of tokens over chunks is unknown.
- Requests with an `error`, or not in the profiling phase (warm-up), are left out and counted.
- Bunching: when AIPerf falls behind the stream, several chunks wait in one read and their gaps
  are 0; from 5% zero gaps on, the pooled ITL is marked client-limited (common.mark_bunching).
AIPerf's own headline figures (`tool_figures`, common.tool_figure) come from the aggregate
export when it lies beside (its printout), else from the per-request values it wrote: its TTFT
and request latency run from the actual start, its ITL ("inter_token_latency") is per request
(request_latency − TTFT) / (tokens − 1), i.e. llmbench's TPOT, never a gap between tokens.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, dig, from_samples, from_summary,
                                       load_json, mark_bunching, num, one, run_id_for, source,
                                       tool_figure)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "aiperf"
# the artifact directory: the per-request export (the aggregate beside it is read too)
OUTPUT_FILES = ("profile_export.jsonl", "profile_export_aiperf.json")
MS = 1e-3
FROM_START = ("from the actual request start; llmbench's {ours} runs from when the request was "
              "due (credit issued): the difference is AIPerf's dispatch delay")
# (ours, AIPerf's aggregate field, unit in the record, scale from AIPerf's unit, label)
FIGURES = (
    ("ttft_s", "time_to_first_token", "s", MS, "AIPerf time_to_first_token: " + FROM_START.format(ours="ttft_s")),
    ("e2e_s", "request_latency", "s", MS, "AIPerf request_latency (to the last response): "
     + FROM_START.format(ours="e2e_s")),
    ("itl_s", "inter_token_latency", "s", MS, "AIPerf inter_token_latency: per request (latency − "
     "TTFT) / (tokens − 1), i.e. llmbench's tpot_s; llmbench's itl_s pools every gap between tokens"),
    ("output_throughput_tok_s", "output_token_throughput", "tok/s", 1.0, "AIPerf output_token_throughput"),
    ("request_throughput_req_s", "request_throughput", "req/s", 1.0, "AIPerf request_throughput"),
)


def _value(metrics: dict, name: str) -> Any:
    m = metrics.get(name)
    return m.get("value") if isinstance(m, dict) else None


def sniff(doc: Any) -> bool:
    return isinstance(doc, dict) and (
        (isinstance(doc.get("metadata"), dict) and isinstance(doc.get("metrics"), dict)
         and "request_start_ns" in doc["metadata"])                      # one JSONL row
        or ("input_config" in doc and any(isinstance(v, dict) and "avg" in v
                                          for v in doc.values())))       # aggregate


def sniff_path(path: Path) -> bool:
    """The aggregate JSON document, or JSONL whose first line is one request row."""
    if _is_json(path):
        return sniff(load_json(path)[0])
    with open(path, errors="replace") as f:
        first = f.readline()
    try:
        return sniff(json.loads(first))
    except ValueError:
        return False


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    if path.suffix == ".jsonl" or not _is_json(path):
        res, rec = _per_request(path)
    else:
        res, rec = _aggregate(path)
    if rec is not None:
        rec.backend.name = backend or rec.backend.name
        rec.hardware.name = hardware or rec.hardware.name
        rec.backend.version = version
        res.records.append(rec)
    return res


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(errors="replace"))
        return True
    except ValueError:
        return False


def _record(text_id: str, model: str | None) -> Record:
    return Record(run_id=run_id_for(TOOL, text_id), kind="serving",
                  backend=BackendInfo(name="openai-server"),
                  model=ModelInfo(name=model or "unknown"), hardware=HardwareInfo(name="unknown"),
                  workload={"batch_size": None})


# One request row reduced to what the conversion needs:
# (phase, failed, credit_issued_ns, request_start_ns, request_end_ns, ttft_ms, output tokens,
#  input tokens, chunk gaps ms)
Row = tuple


def _row_tolerant(line: str) -> Row | str:
    """Any JSON: every field checked one by one; a string says what could not be read."""
    try:
        row = json.loads(line)
    except ValueError:
        return "not JSON"
    md = row.get("metadata") if isinstance(row, dict) else None
    mt = row.get("metrics") if isinstance(row, dict) else None
    if not isinstance(md, dict) or not isinstance(mt, dict):
        return "no metadata/metrics"
    failed = bool(row.get("error")) or md.get("was_cancelled") is True
    icl = _value(mt, "inter_chunk_latency")
    icl = [num(x) for x in icl] if isinstance(icl, list) else None
    return (md.get("benchmark_phase"), failed,
            *(num(md.get(k)) for k in ("credit_issued_ns", "request_start_ns", "request_end_ns")),
            num(_value(mt, "time_to_first_token")), num(_value(mt, "output_sequence_length")),
            num(_value(mt, "input_sequence_length")),
            None if icl is None or None in icl else icl)


def _fast_decoder():
    """msgspec decoder of only the needed fields, typed: a row it rejects (a string where a
    number belongs, NaN ...) goes to the tolerant path. None when msgspec is not installed."""
    try:
        import msgspec
    except ImportError:
        return None

    # defstruct, not class bodies: this module's `from __future__ import annotations` would
    # leave the field types as strings msgspec cannot resolve inside a function
    ds = msgspec.defstruct
    num_t = ds("Num", [("value", float)])
    gaps_t = ds("Gaps", [("value", list[float])])
    metrics_t = ds("Metrics", [(k, num_t | None, None) for k in
                               ("time_to_first_token", "output_sequence_length", "input_sequence_length")]
                   + [("inter_chunk_latency", gaps_t | None, None)])
    meta_t = ds("Meta", [("request_start_ns", int), ("credit_issued_ns", int | None, None),
                         ("request_end_ns", int | None, None), ("benchmark_phase", str | None, None),
                         ("was_cancelled", bool | None, None)])
    R = ds("Row", [("metadata", meta_t), ("metrics", metrics_t), ("error", dict | str | None, None)])

    dec = msgspec.json.Decoder(R)

    def decode(line: str) -> Row | None:
        try:
            r = dec.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        md, mt = r.metadata, r.metrics
        vals = [getattr(mt, k).value if getattr(mt, k) is not None else None
                for k in ("time_to_first_token", "output_sequence_length", "input_sequence_length")]
        if any(v is not None and not math.isfinite(v) for v in vals):
            return None
        return (md.benchmark_phase, bool(r.error) or md.was_cancelled is True,
                md.credit_issued_ns, md.request_start_ns, md.request_end_ns, *vals,
                mt.inter_chunk_latency.value if mt.inter_chunk_latency is not None else None)

    return decode


def _per_request(path: Path) -> tuple[ImportResult, Record | None]:
    res = ImportResult(TOOL)
    text = path.read_text(errors="replace")
    ttft, e2e, tpot, gaps, ins, outs, own_ttft = [], [], [], [], [], [], []
    chunked = errors = skipped = 0
    t0 = t1 = None
    fast = _fast_decoder()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        row = (fast(line) if fast else None) or _row_tolerant(line)
        if isinstance(row, str):
            res.problems.append(f"{path}:{lineno}: {row}")
            continue
        phase, failed, issued, start, end, first, out, inp, icl = row
        if phase not in (None, "profiling"):
            skipped += 1
            continue
        if failed:
            errors += 1
            continue
        if icl is None and out == 1:
            icl = []
        if start is None or first is None or out is None or icl is None or \
                not all(math.isfinite(x) for x in icl):
            res.problems.append(f"{path}:{lineno}: request start, TTFT, output length or chunk "
                                "gaps unreadable: left out")
            continue
        lag_s = (start - issued) * 1e-9 if issued is not None and issued <= start else 0.0
        span_s = sum(icl) * MS
        ttft.append(lag_s + first * MS)
        own_ttft.append(first * MS)
        e2e.append(lag_s + first * MS + span_s)
        if out > 1:
            tpot.append(span_s / (out - 1))
        chunked += len(icl) != out - 1
        gaps.append(icl)
        if inp is not None:
            ins.append(inp)
        outs.append(out)
        t0 = start if t0 is None else min(t0, start)
        if end is not None:
            t1 = end if t1 is None else max(t1, end)
    gaps = [x * MS for g in gaps for x in g]
    if not ttft:
        res.problems.append(f"{path}: no readable request row")
        return res, None
    # the aggregate export beside (the artifact directory): model, load shape, AIPerf's figures
    agg = _aggregate_doc(path.with_name("profile_export_aiperf.json"))
    rec = _record(text, _model(agg) if agg else None)
    rec.source = source(TOOL, None, path, 1, export="per-request")  # type: ignore[attr-defined]
    if ins:
        rec.workload["input_len"] = round(sum(ins) / len(ins))
    rec.workload["output_len"] = round(sum(outs) / len(outs))
    for name, xs in (("ttft_s", ttft), ("e2e_s", e2e), ("tpot_s", tpot)):
        if (st := from_samples(xs, "s")) is not None:
            rec.metrics[name] = st
    itl_name = "itl_per_chunk_s" if chunked else "itl_s"
    if (st := from_samples(gaps, "s")) is not None:
        rec.metrics[itl_name] = st
        mark_bunching(rec, itl_name, gaps, TOOL)
    if chunked:
        rec.notes.append(f"itl: {chunked} of {len(ttft)} requests had chunks != tokens − 1 "
                         "(AIPerf's token counts): gaps kept per chunk as itl_per_chunk_s")
    rec.metrics["requests_completed"] = one(float(len(ttft)), "req")
    rec.metrics["requests_failed"] = one(float(errors), "req")
    if t0 is not None and t1 is not None and t1 > t0:
        wall_s = (t1 - t0) * 1e-9
        rec.metrics["output_throughput_tok_s"] = one(sum(outs) / wall_s, "tok/s")
        rec.metrics["request_throughput_req_s"] = one(len(ttft) / wall_s, "req/s")
        if len(ins) == len(outs):
            rec.metrics["total_throughput_tok_s"] = one((sum(ins) + sum(outs)) / wall_s, "tok/s")
    if skipped:
        rec.notes.append(f"{skipped} warm-up requests left out")
    if agg:
        _load_shape(agg, rec)
        _tool_figures(agg, rec)
    else:  # no printout beside: AIPerf's own per-request TTFT is what it reported
        tool_figure(rec, "ttft_s", from_samples(own_ttft, "s"),
                    FIGURES[0][4] + " (from its per-request values)")
    return res, rec


def _tool_figures(doc: dict, rec: Record) -> None:
    """AIPerf's headline figures from its aggregate export, as it printed them."""
    for ours, theirs, unit, scale, label in FIGURES:
        s = doc.get(theirs)
        if not isinstance(s, dict):
            continue
        n, avg = num(s.get("count")), num(s.get("avg"))
        if "p50" not in s:  # a whole-run figure (throughputs): one value
            tool_figure(rec, ours, one(avg * scale if avg is not None else None, unit), label)
            continue
        tool_figure(rec, ours, from_summary(unit, scale, n=int(n) if n else 1, mean=avg,
                                            median=s.get("p50"), std=s.get("std"),
                                            min=s.get("min"), max=s.get("max"), p90=s.get("p90"),
                                            p95=s.get("p95"), p99=s.get("p99")), label)


def _aggregate_doc(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def _model(doc: dict) -> str | None:
    name = dig(doc, "input_config", "models", "items", 0, "name")
    return name if isinstance(name, str) and name else None


def _load_shape(doc: dict, rec: Record) -> None:
    """Load shape of the (single) profiling phase, and the tokenizer, from input_config."""
    phases = [p for p in (dig(doc, "input_config", "phases") or []) if isinstance(p, dict)
              and p.get("kind", "profiling") == "profiling"]
    if len(phases) == 1:
        ph = phases[0]
        conc, rate = num(ph.get("concurrency")), num(ph.get("request_rate") or ph.get("rate"))
        if rate is not None:
            rec.workload.update(load="open", request_rate=rate, request_rate_label=f"{rate:g}",
                                max_concurrency=int(conc) if conc else None)
        elif conc is not None:
            rec.workload.update(load="closed", concurrency=int(conc), request_rate_label="closed")
    tok = dig(doc, "input_config", "tokenizer", "name")
    if isinstance(tok, str):
        rec.workload["tokenizer"] = tok
    ver = doc.get("aiperf_version")
    if isinstance(ver, str) and isinstance(getattr(rec, "source", None), dict):
        rec.source["version"] = ver  # type: ignore[attr-defined]


def _aggregate(path: Path) -> tuple[ImportResult, Record | None]:
    res = ImportResult(TOOL)
    doc, text = load_json(path)
    if not sniff(doc) or "input_config" not in doc:
        raise Unreadable(f"{path}: not an AIPerf profile export")
    rec = _record(text, _model(doc))
    rec.source = source(TOOL, None, path, 1, export="aggregate")  # type: ignore[attr-defined]
    _load_shape(doc, rec)
    for ours, theirs in (("input_len", "input_sequence_length"), ("output_len", "output_sequence_length")):
        v = num((doc.get(theirs) or {}).get("avg")) if isinstance(doc.get(theirs), dict) else None
        if v is not None:
            rec.workload[ours] = round(v)
    n = num((doc.get("request_count") or {}).get("avg")) if isinstance(doc.get("request_count"), dict) else None
    # summaries only: the reference is the actual send, the end the last response: flagged names
    for ours, theirs in (("ttft_from_send_s", "time_to_first_token"),
                         ("e2e_from_send_s", "request_latency"),
                         ("tpot_s", "inter_token_latency")):
        s = doc.get(theirs)
        if not isinstance(s, dict) or s.get("unit") != "ms":
            continue
        st = from_summary("s", MS, n=int(n) if n else 1, mean=s.get("avg"), median=s.get("p50"),
                          std=s.get("std"), min=s.get("min"), max=s.get("max"),
                          p90=s.get("p90"), p95=s.get("p95"), p99=s.get("p99"))
        if st is not None:
            rec.metrics[ours] = st
    for ours, theirs, unit in (("output_throughput_tok_s", "output_token_throughput", "tok/s"),
                               ("request_throughput_req_s", "request_throughput", "req/s")):
        s = doc.get(theirs)
        if isinstance(s, dict):
            st = one(num(s.get("avg")), unit)
            if st is not None:
                rec.metrics[ours] = st
    if not rec.metrics:
        res.problems.append(f"{path}:1: no metric could be read")
        return res, None
    _tool_figures(doc, rec)
    rec.notes.append("aggregate export: TTFT/E2E from the actual send (AIPerf's reference); "
                     "import profile_export.jsonl for the scheduled reference and raw samples")
    return res, rec
