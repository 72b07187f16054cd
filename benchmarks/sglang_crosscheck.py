"""llmbench's SGLang numbers against SGLang's own benchmarks on the same points (issue 39).
NOT YET RUN: written without a GPU; docs/gpu-campaign.md holds the H200 recipe.

Offline: llmbench's `sglang` backend through the offline workload (`run_offline`, its
batch_latency_s / ttft_s / itl_s samples) against `python -m sglang.bench_one_batch` (a
ModelRunner with no scheduler: prefill_latency, median_decode_latency, total_latency per run, in
its result JSONL). Per point (batch, in, out) and round, the side going first alternates
(crosscheck_stats.order); bench_one_batch is called once per point and round with that one batch
size, so its single warm-up run (at its first batch size) is that point's warm-up, and llmbench
gets one warm-up batch per round too. Both hold the GPU at once (llmbench's engine stays loaded
between rounds), so both take `--mem-fraction-static` (default 0.4). Compared, as the median
over rounds on both sides, times inverted so that > 1 = llmbench faster:
  total_latency           vs batch_latency_s (batch start -> last token)
  prefill_latency         vs ttft_s          (llmbench's includes the frontend's IPC and stream)
  median_decode_latency   vs itl_s median    (see the chunk rule below)

Online: one server started as `llmbench serve --launch sglang` does; per concurrency level and
round, `llmbench serve URL -c C` and `python -m sglang.bench_serving --backend sglang
--dataset-name random-ids --tokenize-prompt --random-range-ratio 1` (exact lengths, no dataset
download), order alternating.

The multi-token-chunk ITL rule: when SGLang coalesces k tokens into one streamed chunk, both
llmbench (measure/timeline.py: RequestTimeline.itl_s) and bench_serving's native backend split the
chunk's gap evenly, k ITLs of gap/k, so the ITL samples agree chunk for chunk. They differ in the
FIRST chunk only: a first chunk of k > 1 tokens gives k-1 ITLs of 0 in llmbench and none in
bench_serving (it skips the first chunk), so llmbench's mean and median ITL are then lower.
(bench_serving's OpenAI backends, not used here, count one ITL per chunk instead.)

    python3 benchmarks/sglang_crosscheck.py offline --model llama-3-8b --dtype bf16 \
        --batch-size 1,16,64 --input-len 128 --output-len 128 --rounds 3
    python3 benchmarks/sglang_crosscheck.py serve --model llama-3-8b --concurrency 1,16,64 \
        --input-len 128 --output-len 128 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_stats import DIRECTION, order, speed_ratio  # noqa: E402

CHUNK_RULE = ("ITL: a k-token chunk's gap is split evenly (k x gap/k) by both llmbench and "
              "bench_serving --backend sglang; only a first chunk of k > 1 tokens differs: k-1 ITLs "
              "of 0 in llmbench, none in bench_serving")
# bench_one_batch's field -> llmbench's offline metric (all seconds, compared as medians)
OFFLINE_PAIRS = {"total_latency": "batch_latency_s", "prefill_latency": "ttft_s",
                 "median_decode_latency": "itl_s"}
SERVE_TIMES = ("ttft_median_ms", "ttft_mean_ms", "itl_mean_ms", "tpot_median_ms")
SERVE_KEYS = ("output_tok_s", *SERVE_TIMES)


# -- reading SGLang's result files -------------------------------------------------------------------
def read_one_batch(path: Path, run_name: str, batch: int, input_len: int, output_len: int) -> dict:
    """bench_one_batch's JSONL (appended, one line per (batch, in, out)): the line of this point."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["run_name"] == run_name and r["batch_size"] == batch
            and r["input_len"] == input_len and r["output_len"] == output_len]
    if not rows:
        return {}
    return {k: rows[-1][k] for k in OFFLINE_PAIRS}


def read_bench_serving(path: Path, concurrency: int) -> dict:
    """bench_serving's --output-file (JSONL, appended): the last line at this concurrency."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("max_concurrency") == concurrency]
    if not rows:
        return {}
    r = rows[-1]
    return {"output_tok_s": r["output_throughput"], "ttft_median_ms": r["median_ttft_ms"],
            "ttft_mean_ms": r["mean_ttft_ms"], "itl_mean_ms": r["mean_itl_ms"],
            "tpot_median_ms": r["median_tpot_ms"], "completed": r["completed"]}


# -- ratios ---------------------------------------------------------------------------------------------
def offline_ratios(ours: dict[str, list[float]], theirs: list[dict]) -> dict[str, float]:
    """Per bench_one_batch field, median(theirs) / median(ours) of the llmbench metric paired
    with it (time: > 1 = llmbench faster). `ours` holds llmbench's per-round medians."""
    out = {}
    for tool_key, our_key in OFFLINE_PAIRS.items():
        t = [r[tool_key] for r in theirs if r.get(tool_key) is not None]
        if t and ours.get(our_key):
            out[tool_key] = speed_ratio(ours[our_key], t, time=True)
    return out


def serve_ratios(ours: list[dict], theirs: list[dict]) -> dict[str, float]:
    """Per statistic, the median over rounds on both sides; throughput as is, times inverted."""
    out = {}
    for k in SERVE_KEYS:
        o = [r[k] for r in ours if r.get(k) is not None]
        t = [r[k] for r in theirs if r.get(k) is not None]
        if o and t:
            out[k] = speed_ratio(o, t, time=k in SERVE_TIMES)
    return out


# -- the two sides, offline -------------------------------------------------------------------------
def bench_one_batch(a, model_dir: str, batch: int, out: Path, run_name: str) -> dict:
    cmd = [sys.executable, "-m", "sglang.bench_one_batch", "--model-path", model_dir,
           "--batch-size", str(batch), "--input-len", str(a.input_len), "--output-len", str(a.output_len),
           "--run-name", run_name, "--result-filename", str(out), "--dtype", a.dtype_sglang,
           "--mem-fraction-static", str(a.mem_fraction), *a.tool_args]
    if a.synthetic:
        cmd += ["--load-format", "dummy"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)
    return read_one_batch(out, run_name, batch, a.input_len, a.output_len) if out.exists() else {}


def offline(a) -> None:
    from llmbench.backends.options import EngineOptions
    from llmbench.backends.sglang import SglangBackend, DTYPES
    from llmbench.kinds.inference.offline import run_offline
    from llmbench.kinds.inference.spec import Point
    from llmbench.measure.power import EnergyMeter
    from llmbench.models.sources import model_path, resolve

    batches = [int(b) for b in a.batch_size.split(",")]
    ref = resolve(a.model)
    a.synthetic, a.dtype_sglang = ref.synthetic_weights, DTYPES[a.dtype]
    opts = {"mem_fraction_static": a.mem_fraction}
    base = Point(backend="sglang", model=a.model, device=a.device, dtype=a.dtype, batch_size=max(batches),
                 input_len=a.input_len, output_len=a.output_len, repeats=1, warmups=1,
                 options=EngineOptions(weight_quant=a.weight_quant), backend_options=opts)
    be = SglangBackend(base.engine_call(), ref)
    be.load()
    meter = EnergyMeter("benchmark")
    results = a.results or Path(tempfile.mkdtemp(prefix="sglang-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for b in batches:
            point = base.model_copy(update={"batch_size": b})
            be.use(point.engine_call())
            ours: dict[str, list[float]] = {k: [] for k in OFFLINE_PAIRS.values()}
            theirs = []
            for r in range(a.rounds):
                for side in order(r):
                    if side == "llmbench":
                        m, _ = run_offline(be, point.model_copy(update={"seed": r}), meter)
                        for k in ours:
                            ours[k].append(statistics.median(m[k].samples))
                    else:
                        theirs.append(bench_one_batch(a, str(model_path(a.model, "hf")), b,
                                                      results / "one_batch.jsonl", f"b{b}-r{r}"))
            rows.append({"batch_size": b, "llmbench": ours, "bench_one_batch": theirs,
                         "ratios": offline_ratios(ours, theirs), "ratio_direction": DIRECTION,
                         "itl_rule": CHUNK_RULE})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        be.close()
    (results / "sglang-offline-crosscheck.json").write_text(json.dumps(rows, indent=1))


# -- the two sides, online ----------------------------------------------------------------------------
def n_prompts(c: int) -> int:
    return max(24, 4 * c)  # >= 4 full waves per level, as vllm_serve_crosscheck.py


def bench_serving(url: str, served: str, tokenizer: str, a, c: int, out: Path) -> dict:
    cmd = [sys.executable, "-m", "sglang.bench_serving", "--backend", "sglang", "--base-url", url,
           "--model", served, "--tokenizer", tokenizer, "--dataset-name", "random-ids",
           "--tokenize-prompt", "--random-input-len", str(a.input_len),
           "--random-output-len", str(a.output_len), "--random-range-ratio", "1",
           "--num-prompts", str(n_prompts(c)), "--max-concurrency", str(c), "--request-rate", "inf",
           "--temperature", "0", "--warmup-requests", str(a.warmups), "--output-file", str(out)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)
    return read_bench_serving(out, c) if out.exists() else {}


def serve(a) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from vllm_serve_crosscheck import llmbench_serve

    from llmbench.launch.servers import launched
    from llmbench.models.sources import model_path, resolve

    results = a.results or Path(tempfile.mkdtemp(prefix="sglang-serve-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    tokenizer, served = str(model_path(a.model, "hf")), resolve(a.model).name
    rows = []
    with launched("sglang", a.model, device=a.device, ready_timeout_s=600, log_dir=results) as srv:
        print(f"SGLang {srv.version} at {srv.url}: {' '.join(srv.command[3:])}", flush=True)
        for c in [int(x) for x in a.concurrency.split(",")]:
            ours, theirs = [], []
            for r in range(a.rounds):
                for side in order(r):
                    if side == "llmbench":
                        ours.append(llmbench_serve(srv.url, a, c, results / f"c{c}-r{r}"))
                    else:
                        theirs.append(bench_serving(srv.url, served, tokenizer, a, c,
                                                    results / f"bench_serving-c{c}-r{r}.jsonl"))
            rows.append({"concurrency": c, "llmbench": ours, "bench_serving": theirs,
                         "ratios": serve_ratios(ours, theirs), "ratio_direction": DIRECTION,
                         "itl_rule": CHUNK_RULE})
            print(json.dumps(rows[-1]["ratios"]), flush=True)
    (results / "sglang-serve-crosscheck.json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("offline", "serve"))
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32", "auto"))
    ap.add_argument("--weight-quant", default=None, help="e.g. fp8 (both sides: --quantization)")
    ap.add_argument("--batch-size", default="1,16,64")
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3, help="A/B rounds per point, order alternating")
    ap.add_argument("--warmups", type=int, default=1, help="serve: warm-up requests per side per run")
    ap.add_argument("--mem-fraction", type=float, default=0.4)
    ap.add_argument("--results", type=Path, default=None)
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds: at least 3 (issue 39)")
    a.tool_args = ["--quantization", a.weight_quant] if a.weight_quant else []
    print(DIRECTION + "\n" + CHUNK_RULE, flush=True)
    (offline if a.mode == "offline" else serve)(a)


if __name__ == "__main__":
    main()
