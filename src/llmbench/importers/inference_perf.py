"""inference-perf (kubernetes-sigs) reports as records: `per_request_lifecycle_metrics.json`
(exact conversion) or `summary_lifecycle_metrics.json` / `stage_N_lifecycle_metrics.json`
(summaries, flagged). Load shape and tokenizer come from the `config.yaml` it writes beside.

Per request, inference-perf keeps the send time (`start_time`) and one timestamp per output
token (`info.response_metrics.output_token_times`; a chunk of k tokens repeats its time k
times). So: ttft_s = first token − start, e2e_s = last token − start, tpot_s = (last − first) /
(tokens − 1), itl_s = every gap, a gap before a k-token chunk split into k equal gaps (ours,
exactly). The reference is the actual send: the same as ours for the `concurrent` load type (a
closed loop: a request is due when a slot frees); for `constant`/`poisson` the per-request
schedule delay is not in the file, so TTFT/E2E become `ttft_from_send_s`/`e2e_from_send_s`,
flagged. Summaries: inference-perf's `request_latency` runs to the end of the response (not
the last token): kept as `request_latency_s`, flagged; TTFT as above; throughputs n = 1.
inference-perf's own summary figures (the summary file itself, or the one beside a per-request
report) are kept as it reported them in `tool_figures` (common.tool_figure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, from_samples, from_summary,
                                       load_json, mark_bunching, num, numbers, one, run_id_for,
                                       source, tool_figure)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "inference-perf"
FIGURES = (  # (ours, inference-perf's summary latency, label)
    ("ttft_s", "time_to_first_token", "inference-perf time_to_first_token: from the actual send; "
     "llmbench's ttft_s runs from the scheduled send (the same in a closed loop; in an open loop "
     "the difference is inference-perf's dispatch delay)"),
    ("e2e_s", "request_latency", "inference-perf request_latency: send to the end of the "
     "response; llmbench's e2e_s ends at the last token"),
    ("tpot_s", "time_per_output_token", "inference-perf time_per_output_token"),
    ("itl_s", "inter_token_latency", "inference-perf inter_token_latency"),
)
# the report directory (config.yaml beside is read too)
OUTPUT_FILES = ("per_request_lifecycle_metrics.json", "summary_lifecycle_metrics.json")


def sniff(doc: Any) -> bool:
    if isinstance(doc, list):
        return bool(doc) and isinstance(doc[0], dict) and {"start_time", "end_time", "info"} <= set(doc[0])
    return isinstance(doc, dict) and "load_summary" in doc and "successes" in doc


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    doc, text = load_json(path)
    if not sniff(doc):
        raise Unreadable(f"{path}: not an inference-perf lifecycle report")
    res = ImportResult(TOOL)
    rec = Record(run_id=run_id_for(TOOL, text), kind="serving",
                 backend=BackendInfo(name=backend or "openai-server", version=version),
                 model=ModelInfo(name="unknown"), hardware=HardwareInfo(name=hardware or "unknown"),
                 workload={"batch_size": None})
    closed = _config(path, rec)
    rec.source = source(TOOL, None, path, 1, report=path.stem)  # type: ignore[attr-defined]
    if isinstance(doc, list):
        _per_request(doc, rec, closed, path, res)
        try:  # the tool's own printout, when the summary lies beside
            summary = json.loads(path.with_name("summary_lifecycle_metrics.json").read_text())
        except (OSError, ValueError):
            summary = None
    else:
        _summary(doc, rec, closed)
        summary = doc
    if isinstance(summary, dict):
        _tool_figures(summary, rec)
    if not any(k.endswith("_s") for k in rec.metrics):
        res.problems.append(f"{path}:1: no timing metric could be read")
        return res
    res.records.append(rec)
    return res


def _config(path: Path, rec: Record) -> bool:
    """Load shape, model and tokenizer from config.yaml beside; True for a closed loop."""
    import yaml

    try:
        cfg = yaml.safe_load(path.with_name("config.yaml").read_text())
    except (OSError, yaml.YAMLError):
        rec.notes.append("no config.yaml beside the report: load shape unknown")
        return False
    cfg = cfg if isinstance(cfg, dict) else {}
    load = cfg.get("load") if isinstance(cfg.get("load"), dict) else {}
    stages = [s for s in load.get("stages") or [] if isinstance(s, dict)]
    model = (cfg.get("server") or {}).get("model_name") if isinstance(cfg.get("server"), dict) else None
    if isinstance(model, str) and model:
        rec.model.name = model
    tok = (cfg.get("tokenizer") or {}).get("pretrained_model_name_or_path") \
        if isinstance(cfg.get("tokenizer"), dict) else None
    rec.workload["tokenizer"] = tok if isinstance(tok, str) else None
    if load.get("type") == "concurrent" and len(stages) == 1 and num(stages[0].get("concurrency_level")):
        rec.workload.update(load="closed", concurrency=int(stages[0]["concurrency_level"]),
                            request_rate_label="closed")
        return True
    if load.get("type") in ("constant", "poisson") and len(stages) == 1 and num(stages[0].get("rate")):
        rate = num(stages[0]["rate"])
        rec.workload.update(load="open", request_rate=rate, request_rate_label=f"{rate:g}",
                            burstiness=1.0 if load["type"] == "poisson" else None)
    return False


def _gaps(times: list[float]) -> list[float]:
    """Per-token gaps; a k-token chunk (k equal timestamps) splits the gap before it evenly."""
    out: list[float] = []
    i = 1
    while i < len(times):
        j = i
        while j + 1 < len(times) and times[j + 1] == times[i]:
            j += 1
        k = j - i + 1
        out.extend([(times[i] - times[i - 1]) / k] * k)
        i = j + 1
    return out


def _per_request(rows: list, rec: Record, closed: bool, path: Path, res: ImportResult) -> None:
    ttft, e2e, tpot, itl, ins, outs, failed, bad = [], [], [], [], [], [], 0, 0
    raw: list[float] = []  # arrival gaps as stamped: 0 within a chunk read at once
    t0 = t1 = None
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            bad += 1
            continue
        if r.get("error"):
            failed += 1
            continue
        info = r.get("info") if isinstance(r.get("info"), dict) else {}
        rm = info.get("response_metrics") if isinstance(info.get("response_metrics"), dict) else {}
        start, end = num(r.get("start_time")), num(r.get("end_time"))
        times = numbers(rm.get("output_token_times"))
        if start is None or not times or times != sorted(times) or times[0] < start:
            bad += 1
            continue
        ttft.append(times[0] - start)
        e2e.append(times[-1] - start)
        if len(times) > 1:
            tpot.append((times[-1] - times[0]) / (len(times) - 1))
            itl.extend(_gaps(times))
            raw.extend(b - a for a, b in zip(times, times[1:]))
        outs.append(len(times))
        if (n_in := num(info.get("input_tokens"))) is not None:
            ins.append(n_in)
        if rec.model.name == "unknown":
            rec.model.name = _model_of(r.get("request")) or "unknown"
        t0 = start if t0 is None else min(t0, start)
        t1 = end if t1 is None or (end is not None and end > t1) else t1
    if bad:
        res.problems.append(f"{path}: {bad} of {len(rows)} request rows without a readable start "
                            "and ordered token times: left out")
    suffix = "_s" if closed else "_from_send_s"
    if not closed:
        rec.notes.append("open loop: per-request schedule delays are not in the file, TTFT/E2E "
                         "run from the actual send (ttft_from_send_s, e2e_from_send_s)")
    for name, xs in ((f"ttft{suffix}", ttft), (f"e2e{suffix}", e2e), ("tpot_s", tpot), ("itl_s", itl)):
        if (st := from_samples(xs, "s")) is not None:
            rec.metrics[name] = st
    # k tokens stamped at one instant: split evenly above (k gaps), but whether the server sent
    # them together or the client read them together the file cannot tell: too many is flagged
    mark_bunching(rec, "itl_s", raw, TOOL)
    if ins:
        rec.workload["input_len"] = round(sum(ins) / len(ins))
    if outs:
        rec.workload["output_len"] = round(sum(outs) / len(outs))
        rec.metrics["requests_completed"] = one(float(len(outs)), "req")
    rec.metrics["requests_failed"] = one(float(failed), "req")
    if outs and t0 is not None and t1 is not None and t1 > t0:
        rec.metrics["output_throughput_tok_s"] = one(sum(outs) / (t1 - t0), "tok/s")
        rec.metrics["request_throughput_req_s"] = one(len(outs) / (t1 - t0), "req/s")


def _model_of(request: Any) -> str | None:
    try:
        m = json.loads(request).get("model") if isinstance(request, str) else None
    except (ValueError, AttributeError):
        return None
    return m if isinstance(m, str) and m else None


def _stats(s: Any, n: int, unit: str = "s"):
    if not isinstance(s, dict):
        return None
    return from_summary(unit, 1.0, n=n, mean=s.get("mean"), median=s.get("median"),
                        min=s.get("min"), max=s.get("max"), p90=s.get("p90"),
                        p95=s.get("p95"), p99=s.get("p99"))


def _tool_figures(doc: dict, rec: Record) -> None:
    ok = doc.get("successes") if isinstance(doc.get("successes"), dict) else {}
    lat = ok.get("latency") if isinstance(ok.get("latency"), dict) else {}
    n = num(ok.get("count"))
    for ours, theirs, label in FIGURES:
        tool_figure(rec, ours, _stats(lat.get(theirs), int(n) if n else 1), label)
    tp = ok.get("throughput") if isinstance(ok.get("throughput"), dict) else {}
    for ours, theirs, unit in (("output_throughput_tok_s", "output_tokens_per_sec", "tok/s"),
                               ("request_throughput_req_s", "requests_per_sec", "req/s")):
        tool_figure(rec, ours, one(num(tp.get(theirs)), unit), f"inference-perf {theirs}")


def _summary(doc: dict, rec: Record, closed: bool) -> None:
    ok = doc.get("successes") if isinstance(doc.get("successes"), dict) else {}
    lat = ok.get("latency") if isinstance(ok.get("latency"), dict) else {}
    n = num(ok.get("count"))
    nn = int(n) if n else 1
    ttft = _stats(lat.get("time_to_first_token"), nn)
    if ttft is not None:
        rec.metrics["ttft_s" if closed else "ttft_from_send_s"] = ttft
    rl = _stats(lat.get("request_latency"), nn)
    if rl is not None:
        rec.metrics["request_latency_s"] = rl
        rec.notes.append("request_latency_s: inference-perf's, send to the end of the response "
                         "(not to the last token): not our e2e_s")
    for key, ours in (("prompt_tokens", "input_len"), ("output_tokens", "output_len")):
        v = num((ok.get(key) or {}).get("mean")) if isinstance(ok.get(key), dict) else None
        if v is not None:
            rec.workload[ours] = round(v)
    tp = ok.get("throughput") if isinstance(ok.get("throughput"), dict) else {}
    for ours, theirs, unit in (("output_throughput_tok_s", "output_tokens_per_sec", "tok/s"),
                               ("total_throughput_tok_s", "total_tokens_per_sec", "tok/s"),
                               ("request_throughput_req_s", "requests_per_sec", "req/s")):
        if (st := one(num(tp.get(theirs)), unit)) is not None:
            rec.metrics[ours] = st
    if n is not None:
        rec.metrics["requests_completed"] = one(n, "req")
    fails = num((doc.get("failures") or {}).get("count")) if isinstance(doc.get("failures"), dict) else None
    if fails is not None:
        rec.metrics["requests_failed"] = one(fails, "req")
