"""Cross-check llmbench's llama.cpp numbers against llama-bench, built from the same source, on
the same GGUF and the same settings (every layer offloaded, flash attention on, batch 1).

llama-bench's tests: `tg128` generates 128 tokens one at a time from an empty context and
reports tokens/s; `pp128` evaluates a 128-token prompt in one batch and reports tokens/s. Their
llmbench counterparts on a point of in 128 / out 129 (so that exactly 128 tokens are decoded
after the first, which the prompt's evaluation yields):
- decode rate   = 128 / (last token - first token), per repeat (= 1 / TPOT);
- prefill rate  = 128 / TTFT, per repeat (TTFT also holds the first sampling step);
- and llama.cpp's own perf counters inside llmbench's run (`engine_decode_s`,
  `engine_prefill_s`), which should match llmbench's clock.
The contexts differ by design: tg128 decodes at positions 0..127, llmbench at 128..255 (after
its prompt); at 8B that costs a few microseconds of attention per token.

Like with like (benchmarks/crosscheck_stats.py): the median of per-repeat samples on both sides
(llama-bench's JSON `samples_ts`, never its mean `avg_ts`), ratios as throughputs llmbench /
llama-bench (> 1 = llmbench faster), one warm-up on each side per round (llama-bench's default
warm-up run per test; llmbench `--warmups 1`), and `--rounds` rounds whose order alternates
(llama-bench first in odd rounds), samples pooled over the rounds.

    python3 benchmarks/llamacpp_crosscheck.py --model llama-3-8b [--gguf-type f16] [--llama-bench PATH]
        [--repeats 5] [--rounds 2] [--device cuda] [--results DIR]

llama-bench's path defaults to the one benchmarks/h200/setup.sh wrote (~/carry/llama-bench.path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_stats import DIRECTION, order, speed_ratio  # noqa: E402


def llama_bench_cmd(binary: str, gguf: str, repeats: int, gpu: bool, threads: int) -> list[str]:
    # no --no-warmup: llama-bench runs one warm-up of each test first, as llmbench --warmups 1
    return [binary, "-m", gguf, "-p", "128", "-n", "128", "-r", str(repeats), "-fa", "1",
            "-ngl", "99" if gpu else "0", "-t", str(threads), "-o", "json"]


def parse_llama_bench(out: str) -> dict[str, dict]:
    """llama-bench's JSON rows by test name (pp128, tg128), with their per-repeat samples."""
    tests = {}
    for row in json.loads(out):
        name = f"pp{row['n_prompt']}" if row["n_gen"] == 0 else f"tg{row['n_gen']}"
        tests[name] = {"samples_ts": row["samples_ts"], "avg_ts": row.get("avg_ts"),
                       "backends": row.get("backends"), "build_commit": row.get("build_commit"),
                       "gpu_info": row.get("gpu_info")}
    return tests


def llama_bench(binary: str, gguf: str, repeats: int, gpu: bool, threads: int) -> dict[str, dict]:
    cmd = llama_bench_cmd(binary, gguf, repeats, gpu, threads)
    print("$", " ".join(cmd), flush=True)
    return parse_llama_bench(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def llmbench_rates(rec: dict) -> dict[str, list[float]]:
    """llmbench's per-repeat counterparts of tg128 and pp128 from a point of in 128 / out 129."""
    m = rec["metrics"]
    ttft, e2e = m["ttft_s"]["samples"], m["e2e_s"]["samples"]
    return {"tg128": [128 / (e - t) for t, e in zip(ttft, e2e)], "pp128": [128 / t for t in ttft]}


def ratios(ours: dict[str, list[float]], theirs: dict[str, list[float]]) -> dict[str, float]:
    return {k: speed_ratio(ours[k], theirs[k]) for k in ("tg128", "pp128")}


def llmbench_point(model: str, gguf_type: str | None, device: str, repeats: int, threads: int,
                   results: Path) -> dict:
    cmd = [sys.executable, "-m", "llmbench", "run", "--backend", "llamacpp", "--model", model,
           "--device", device, "--batch-size", "1", "--input-len", "128", "--output-len", "129",
           "--warmups", "1", "--repeats", str(repeats), "-B", "llamacpp.flash_attn=true",
           "-B", f"llamacpp.n_threads={threads}", "--results", str(results)]
    if gguf_type:
        cmd += ["-B", f"llamacpp.gguf_type={gguf_type}"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    recs = [json.loads(p.read_text()) for p in sorted(results.rglob("*.json"))]
    recs = [r for r in recs if r.get("kind") == "inference" and r["workload"].get("output_len") == 129]
    assert recs and recs[-1]["status"] == "ok", recs[-1].get("error") if recs else "no record"
    return recs[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3-8b", help="catalog name (random weights) or a .gguf")
    ap.add_argument("--gguf-type", default=None, help="f16 | q8_0 | q4_0, for a catalog model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--llama-bench", default=None)
    ap.add_argument("--repeats", type=int, default=5, help="per side per round")
    ap.add_argument("--rounds", type=int, default=2, help="A/B rounds, order alternating")
    ap.add_argument("--threads", type=int, default=None, help="default: every core (both sides)")
    ap.add_argument("--results", type=Path, default=None)
    a = ap.parse_args()
    binary = a.llama_bench or Path("~/carry/llama-bench.path").expanduser().read_text().strip()
    gguf = subprocess.run([sys.executable, "-m", "llmbench", "models", "path", a.model, "--format", "gguf",
                           *(["--gguf-type", a.gguf_type] if a.gguf_type else [])],
                          check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    gpu = a.device.startswith("cuda")
    threads = a.threads or os.cpu_count() or 1
    results = a.results or Path(tempfile.mkdtemp(prefix="llamacpp-crosscheck-"))
    ours: dict[str, list[float]] = {"tg128": [], "pp128": []}
    theirs: dict[str, list[float]] = {"tg128": [], "pp128": []}
    eng_dec: list[float] = []
    eng_pp: list[float] = []
    for r in range(a.rounds):
        for side in order(r):
            if side == "tool":
                bench = llama_bench(binary, gguf, a.repeats, gpu, threads)
                for k in theirs:
                    theirs[k] += bench[k]["samples_ts"]
            else:
                rec = llmbench_point(a.model, a.gguf_type, a.device, a.repeats, threads,
                                     results / f"round-{r}")
                for k, xs in llmbench_rates(rec).items():
                    ours[k] += xs
                m = rec["metrics"]
                eng_dec += m.get("engine_decode_s", {}).get("samples") or []
                eng_pp += m.get("engine_prefill_s", {}).get("samples") or []
    med = statistics.median
    rows = ratios(ours, theirs)
    opts = rec["backend"]["options"]
    print(f"\nllama.cpp {rec['backend']['version']} ({bench['tg128'].get('backends')}, "
          f"build {bench['tg128'].get('build_commit')}), {a.model} -> {gguf}")
    print(f"llmbench options in force: n_threads={opts.get('n_threads')} n_gpu_layers={opts.get('n_gpu_layers')} "
          f"layers_offloaded={opts.get('layers_offloaded')}/{opts.get('layers_offloadable')} "
          f"ggml_backend={opts.get('ggml_backend')} flash_attn={opts.get('flash_attn')}")
    print(f"{a.rounds} rounds x {a.repeats} repeats per side, order alternating, one warm-up per side "
          f"per round; medians of per-repeat samples; {DIRECTION}")
    for name, ratio in rows.items():
        print(f"  {name}: llmbench {med(ours[name]):8.1f} tok/s (n={len(ours[name])})   "
              f"llama-bench {med(theirs[name]):8.1f} tok/s (n={len(theirs[name])})   ratio {ratio:.3f}")
    if eng_dec:
        own = [128 / d for d in eng_dec]  # llama.cpp's t_eval over its decode calls in llmbench's run
        print(f"  llama.cpp's own counters inside llmbench's run: decode {med(own):.1f} tok/s"
              + (f", prefill {128 / med(eng_pp):.1f} tok/s" if eng_pp else ""))
    if a.results:
        (a.results / "llamacpp-crosscheck.json").write_text(json.dumps(
            {"model": a.model, "gguf": gguf, "rounds": a.rounds, "repeats": a.repeats,
             "llama_bench_tok_s": theirs, "llmbench_tok_s": ours, "ratios": rows,
             "ratio_direction": DIRECTION}, indent=1))


if __name__ == "__main__":
    main()
