"""Small fixture stores in the Record schema, written with Store.write: imported-reference-style
records (kind='reference', the importer's field names) and own inference/serving/training
records with raw samples. Values follow simple made-up formulas (deterministic, seeded): they
test the plumbing, they are not results."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record, Roofline
from llmbench.store.store import Store

REF_HW = {"A100-SXM-80GB": 2.0e12, "H100-SXM": 3.35e12, "MI300X": 5.3e12}
REF_ENGINES = {"vllm": 0.6, "tensorrt-llm": 0.7, "llamacpp": 0.15}
REF_MODELS = {"meta-llama/Meta-Llama-3-8B": 8.0e9, "mistralai/Mistral-7B-v0.1": 7.2e9}


def _stats(v: float, unit: str, n: int = 1, rel: float = 0.0, rng=None, keep=False):
    if n == 1 or rng is None:
        return summarize([v], unit, keep_samples=keep)
    return summarize(list(v * (1 + rel * rng.standard_normal(n))), unit, keep_samples=keep)


def ref_record(hw: str, engine: str, model: str, bs: int, io: int, **workload) -> Record:
    """One published-data-like row: batch latency and total throughput, one value each."""
    bw, eff, params = REF_HW[hw], REF_ENGINES[engine], REF_MODELS[model]
    tp = workload.get("tensor_parallel", 1)
    decode_bound = bw * tp / (2 * params)  # bf16 weights streamed once per step
    bound_tok_s = bs * 2 * io / (io / (decode_bound * min(bs, 64) / bs) + 1e-3 * io)
    thr = bound_tok_s * eff * (1 - 0.02 * np.log2(bs))
    lat = bs * 2 * io / thr
    metrics = {"batch_latency_s": _stats(lat, "s"), "total_throughput_tok_s": _stats(thr, "tok/s")}
    if "power" in workload:
        metrics["avg_power_w"] = _stats(workload.pop("power"), "W")
    if "perplexity" in workload:
        metrics["perplexity"] = _stats(workload.pop("perplexity"), "")
    if "ttft" in workload:
        metrics["ttft_s"] = _stats(workload.pop("ttft"), "s")
    wl = {"batch_size": bs, "input_len": io, "output_len": io, "tensor_parallel": 1,
          "pipeline_parallel": 1, "kv_cache_dtype": "auto", "weight_dtype": "fp16", **workload}
    return Record(run_id="ref-lib", kind="reference", point_key=None,
                  backend=BackendInfo(name=engine), model=ModelInfo(name=model, params=int(params)),
                  hardware=HardwareInfo(name=hw, count=wl["tensor_parallel"] * wl["pipeline_parallel"]),
                  workload=wl, metrics=metrics,
                  roofline=Roofline(bound={"total_throughput_tok_s": bound_tok_s},
                                    efficiency={"total_throughput_tok_s": thr / bound_tok_s}),
                  notes=["fixture"])


def reference_records() -> list[Record]:
    recs = []
    for hw in REF_HW:
        for eng in REF_ENGINES:
            for model in REF_MODELS:
                for io in (128, 1024):
                    for bs in (1, 16, 32, 64):
                        recs.append(ref_record(hw, eng, model, bs, io))
    # A duplicate row of one configuration (the published data has 57): one point, not two.
    dup = ref_record("A100-SXM-80GB", "vllm", "meta-llama/Meta-Llama-3-8B", 16, 128)
    dup.metrics["total_throughput_tok_s"] = _stats(
        dup.metrics["total_throughput_tok_s"].mean * 1.05, "tok/s")
    dup.notes.append("duplicate")
    recs.append(dup)
    for blk in (8, 16, 32, 64, 128):
        recs.append(ref_record("A100-SXM-80GB", "vllm", "meta-llama/Meta-Llama-3-8B", 32, 1024,
                               kv_block_size=blk))
    for w, kv in (("fp16", "auto"), ("fp16", "fp8"), ("fp8", "fp8")):
        recs.append(ref_record("H100-SXM", "vllm", "meta-llama/Meta-Llama-3-8B", 16, 1024,
                               weight_dtype=w, kv_cache_dtype=kv))
    for tp, pp in ((1, 1), (2, 1), (4, 1), (1, 2), (2, 2)):
        recs.append(ref_record("A100-SXM-80GB", "tensorrt-llm", "meta-llama/Meta-Llama-3-8B",
                               16, 1024, tensor_parallel=tp, pipeline_parallel=pp))
    for hw, pw in (("A100-SXM-80GB", 310.0), ("H100-SXM", 520.0)):
        for bs in (1, 16, 32, 64):
            recs.append(ref_record(hw, "vllm", "mistralai/Mistral-7B-v0.1", bs, 1024,
                                   power=pw * (0.6 + 0.1 * np.log2(bs + 1)), perplexity=5.25))
    for hw in REF_HW:
        recs.append(ref_record(hw, "vllm", "meta-llama/Meta-Llama-3-8B", 16, 1024,
                               ttft=0.05 * 2e12 / REF_HW[hw]))
    return recs


def own_records(seed: int = 0) -> list[Record]:
    """llmbench's own kind of records: repeats with spread, raw TTFT/ITL/E2E samples."""
    rng = np.random.default_rng(seed)
    recs = []
    for eng, speed in (("llamacpp", 180.0), ("transformers", 25.0)):
        for bs in (1, 2, 4, 8):
            for run in range(2):  # the same point measured in two runs: one point, error bars
                tpot = (1 / speed) * (1 + 0.15 * np.log2(bs))
                ttft = rng.gamma(8, 0.004 * bs, size=bs * 3)
                itl = rng.gamma(20, tpot / 20, size=bs * 3 * 31)
                e2e = ttft + 31 * tpot
                lat = rng.normal(e2e.max(), 0.01, size=3).clip(0.01)
                thr_out = bs * 32 / lat
                metrics = {
                    "batch_latency_s": summarize(lat, "s"),
                    "output_throughput_tok_s": summarize(thr_out, "tok/s"),
                    "total_throughput_tok_s": summarize(thr_out * 2, "tok/s"),
                    "ttft_s": summarize(ttft, "s"), "itl_s": summarize(itl, "s"),
                    "e2e_s": summarize(e2e, "s"), "tpot_s": summarize(np.full(bs * 3, tpot), "s"),
                }
                bound = 9000.0 * bs / (1 + bs / 16)
                recs.append(Record(
                    run_id=f"own-run-{run}", kind="inference", point_key=f"{eng}-{bs}",
                    backend=BackendInfo(name=eng, version="1"),
                    model=ModelInfo(name="smollm2-135m", params=134_515_008),
                    hardware=HardwareInfo(name="cpu-2core", count=1),
                    workload={"batch_size": bs, "input_len": 32, "output_len": 32, "concurrency": bs,
                              "tensor_parallel": 1, "pipeline_parallel": 1, "weight_dtype": "auto",
                              "kv_cache_dtype": None, "repeats": 3, "warmups": 1},
                    metrics=metrics,
                    roofline=Roofline(bound={"total_throughput_tok_s": bound},
                                      efficiency={"total_throughput_tok_s": float(np.mean(thr_out * 2)) / bound})))
    for rate in (1.0, 2.0, 4.0, 8.0):  # an open-loop serving sweep: latency grows with load
        n = int(20 * rate)
        ttft = rng.gamma(6, 0.01 * (1 + rate / 4), size=n)
        tpot = rng.gamma(30, 0.006 * (1 + rate / 8) / 30, size=n)
        recs.append(Record(
            run_id="own-serve", kind="serving", point_key=f"serve-{rate}",
            backend=BackendInfo(name="llamacpp-server"), model=ModelInfo(name="smollm2-135m"),
            hardware=HardwareInfo(name="cpu-2core"),
            workload={"load": "open", "request_rate": rate, "concurrency": None, "input_len": 64,
                      "output_len": 32, "requests_sent": n, "seed": int(rate)},
            metrics={"ttft_s": summarize(ttft, "s"), "tpot_s": summarize(tpot, "s"),
                     "e2e_s": summarize(ttft + 31 * tpot, "s"),
                     "goodput_req_s": summarize([rate * (1 - 0.05 * rate)], "req/s"),
                     "output_throughput_tok_s": summarize([rate * 32 * 0.98], "tok/s")}))
    recs.append(Record(run_id="own-run-0", kind="inference", status="failed", error="fixture failure",
                       backend=BackendInfo(name="llamacpp"), model=ModelInfo(name="smollm2-135m"),
                       hardware=HardwareInfo(name="cpu-2core"), workload={"batch_size": 16}))
    for n in (1, 2, 4, 8):
        tok = 50000 * n * (0.92 ** np.log2(n))
        recs.append(Record(
            run_id="own-train", kind="training", point_key=f"gpt2-{n}",
            backend=BackendInfo(name="torch"), model=ModelInfo(name="gpt2-small", params=124_000_000),
            hardware=HardwareInfo(name="H200", count=n),
            workload={"seq_len": 1024, "micro_batch": 8, "grad_accum": 1, "precision": "bf16"},
            metrics={"tokens_per_s": summarize(tok * (1 + 0.01 * rng.standard_normal(5)), "tok/s"),
                     "tflops": summarize([tok * 6 * 124e6 / 1e12 / n] * 5, "TFLOP/s"),
                     "mfu": summarize([tok * 6 * 124e6 / 989e12 / n] * 5, "")}))
    return recs


def write_store(root: Path, own: bool = True, reference: bool = True) -> Store:
    store = Store(root)
    for r in (reference_records() if reference else []) + (own_records() if own else []):
        store.write(r)
    return store
