"""Cross-check llmbench's llama.cpp numbers against llama-bench, built from the same source, on
the same GGUF and the same settings (every layer offloaded, flash attention on, batch 1).

llama-bench's tests time engine work alone: `pp128` is one `llama_decode` of a 128-token prompt
up to its synchronisation, `tg128` 128 single-token `llama_decode` calls, each synchronised, with
no sampling. The same quantity inside llmbench's run of a point of in 128 / out 129 (128 decode
steps after the prompt's) is llama.cpp's own perf counters, which the backend reads after each
timed batch (`llama_perf_context`: `t_p_eval` spans from a prompt's `llama_decode` call to the
synchronisation that reads its logits, `t_eval` the same for single-token steps):
- pp128 = engine_prefill_tokens / engine_prefill_s, per repeat (issue 37 item 4: until then this
  compared 128 / TTFT, which also holds llmbench filling the batch in Python, the first token's
  argmax over the vocabulary and its timestamp, with llama-bench's pure prompt evaluation);
- tg128 = engine_decode_steps / engine_decode_s, per repeat.
llmbench's user-facing rates, 128 / TTFT and 128 / (last token - first token), are printed
beside them as what a user of the record sees, not as the comparison.
The contexts differ by design: tg128 decodes at positions 0..127, llmbench at 128..255 (after
its prompt); at 8B that costs a few microseconds of attention per token.

Why llama.cpp's own prefill inside llmbench's run is slower than llama-bench's pp128 (on the H200,
LLaMA-3-8B F16: 11,173 vs 14,024 tok/s, 11.46 vs 9.13 ms; benchmarks/h200/outputs/
llamacpp-crosscheck.json and record results/h200/20261201T211303Z-a4557a), from the code:
- graph reuse. llama.cpp keeps the last compute graph and reuses it when the next ubatch has
  the same shape (`llama_context::process_ubatch`: `!graph_reuse_disable && can_reuse(...)` ->
  only the inputs are set; otherwise the graph is rebuilt and the scheduler splits and allocates
  it again, on the host, inside the timed decode). llama-bench's pp reps run the same 128-token
  decode back to back after a memory clear: from the second on, the graph is reused. llmbench's
  prompt follows the previous repeat's 128 single-token decodes, so its prompt graph is rebuilt
  every repeat, and `t_p_eval` holds that host work (the decode steps, all of one shape, reuse
  theirs: tg agrees, 0.98-1.00). This is read from the code, not yet confirmed by a measurement:
  `benchmarks/llamacpp_graph_reuse.py` on the shared 2-core CPU (SmolLM2, 8-token prompt; log
  docs/data/llamacpp-graph-reuse-cpu-20261204.txt) read rebuild - reuse +1.7 ms in one run and
  -2.0 ms in the next, noise larger than the effect; on the H200 (`--gpu-layers 99`, the point's
  --prompt 128) the host part stands alone and decides it.
- what does not differ at this point: n_batch / n_ubatch (llmbench 512 / 512, llama-bench 2048 /
  512: a 128-token prompt is one ubatch either way), flash attention (on both sides), threads
  (the same count given to both), the tokens' logits (only the last token's on both sides), the
  warm-up (one of the same shape on both; llama-bench's first timed rep still ran cold, 5,392
  tok/s, which the median leaves out), the KV cache (one sequence: n_ctx 512 here against 256,
  both padded to 256 cells for the flash-attention kernel at this length).

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
    """The same quantities as llama-bench's pp128 and tg128, per repeat, from llama.cpp's own
    counters in llmbench's record of a point of in 128 / out 129; an error when the counters did
    not see 128 prompt tokens and 128 decode steps."""
    m = rec["metrics"]

    def rate(count: str, seconds: str) -> list[float]:
        ns, ts = m[count]["samples"], m[seconds]["samples"]
        if any(n != 128 for n in ns):
            raise ValueError(f"{count} read {ns}, not 128 per repeat: not the point llama-bench runs")
        return [n / t for n, t in zip(ns, ts)]

    return {"pp128": rate("engine_prefill_tokens", "engine_prefill_s"),
            "tg128": rate("engine_decode_steps", "engine_decode_s")}


def llmbench_user_rates(rec: dict) -> dict[str, list[float]]:
    """What llmbench's record tells a user at the same point: 128 / TTFT (the batch filled in
    Python, the prompt, the first token's argmax and stamp) and 128 / (last - first token)."""
    m = rec["metrics"]
    ttft, e2e = m["ttft_s"]["samples"], m["e2e_s"]["samples"]
    return {"128/TTFT": [128 / t for t in ttft], "128/(last-first)": [128 / (e - t) for t, e in zip(ttft, e2e)]}


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
    user: dict[str, list[float]] = {"128/TTFT": [], "128/(last-first)": []}
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
                for k, xs in llmbench_user_rates(rec).items():
                    user[k] += xs
    rows = ratios(ours, theirs)
    opts = rec["backend"]["options"]
    print(f"\nllama.cpp {rec['backend']['version']} ({bench['tg128'].get('backends')}, "
          f"build {bench['tg128'].get('build_commit')}), {a.model} -> {gguf}")
    print(f"llmbench options in force: n_threads={opts.get('n_threads')} n_gpu_layers={opts.get('n_gpu_layers')} "
          f"layers_offloaded={opts.get('layers_offloaded')}/{opts.get('layers_offloadable')} "
          f"ggml_backend={opts.get('ggml_backend')} flash_attn={opts.get('flash_attn')}")
    print(f"{a.rounds} rounds x {a.repeats} repeats per side, order alternating, one warm-up per side "
          f"per round; medians of per-repeat samples; {DIRECTION}")
    print(report(ours, theirs, user))
    if a.results:
        (a.results / "llamacpp-crosscheck.json").write_text(json.dumps(
            {"model": a.model, "gguf": gguf, "rounds": a.rounds, "repeats": a.repeats,
             "llama_bench_tok_s": theirs, "llmbench_engine_tok_s": ours, "llmbench_user_tok_s": user,
             "ratios": rows, "compared": "llama.cpp's own counters in llmbench's run vs llama-bench",
             "ratio_direction": DIRECTION}, indent=1))


def report(ours: dict[str, list[float]], theirs: dict[str, list[float]],
           user: dict[str, list[float]]) -> str:
    """The comparison's lines: llama.cpp's counters in llmbench's run against llama-bench, then
    llmbench's user-facing rates (not like for like)."""
    med = statistics.median
    lines = []
    for name, ratio in ratios(ours, theirs).items():
        lines.append(f"  {name}: llama.cpp in llmbench's run {med(ours[name]):8.1f} tok/s (n={len(ours[name])})   "
                     f"llama-bench {med(theirs[name]):8.1f} tok/s (n={len(theirs[name])})   ratio {ratio:.3f}")
    lines.append("  llmbench's own clock at the same point (includes its Python; not the comparison): "
                 + ", ".join(f"{k} {med(v):.1f} tok/s" for k, v in user.items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
