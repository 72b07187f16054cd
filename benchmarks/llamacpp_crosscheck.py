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

    python3 benchmarks/llamacpp_crosscheck.py --model llama-3-8b [--gguf-type f16] [--llama-bench PATH]
        [--repeats 5] [--device cuda] [--results DIR]

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


def llama_bench(binary: str, gguf: str, repeats: int, gpu: bool, threads: int) -> dict[str, dict]:
    cmd = [binary, "-m", gguf, "-p", "128", "-n", "128", "-r", str(repeats), "-fa", "1",
           "-ngl", "99" if gpu else "0", "-t", str(threads), "-o", "json"]
    print("$", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    tests = {}
    for row in json.loads(out):
        name = f"pp{row['n_prompt']}" if row["n_gen"] == 0 else f"tg{row['n_gen']}"
        tests[name] = {"avg_ts": row["avg_ts"], "stddev_ts": row["stddev_ts"],
                       "samples_ts": row.get("samples_ts"), "backends": row.get("backends"),
                       "build_commit": row.get("build_commit"), "gpu_info": row.get("gpu_info")}
    return tests


def llmbench_point(model: str, gguf_type: str | None, device: str, repeats: int, results: Path) -> dict:
    cmd = [sys.executable, "-m", "llmbench", "run", "--backend", "llamacpp", "--model", model,
           "--device", device, "--batch-size", "1", "--input-len", "128", "--output-len", "129",
           "--warmups", "1", "--repeats", str(repeats), "-B", "llamacpp.flash_attn=true",
           "--results", str(results)]
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
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--results", type=Path, default=None)
    a = ap.parse_args()
    binary = a.llama_bench or Path("~/carry/llama-bench.path").expanduser().read_text().strip()
    gguf = subprocess.run([sys.executable, "-m", "llmbench", "models", "path", a.model, "--format", "gguf",
                           *(["--gguf-type", a.gguf_type] if a.gguf_type else [])],
                          check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    gpu = a.device.startswith("cuda")
    theirs = llama_bench(binary, gguf, a.repeats, gpu, os.cpu_count() or 1)
    results = a.results or Path(tempfile.mkdtemp(prefix="llamacpp-crosscheck-"))
    rec = llmbench_point(a.model, a.gguf_type, a.device, a.repeats, results)
    m = rec["metrics"]
    ttft = m["ttft_s"]["samples"]
    e2e = m["e2e_s"]["samples"]
    decode = [128 / (e - t) for t, e in zip(ttft, e2e)]
    prefill = [128 / t for t in ttft]
    med = statistics.median
    eng_dec = m.get("engine_decode_s", {}).get("samples") or []
    eng_pp = m.get("engine_prefill_s", {}).get("samples") or []
    rows = {
        "tg128": (med(decode), theirs["tg128"]["avg_ts"]),
        "pp128": (med(prefill), theirs["pp128"]["avg_ts"]),
    }
    opts = rec["backend"]["options"]
    print(f"\nllama.cpp {rec['backend']['version']} ({theirs['tg128'].get('backends')}, "
          f"build {theirs['tg128'].get('build_commit')}), {a.model} -> {gguf}")
    print(f"llmbench options in force: n_gpu_layers={opts.get('n_gpu_layers')} "
          f"layers_offloaded={opts.get('layers_offloaded')}/{opts.get('layers_offloadable')} "
          f"ggml_backend={opts.get('ggml_backend')} flash_attn={opts.get('flash_attn')}")
    for name, (ours, bench) in rows.items():
        print(f"  {name}: llmbench {ours:8.1f} tok/s   llama-bench {bench:8.1f} tok/s   "
              f"ratio {ours / bench:.3f}")
    if eng_dec:
        own = [128 / d for d in eng_dec]  # llama.cpp's t_eval over its decode calls in llmbench's run
        print(f"  llama.cpp's own counters inside llmbench's run: decode {med(own):.1f} tok/s, "
              f"prefill {128 / med(eng_pp):.1f} tok/s" if eng_pp else "")
    print(f"  llmbench output throughput (in 128 / out 129, batch latency): "
          f"{m['output_throughput_tok_s']['median']:.1f} tok/s")
    if a.results:
        (a.results / "llamacpp-crosscheck.json").write_text(json.dumps(
            {"model": a.model, "gguf": gguf, "llama_bench": theirs, "llmbench_decode_tok_s": decode,
             "llmbench_prefill_tok_s": prefill, "ratios": {k: o / b for k, (o, b) in rows.items()}},
            indent=1))


if __name__ == "__main__":
    main()
