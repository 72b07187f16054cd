"""optimum-benchmark's `benchmark.json` (config + report) as one `kind: inference` record, for
the text-generation inference scenario.

optimum-benchmark (0.6, scenarios/inference, trackers/latency.py) times generate() on one batch
per iteration, with a logits processor marking every token step:
- `prefill.latency.values`: batch start to the first token, one per iteration: our offline
  `ttft_s`;
- `generate.latency.values`: batch start to the last token: our `batch_latency_s`; with the
  batch size and `max_new_tokens` (forced only when `min_new_tokens` equals it) our
  `output_throughput_tok_s` = batch × new tokens / latency and `total_throughput_tok_s`;
- `decode.latency.values`: first to last token: our `tpot_s` = decode / (new tokens − 1);
- `per_token.latency.values`: every token step, one token per sequence each: our `itl_s`
  when there are new tokens − 1 of them per iteration (else kept as `per_token_step_s`, flagged).
optimum's decode throughput (tokens after the first / decode time) and its CPU RAM figures are
not our metrics and are not imported. Without forced output length (min_new_tokens unset) the
token counts are only upper bounds: throughputs and TPOT are left out and the record flagged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmbench.importers.common import (ImportResult, Unreadable, dig, from_samples, load_json,
                                       num, numbers, run_id_for, source)
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

TOOL = "optimum-benchmark"
OUTPUT_FILES = ("benchmark.json",)
BACKENDS = {"pytorch": "transformers", "onnxruntime": "onnxruntime", "openvino": "openvino",
            "vllm": "vllm", "llama_cpp": "llamacpp", "tensorrt-llm": "tensorrt-llm"}


def sniff(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("config"), dict) and \
        isinstance(doc.get("report"), dict) and "scenario" in doc["config"] and "backend" in doc["config"]


def parse(path: Path, backend: str | None = None, hardware: str | None = None,
          version: str | None = None) -> ImportResult:
    doc, text = load_json(path)
    if not sniff(doc):
        raise Unreadable(f"{path}: not an optimum-benchmark benchmark.json")
    res = ImportResult(TOOL)
    cfg, rep = doc["config"], doc["report"]
    b = cfg.get("backend") if isinstance(cfg.get("backend"), dict) else {}
    sc = cfg.get("scenario") if isinstance(cfg.get("scenario"), dict) else {}
    env = cfg.get("environment") if isinstance(cfg.get("environment"), dict) else {}
    bname = b.get("name") if isinstance(b.get("name"), str) else None
    model = b.get("model") if isinstance(b.get("model"), str) else None
    rec = Record(run_id=run_id_for(TOOL, text), kind="inference",
                 backend=BackendInfo(name=backend or BACKENDS.get(bname or "", bname or "unknown"),
                                     version=version or _engine_version(bname, env),
                                     options={k: b.get(k) for k in ("torch_dtype", "device", "no_weights")
                                              if k in b}),
                 model=ModelInfo(name=model or "unknown", synthetic_weights=b.get("no_weights") is True),
                 hardware=HardwareInfo(name=hardware or _hardware(b, env)))
    rec.source = source(TOOL, env.get("optimum_benchmark_version"), path, 1,  # type: ignore[attr-defined]
                        name=cfg.get("name"))
    bs = num(dig(sc, "input_shapes", "batch_size"))
    seq = num(dig(sc, "input_shapes", "sequence_length"))
    new = num(dig(sc, "generate_kwargs", "max_new_tokens"))
    forced = new is not None and num(dig(sc, "generate_kwargs", "min_new_tokens")) == new
    rec.workload = {"batch_size": int(bs) if bs else None, "input_len": int(seq) if seq else None,
                    "output_len": int(new) if new else None,
                    "concurrency": int(bs) if bs else None, "force_output": forced,
                    "repeats": None}
    if not forced:
        rec.notes.append("output length not forced (min_new_tokens != max_new_tokens): "
                         "throughputs and TPOT not imported")
    gen = numbers(dig(rep, "generate", "latency", "values"))
    pre = numbers(dig(rep, "prefill", "latency", "values"))
    dec = numbers(dig(rep, "decode", "latency", "values"))
    step = numbers(dig(rep, "per_token", "latency", "values"))
    _put(rec, "ttft_s", pre)
    _put(rec, "batch_latency_s", gen)
    if gen:
        rec.workload["repeats"] = len(gen)
    if forced and bs and new and gen and all(x > 0 for x in gen):
        _put(rec, "output_throughput_tok_s", [bs * new / x for x in gen], "tok/s")
        if seq:
            _put(rec, "total_throughput_tok_s", [bs * (seq + new) / x for x in gen], "tok/s")
    if forced and new and new > 1 and dec:
        _put(rec, "tpot_s", [x / (new - 1) for x in dec])
    if step:
        per_token = forced and new and gen and len(step) == len(gen) * (new - 1)
        _put(rec, "itl_s" if per_token else "per_token_step_s", step)
        if not per_token:
            rec.notes.append("per_token steps are not new tokens − 1 per iteration: kept as "
                             "per_token_step_s")
    if not rec.metrics:
        res.problems.append(f"{path}:1: no latency values in the report")
        return res
    res.records.append(rec)
    return res


def _put(rec: Record, name: str, xs: list[float] | None, unit: str = "s") -> None:
    if xs and (st := from_samples(xs, unit)) is not None:
        rec.metrics[name] = st


def _engine_version(bname: str | None, env: dict) -> str | None:
    key = {"pytorch": "transformers_version", "onnxruntime": "onnxruntime_version",
           "openvino": "openvino_version", "vllm": "vllm_version"}.get(bname or "")
    v = env.get(key) if key else None
    return v if isinstance(v, str) else None


def _hardware(b: dict, env: dict) -> str:
    if b.get("device") == "cpu" and isinstance(env.get("cpu"), str):
        return env["cpu"].strip()
    gpus = env.get("gpu")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], str):
        return gpus[0]
    return "unknown"
