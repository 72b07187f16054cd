"""vLLM's own benchmarks (`vllm bench serve | latency | throughput`) as records.

serve (`--save-result`, best with `--save-detailed`): one `kind: serving` record.
  vLLM's TTFT and E2E run from the *actual* send; `client_queue_time` = actual − scheduled send
  (vllm/benchmarks/serve.py), so with the detailed per-request lists we convert exactly to our
  scheduled reference (ttft + queue, latency + queue). vLLM's ITL is one gap per streamed chunk;
  it equals ours (per token) only when every chunk carried one token (len(itl) == output − 1
  for every request): then imported as `itl_s`, else kept as `itl_per_chunk_s` and flagged.
  TPOT is computed per request from the raw lists, with our definition (identical to vLLM's).
  Without the detailed lists only vLLM's summary numbers exist (mean, median, std, percentiles;
  std is numpy's population std): TTFT is then imported as `ttft_s` only when no concurrency
  cap made requests queue in the client, else as `ttft_from_send_s`, flagged.
  vLLM's own headline figures (its mean/median/std/percentiles of TTFT, TPOT, ITL, E2EL and its
  throughputs) are kept as it reported them in `tool_figures` (common.tool_figure); pooled ITL
  gaps of which too many are zero (vLLM read several chunks at once) are marked client-limited.
latency (`--output-json`): one `kind: inference` record; `batch_latency_s` from the per-iteration
  latencies (one value per repeat, as ours). Batch size and lengths are not in that file: they
  come from the sibling `*.pytorch.json` (written when SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1),
  else the record is flagged and those fields are absent.
throughput (`--output-json`): one `kind: inference` record with request and total-token
  throughput (vLLM's tokens_per_second counts prompt + output: our total_throughput_tok_s).

The engine and the hardware are not in these files: `backend.name` is "openai-server" (serve,
as `llmbench serve URL` names an unknown server) or "unknown", `hardware.name` "unknown", unless
the caller names them (`--backend`, `--hardware`, `--engine-version`).
Load shape: rate inf with --max-concurrency C is a closed loop of C (a request is due when a
slot frees, as in llmbench's closed loop); a finite rate is an open loop (queue time added).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, from_samples, from_summary,
                                       line_of, load_json, mark_bunching, num, numbers, one,
                                       run_id_for, source, tool_figure)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "vllm-bench"
MS = 1e-3
LAT_KEY = '"latencies"'
FROM_SEND = ("from the actual send; llmbench's {ours} runs from the scheduled send: the "
             "difference is vLLM's client queue time (its dispatch delay; 0 in a closed loop)")
# (ours, vLLM's summary stem, label)
FIGURES = (("ttft_s", "ttft", "vLLM TTFT: " + FROM_SEND.format(ours="ttft_s")),
           ("tpot_s", "tpot", "vLLM TPOT: (latency − TTFT) / (output − 1) per request, as ours"),
           ("itl_s", "itl", "vLLM ITL: one gap per streamed chunk, pooled; llmbench's itl_s counts "
            "a chunk of k tokens as k gaps"),
           ("e2e_s", "e2el", "vLLM E2EL: " + FROM_SEND.format(ours="e2e_s")))


def sniff(doc: Any) -> str | None:
    """'serve' | 'latency' | 'throughput' when `doc` is one of vLLM's result files."""
    if not isinstance(doc, dict):
        return None
    if "request_throughput" in doc and ("mean_e2el_ms" in doc or "mean_ttft_ms" in doc
                                        or "endpoint_type" in doc):
        return "serve"
    if "avg_latency" in doc and "latencies" in doc:
        return "latency"
    if "elapsed_time" in doc and "requests_per_second" in doc and "tokens_per_second" in doc:
        return "throughput"
    return None


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    doc, text = load_json(path)
    what = sniff(doc)
    if what is None:
        raise Unreadable(f"{path}: not a vllm bench serve/latency/throughput result")
    res = ImportResult(TOOL)
    rec = {"serve": _serve, "latency": _latency, "throughput": _throughput}[what](doc, path, text, res)
    rec.backend.name = backend or rec.backend.name
    rec.hardware.name = hardware or rec.hardware.name
    rec.backend.version = version
    rec.source = source(TOOL, version, path, 1, benchmark=what)  # type: ignore[attr-defined]
    if not rec.metrics:
        res.problems.append(f"{path}:1: no metric could be read")
        return res
    res.records.append(rec)
    return res


def _base(kind: str, doc: dict, text: str, res: ImportResult) -> Record:
    model = doc.get("model_id")
    if not isinstance(model, str) or not model:
        res.problems.append("model_id: missing")
        model = "unknown"
    return Record(run_id=run_id_for(TOOL, text), kind=kind, point_key=None,
                  backend=BackendInfo(name="unknown", options={}), model=ModelInfo(name=model),
                  hardware=HardwareInfo(name="unknown"), workload={})


def _put(rec: Record, name: str, stats) -> None:
    if stats is not None:
        rec.metrics[name] = stats


def _serve(doc: dict, path: Path, text: str, res: ImportResult) -> Record:
    rec = _base("serving", doc, text, res)
    rec.backend.name = "openai-server"   # the client cannot see the engine (as `llmbench serve URL`)
    rate = num(doc.get("request_rate"))
    cap = num(doc.get("max_concurrency"))
    rec.backend.options = {"endpoint_type": doc.get("endpoint_type") or doc.get("backend")}
    completed = num(doc.get("completed"))
    failed = num(doc.get("failed"))
    # rate inf + a concurrency cap is a closed loop: a request is due when a slot frees, so
    # its time waiting for the slot is not client lag (llmbench's closed loop, same reference)
    closed = rate is None and cap is not None
    rec.workload = {
        "load": "closed" if closed else "open", "request_rate": rate,
        "request_rate_label": "closed" if closed else (f"{rate:g}" if rate is not None else "inf"),
        "concurrency": int(cap) if closed else None,
        "max_concurrency": int(cap) if cap is not None and not closed else None,
        "burstiness": None if closed else num(doc.get("burstiness")),
        "num_prompts": doc.get("num_prompts"),
        "tokenizer": doc.get("tokenizer_id"), "batch_size": None,
    }
    ins, outs = numbers(doc.get("input_lens")), numbers(doc.get("output_lens"))
    if ins:
        rec.workload["input_len"] = round(sum(ins) / len(ins))
    elif completed and num(doc.get("total_input_tokens")) is not None:
        rec.workload["input_len"] = round(num(doc["total_input_tokens"]) / completed)
    errs = doc.get("errors") if isinstance(doc.get("errors"), list) else []
    outs_ok = [o for i, o in enumerate(outs or []) if not (i < len(errs) and errs[i])]
    if outs_ok:  # what the successful requests got (the asked length is not in the file)
        rec.workload["output_len"] = round(sum(outs_ok) / len(outs_ok))
    elif completed and num(doc.get("total_output_tokens")) is not None:
        rec.workload["output_len"] = round(num(doc["total_output_tokens"]) / completed)
    if failed:
        rec.notes.append(f"{int(failed)} requests failed in vLLM's run")
    _put(rec, "requests_completed", one(completed, "req"))
    _put(rec, "requests_failed", one(failed, "req"))
    for name, key, unit in (("request_throughput_req_s", "request_throughput", "req/s"),
                            ("output_throughput_tok_s", "output_throughput", "tok/s"),
                            ("total_throughput_tok_s", "total_token_throughput", "tok/s"),
                            ("goodput_req_s", "request_goodput", "req/s")):
        _put(rec, name, one(num(doc.get(key)), unit))
    if not _serve_detailed(doc, rec, res, outs, closed):
        _serve_summary(doc, rec, None if closed else cap)
    for ours, theirs, label in FIGURES:
        tool_figure(rec, ours, _summary_stats(doc, theirs), label)
    for ours, theirs, unit in (("output_throughput_tok_s", "output_throughput", "tok/s"),
                               ("request_throughput_req_s", "request_throughput", "req/s")):
        tool_figure(rec, ours, one(num(doc.get(theirs)), unit), f"vLLM {theirs}")
    return rec


def _summary_stats(doc: dict, theirs: str):
    """vLLM's summary of one metric (its std is numpy's population std), in seconds."""
    n = int(num(doc.get("completed")) or 1)
    return from_summary("s", MS, n=n, mean=doc.get(f"mean_{theirs}_ms"),
                        median=doc.get(f"median_{theirs}_ms"), std=doc.get(f"std_{theirs}_ms"),
                        p90=doc.get(f"p90_{theirs}_ms"), p95=doc.get(f"p95_{theirs}_ms"),
                        p99=doc.get(f"p99_{theirs}_ms"))


def _serve_detailed(doc: dict, rec: Record, res: ImportResult, outs: list[float] | None,
                    closed: bool) -> bool:
    """Per-request metrics from the --save-detailed lists; False when they are absent."""
    ttfts, lat = doc.get("ttfts"), doc.get("latencies")
    itls, errs = doc.get("itls"), doc.get("errors")
    if not isinstance(ttfts, list) or not isinstance(lat, list) or outs is None:
        return False
    n = len(ttfts)
    if not (len(lat) == len(outs) == n):
        res.problems.append(f"per-request lists differ in length (ttfts {n}, latencies {len(lat)}, "
                            f"output_lens {len(outs)}): summary numbers used")
        return False
    queue = doc.get("queue_times")
    queue = queue if isinstance(queue, list) and len(queue) == n else None
    ok = [i for i in range(n) if not (isinstance(errs, list) and i < len(errs) and errs[i])
          and num(ttfts[i]) is not None and num(lat[i]) is not None and num(ttfts[i]) > 0]
    q = [(num(queue[i]) or 0.0) if queue and not closed else 0.0 for i in range(n)]
    if not queue and not closed and num(doc.get("max_concurrency")) is not None:
        rec.notes.append("queue_times missing: ttft_s/e2e_s run from the actual send, not the "
                         "scheduled one")
    _put(rec, "ttft_s", from_samples([ttfts[i] + q[i] for i in ok], "s"))
    _put(rec, "e2e_s", from_samples([lat[i] + q[i] for i in ok], "s"))
    _put(rec, "tpot_s", from_samples([(lat[i] - ttfts[i]) / (outs[i] - 1) for i in ok if outs[i] > 1], "s"))
    gaps: list[float] = []
    per_token = isinstance(itls, list) and len(itls) == n
    for i in ok if per_token else []:
        g = numbers(itls[i])
        if g is None:
            per_token = False
            break
        per_token = per_token and len(g) == outs[i] - 1
        gaps.extend(g)
    if gaps:
        if per_token:
            _put(rec, "itl_s", from_samples(gaps, "s"))
            mark_bunching(rec, "itl_s", gaps, TOOL)
        else:
            _put(rec, "itl_per_chunk_s", from_samples(gaps, "s"))
            mark_bunching(rec, "itl_per_chunk_s", gaps, TOOL)
            rec.notes.append("itl: vLLM's gaps are per streamed chunk and some chunks carried "
                             "several tokens; token counts per chunk are not in the file, so "
                             "itl_s (per token) cannot be derived: kept as itl_per_chunk_s")
    return True


def _serve_summary(doc: dict, rec: Record, cap: float | None) -> None:
    for ours, theirs in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("itl_per_chunk_s", "itl"),
                         ("e2e_s", "e2el")):
        st = _summary_stats(doc, theirs)
        if st is None:
            continue
        if ours in ("ttft_s", "e2e_s") and cap is not None:
            ours = ours.replace("_s", "_from_send_s")
            rec.notes.append(f"{ours}: vLLM measures from the actual send and the file has no "
                             "per-request queue times to convert to the scheduled send")
        _put(rec, ours, st)
    if "itl_per_chunk_s" in rec.metrics:
        rec.notes.append("itl: vLLM's summary is per streamed chunk; without --save-detailed "
                         "it cannot be checked against per-token gaps: kept as itl_per_chunk_s")


def _pytorch_args(path: Path) -> dict:
    """The run's arguments from the sibling *.pytorch.json, when vLLM wrote one."""
    side = path.with_name(path.stem + ".pytorch.json")
    try:
        docs = json.loads(side.read_text())
        args = docs[0]["benchmark"]["extra_info"]["args"]
        return args if isinstance(args, dict) else {}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}


def _offline_workload(rec: Record, path: Path, keys: tuple[str, ...]) -> dict:
    args = _pytorch_args(path)
    for k in keys:
        v = num(args.get(k))
        if v is None:  # `--dataset-name random` takes --random-input-len/--random-output-len
            v = num(args.get(f"random_{k}"))
        if v is not None:
            rec.workload[k] = int(v)
    if not args:
        rec.notes.append("batch size and lengths are not in vLLM's JSON and no sibling "
                         ".pytorch.json was found (run with SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1)")
    return args


def _latency(doc: dict, path: Path, text: str, res: ImportResult) -> Record:
    rec = _base("inference", doc, text, res)
    args = _offline_workload(rec, path, ("batch_size", "input_len", "output_len"))
    if "batch_size" in rec.workload:
        rec.workload["concurrency"] = rec.workload["batch_size"]
    lat = numbers(doc.get("latencies"))
    if lat is None:
        res.problems.append(f"{path}:{line_of(text, LAT_KEY)}: latencies unreadable")
        return rec
    rec.workload["repeats"] = len(lat)
    _put(rec, "batch_latency_s", from_samples(lat, "s"))
    b, i, o = (rec.workload.get(k) for k in ("batch_size", "input_len", "output_len"))
    if b and o:
        _put(rec, "output_throughput_tok_s", from_samples([b * o / x for x in lat if x > 0], "tok/s"))
    if b and o and i:
        _put(rec, "total_throughput_tok_s", from_samples([b * (i + o) / x for x in lat if x > 0], "tok/s"))
    if args and not args.get("ignore_eos", True):
        rec.notes.append("output length not forced")
    rec.workload["force_output"] = True   # vllm bench latency sets ignore_eos=True itself
    return rec


def _throughput(doc: dict, path: Path, text: str, res: ImportResult) -> Record:
    rec = _base("inference", doc, text, res)
    _offline_workload(rec, path, ("input_len", "output_len"))
    nreq = num(doc.get("num_requests"))
    if nreq is not None:
        rec.workload["num_prompts"] = int(nreq)
    rec.workload["batch_size"] = None  # vLLM schedules the whole request list itself
    _put(rec, "request_throughput_req_s", one(num(doc.get("requests_per_second")), "req/s"))
    _put(rec, "total_throughput_tok_s", one(num(doc.get("tokens_per_second")), "tok/s"))
    # no output throughput: the file does not say how many tokens were generated
    return rec
