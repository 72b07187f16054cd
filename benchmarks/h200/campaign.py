"""The single-GPU LLaMA-3-8B campaign of LLM-Inference-Bench, through the llmbench CLI, on an H200.

Engines: vLLM (bf16, its default CUDA graphs), llama.cpp (F16 and Q4_0 GGUF, every layer on the
GPU, flash attention on) and transformers (the compiled static-cache fast path). Batch 1, 16, 32,
64; input = output length, 128 and 2048, as in the study's data. Every figure is an llmbench
record with NVML energy. Each part fits one 10-minute call of the `device` tool; the machine is
set up by `benchmarks/h200/setup.sh` (docs/gpu-campaign.md has the whole recipe).

    python3 benchmarks/h200/campaign.py PART [PART ...] --out DIR [--budget-s 540] [--dry-run]

PART: vllm | llamacpp | llamacpp-long | serve | capacity | gpu-tests | transformers | sglang |
train-references (llmbench's training step beside torchtitan and a nanoGPT-style GPT-2) |
train-levers (GPT-2 XL's levers on and off in one run; Llama-3.2-1B bf16 vs fp8) |
transformers-ab (the transformers fast path under two llmbench trees, alternating) |
findings-vllm | findings-models | findings-llamacpp (the study's findings) | gate-inference |
gate-training (the regression gate: committed points re-run, then `llmbench compare` against
them; benchmarks/h200/gate.py) | list. Steps run in priority order;
one that would start past the budget, or whose engine is missing, is skipped and written with its
reason to DIR/skipped-PART.txt, never silently dropped. Records land in DIR/records-PART.tgz.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # gate.py beside it
MODEL = "llama-3-8b"
BATCHES = "1,16,32,64"

# A step: (label, argv after `python -m llmbench` or a script path, estimated seconds, needs).
Step = tuple[str, list[str], float, str]


def llmbench_run(*args: str, model: str = MODEL) -> list[str]:
    return [sys.executable, "-m", "llmbench", "run", "--model", model, "--device", "cuda", *args]


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(HERE.parent / name), *args]


def plan(part: str, results: str) -> list[Step]:
    """The study's lengths are input = output (128 and 2048 here), batches 1-64."""
    R = ["--results", results]
    if part == "vllm":
        return [
            ("vLLM: llmbench vs vLLM's own API and latency benchmark, b1 and b64, in/out 128",
             script("vllm_crosscheck.py", "--device", "cuda", "--model", MODEL, "--dtype", "bf16",
                    "--batch-size", "1,64", "--input-len", "128", "--output-len", "128",
                    "--rounds", "3", "--per-round", "3", "--results", results), 150, "vllm"),
            ("vLLM sweep, in/out 128",
             llmbench_run("--backend", "vllm", "--dtype", "bf16", "--batch-size", BATCHES,
                          "--input-len", "128", "--output-len", "128",
                          "--warmups", "1", "--repeats", "3", *R), 100, "vllm"),
            # 2048 generated tokens take 11-25 s a batch: two repeats per point after one warm-up
            ("vLLM sweep, in/out 2048",
             llmbench_run("--backend", "vllm", "--dtype", "bf16", "--batch-size", BATCHES,
                          "--input-len", "2048", "--output-len", "2048",
                          "--warmups", "1", "--repeats", "2", *R), 250, "vllm"),
        ]
    if part == "llamacpp":
        fa = ["-B", "llamacpp.flash_attn=true"]
        both = ["-B", "llamacpp.gguf_type=f16,q4_0"]
        return [
            ("GGUF files: random-weight F16, then Q4_0 by llama.cpp's quantiser",
             [sys.executable, "-m", "llmbench", "models", "path", MODEL, "--format", "gguf",
              "--gguf-type", "q4_0"], 60, "llama_cpp"),
            ("llama.cpp: llmbench vs llama-bench (tg128, pp128), F16, batch 1",
             script("llamacpp_crosscheck.py", "--model", MODEL, "--gguf-type", "f16",
                    "--results", results), 60, "llama_cpp"),
            ("llama.cpp F16 and Q4_0 sweep, in/out 128",
             llmbench_run("--backend", "llamacpp", "--batch-size", BATCHES, "--input-len", "128",
                          "--output-len", "128", "--warmups", "1", "--repeats", "3", *fa, *both, *R),
             120, "llama_cpp"),
            ("llama.cpp F16 and Q4_0, in/out 2048, batch 1",
             llmbench_run("--backend", "llamacpp", "--batch-size", "1", "--input-len", "2048",
                          "--output-len", "2048", "--warmups", "0", "--repeats", "2", *fa, *both, *R),
             80, "llama_cpp"),
        ]
    if part == "llamacpp-long":
        fa, f16 = ["-B", "llamacpp.flash_attn=true"], ["-B", "llamacpp.gguf_type=f16"]
        return [
            ("llama.cpp F16, in/out 2048, batch 16, 32, 64",
             llmbench_run("--backend", "llamacpp", "--batch-size", "16,32,64", "--input-len", "2048",
                          "--output-len", "2048", "--warmups", "0", "--repeats", "1", *fa, *f16, *R),
             240, "llama_cpp"),
        ]
    if part == "serve":
        return [
            ("vLLM server: llmbench serve vs `vllm bench serve`, concurrency 1, 16, 64",
             script("vllm_serve_crosscheck.py", "--model", MODEL, "--device", "cuda",
                    "--concurrency", "1,16,64", "--input-len", "128", "--output-len", "128",
                    "--trace", str(HERE / "traces" / "mooncake_h200.jsonl"),
                    "--capacity-slo", "ttft_s=0.25,tpot_s=0.03", "--results", results), 480, "vllm"),
        ]
    if part == "capacity":
        # issue 19 item 1: the SLO capacity search, its stop verdicts with their evidence, and
        # `vllm bench serve --request-rate R` beside llmbench at the bracketing rates
        return [
            ("vLLM server: llmbench serve --find-max-rate, then vllm bench serve and llmbench at "
             "the bracketing rates",
             script("capacity_crosscheck.py", "--model", MODEL, "--device", "cuda",
                    "--slo", "ttft_s=0.25,tpot_s=0.03", "--input-len", "512", "--output-len", "128",
                    "-n", "200", "--start-rate", "8", "--results", results), 540, "vllm"),
        ]
    if part == "gpu-tests":
        return [("the gpu-marked tests of the GPU engines",
                 [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                  "tests/backends/test_gpu_engines.py", "tests/measure/test_gpm_gpu.py"], 150, "pytest")]
    if part == "transformers":
        fast = ["-o", "kv_cache=static", "-o", "compile=true"]
        return [
            ("transformers fast path, in/out 128, batch 1-64",
             llmbench_run("--backend", "transformers", "--dtype", "bf16", *fast, "--batch-size", BATCHES,
                          "--input-len", "128", "--output-len", "128", "--warmups", "1",
                          "--repeats", "3", *R), 360, "torch"),
            ("transformers fast path, in/out 2048, batch 1",
             llmbench_run("--backend", "transformers", "--dtype", "bf16", *fast, "--batch-size", "1",
                          "--input-len", "2048", "--output-len", "2048", "--warmups", "1",
                          "--repeats", "2", *R), 150, "torch"),
        ]
    if part == "sglang":
        # issue 39: the study's LLaMA-3-8B points on SGLang 0.5.17 (docs/gpu-campaign.md carries
        # it), its own tools beside llmbench on the same points, and serving at vLLM's
        # concurrencies with the same prompts (serve's seeded prompt pool)
        return [
            ("SGLang: llmbench vs sglang.bench_one_batch, bf16, batch 1, 16, 64, in/out 128",
             script("sglang_crosscheck.py", "offline", "--model", MODEL, "--batch-size", "1,16,64",
                    "--input-len", "128", "--output-len", "128", "--rounds", "3",
                    "--results", results), 240, "sglang"),
            ("SGLang sweep bf16, in/out 128",
             llmbench_run("--backend", "sglang", "--dtype", "bf16", "--batch-size", "1,16,64",
                          "--input-len", "128", "--output-len", "128", "--warmups", "1",
                          "--repeats", "3", *R), 120, "sglang"),
            ("SGLang FP8 weights, batch 1 and 64, in/out 128",
             llmbench_run("--backend", "sglang", "--dtype", "bf16", "-o", "weight_quant=fp8",
                          "--batch-size", "1,64", "--input-len", "128", "--output-len", "128",
                          "--warmups", "1", "--repeats", "3", *R), 100, "sglang"),
            ("SGLang sweep bf16, in/out 2048, batch 1 and 64",
             llmbench_run("--backend", "sglang", "--dtype", "bf16", "--batch-size", "1,64",
                          "--input-len", "2048", "--output-len", "2048", "--warmups", "1",
                          "--repeats", "2", *R), 200, "sglang"),
            ("SGLang server: llmbench serve vs sglang.bench_serving, concurrency 1, 16, 64",
             script("sglang_crosscheck.py", "serve", "--model", MODEL, "--concurrency", "1,16,64",
                    "--input-len", "128", "--output-len", "128", "--rounds", "3",
                    "--results", results), 300, "sglang"),
        ]
    if part == "train-references":
        # issue 42: llmbench's step beside torchtitan's trainer and a nanoGPT-style GPT-2
        # (torchtitan and its dependencies carried as wheels: docs/gpu-campaign.md)
        return [
            ("Llama-3-8B shape at 8 layers, s2048 mb2, compiled: llmbench vs torchtitan 0.2.2",
             script("train_references.py", "llama", "--size", "3-8b", "--layers", "8",
                    "--seq-len", "2048", "--micro-batch", "2", "--compile", "--repeats", "3",
                    "--json", f"{results}/train-references-llama.json"), 300, "torchtitan"),
            ("GPT-2 XL s1024 mb16, compiled: llmbench vs the nanoGPT-style reference",
             script("train_references.py", "nanogpt", "--size", "xl", "--seq-len", "1024",
                    "--micro-batch", "16", "--compile", "--repeats", "3",
                    "--json", f"{results}/train-references-nanogpt.json"), 240, "torch"),
        ]
    if part == "transformers-ab":
        # issue 48 item 2: the fast path at b1 under the 12-03 record's tree (7536a05) and today's,
        # alternating (benchmarks/ab_trees.py; the trees are made and carried as .ab/old, .ab/new)
        return [("transformers fast path b1: tree 7536a05 (A) vs this tree (B), 3 rounds alternating",
                 script("ab_trees.py", "--a", ".ab/old", "--b", ".ab/new", "--rounds", "3",
                        "--metric", "output_throughput_tok_s", "--json", f"{results}/ab-transformers-b1.json",
                        "--", "run", "--model", MODEL, "--device", "cuda", "--backend", "transformers",
                        "--dtype", "bf16", "--in-process", "-o", "kv_cache=static", "-o", "compile=true",
                        "--batch-size", "1", "--input-len", "128", "--output-len", "128",
                        "--warmups", "1", "--repeats", "3"), 540, "torch")]
    if part == "train-levers":
        # issue 42 items 3-4: the levers measured on and off in one run, and fp8 against bf16
        return [
            ("Llama-3.2-1B s2048 mb4: bf16 and fp8, 30 learnable steps (loss compared)",
             [sys.executable, "-m", "llmbench", "train", "--workload", "llama", "--size", "3.2-1b",
              "--seq-len", "2048", "--micro-batch", "4", "--precision", "bf16,fp8", "--compile", "true",
              "--learnable", "--steps", "30", "--device", "cuda", "--results", results], 200, "torch"),
            ("GPT-2 XL levers on and off in one run: compile per layer vs whole model, grad-accum 1 vs 4",
             [sys.executable, "-m", "llmbench", "train", "--workload", "gpt2", "--size", "xl",
              "--seq-len", "1024", "--micro-batch", "16", "--compile", "true",
              "--compile-scope", "layers,model", "--grad-accum", "1,4", "--steps", "8", "--warmup", "3",
              "--device", "cuda", "--results", results], 420, "torch"),
        ]
    if part in FINDINGS_PARTS:
        return findings_plan(part, results)
    if part in GATE_PARTS:
        return gate_plan(results, part.removeprefix("gate-"))
    raise SystemExit(f"unknown part {part!r}")


GATE_PARTS = ("gate-inference", "gate-training")


def gate_plan(results: str, which: str) -> list[Step]:
    """The gate's points of one part re-run (benchmarks/h200/gate.py), then the compare table:
    inference ~530 s, training ~200 s of steps, one 10-minute call each."""
    import gate

    needs = {"run": {"transformers": "torch", "llamacpp": "llama_cpp", "vllm": "vllm"}, "train": "torch"}
    est = {"transformers": 120, "llamacpp": 50, "vllm": 90, "train": 60}
    points = gate.select(which)
    steps: list[Step] = [("GGUF file: random-weight F16 (the llama.cpp point)",
                          [sys.executable, "-m", "llmbench", "models", "path", MODEL, "--format", "gguf",
                           "--gguf-type", "f16"], 60, "llama_cpp")] if which == "inference" else []
    for p in points:
        engine = p.rerun[p.rerun.index("--backend") + 1] if "--backend" in p.rerun else "train"
        need = needs["train"] if engine == "train" else needs["run"][engine]
        against = ", ".join(f"{card} {run}" for card, run in p.runs.items())
        steps.append((f"gate: {p.name} (against {against})", gate.rerun_argv(p, results), est[engine], need))
    steps.append(("gate: llmbench compare, committed records -> this run",
                  [sys.executable, str(HERE / "gate.py"), "--new", results, "--points", which,
                   "--base", str(Path(results).parent / f"gate-base-{which}")], 20, "llmbench"))
    return steps


# -- the study's findings re-tested on the H200 (issue 20; `llmbench findings` reads the records) --
# vLLM with its default CUDA graphs (the FP8 finding needs them: eager FP8 was slower than bf16);
# in/out 128 unless the finding names other lengths. One engine start per configuration costs
# 60-150 s (compile + graph capture; vLLM's compile cache under ~/.cache/vllm is reused by later
# steps on the same warm machine), so each step is one configuration and the steps are ordered
# by value. A configuration the engine refuses (block size 8: "block_size not supported" by every
# attention backend of vLLM 0.26 on Hopper) becomes a failed record carrying the engine's own
# message (launch/isolated.py), never a crash of the sweep.
FINDINGS_PARTS = ("findings-vllm", "findings-models", "findings-llamacpp")
F_SHORT = ["--input-len", "128", "--output-len", "128", "--warmups", "1", "--repeats", "3"]


def findings_plan(part: str, results: str) -> list[Step]:
    R = ["--results", results]
    vllm = ["--backend", "vllm", "--dtype", "bf16"]
    if part == "findings-vllm":   # one 10-minute call, ~420 s
        return [
            ("FP8 weights (vLLM quantization=fp8), LLaMA-3-8B, batch 1 and 64, CUDA graphs",
             llmbench_run(*vllm, "-o", "weight_quant=fp8", "--batch-size", "1,64", *F_SHORT, *R), 120, "vllm"),
            ("FP8 KV cache (kv_cache_dtype=fp8), LLaMA-3-8B, batch 1 and 64, CUDA graphs",
             llmbench_run(*vllm, "-o", "kv_cache_dtype=fp8", "--batch-size", "1,64", *F_SHORT, *R), 100, "vllm"),
            # the bf16 baseline on the same machine, at vLLM's default KV block (16, recorded as
            # kv_block_size), with the input/output mirrors (1024/128 vs 128/1024) in the same engine
            ("bf16 baseline, batch 1 and 64 x in 128/1024 x out 128/1024 (the mirror pairs)",
             llmbench_run(*vllm, "--batch-size", "1,64", "--input-len", "128,1024", "--output-len", "128,1024",
                          "--warmups", "1", "--repeats", "2", *R), 200, "vllm"),
        ]
    if part == "findings-models":  # a second call, ~540 s; Qwen2 and Mixtral last, optional
        short64 = ["--batch-size", "64", *F_SHORT]
        mml = ["-B", "vllm.max_model_len=1024"]
        return [
            ("LLaMA-3-70B in FP8 weights on one H200 (bf16 does not fit), batch 1 and 64",
             llmbench_run(*vllm, "-o", "weight_quant=fp8", "-B", "vllm.gpu_memory_utilization=0.92", *mml,
                          "--batch-size", "1,64", *F_SHORT, *R, model="llama-3-70b"), 200, "vllm"),
            ("GQA vs MHA: LLaMA-2-7B (MHA), batch 64",
             llmbench_run(*vllm, *mml, *short64, *R, model="llama-2-7b"), 90, "vllm"),
            ("GQA vs MHA: Mistral-7B, batch 64",
             llmbench_run(*vllm, *mml, *short64, *R, model="mistral-7b"), 90, "vllm"),
            ("KV block size 8 (the engine's refusal is recorded), 32, 64; LLaMA-3-8B batch 64",
             llmbench_run(*vllm, "-o", "kv_block_size=8,32,64", *short64, *R), 160, "vllm"),
            ("GQA vs MHA: Qwen2-7B, batch 64",
             llmbench_run(*vllm, *mml, *short64, *R, model="qwen2-7b"), 90, "vllm"),
            ("optional: Mixtral-8x7B bf16 (~94 GB of weights), batch 1 and 64",
             llmbench_run(*vllm, *mml, "--batch-size", "1,64", *F_SHORT, *R, model="mixtral-8x7b"), 200, "vllm"),
        ]
    if part == "findings-llamacpp":  # llama.cpp's 8-bit beside vLLM's FP8: ~200 s
        fa = ["-B", "llamacpp.flash_attn=true"]
        return [
            ("GGUF files: random-weight F16, then Q8_0 by llama.cpp's quantiser",
             [sys.executable, "-m", "llmbench", "models", "path", MODEL, "--format", "gguf",
              "--gguf-type", "q8_0"], 60, "llama_cpp"),
            ("llama.cpp Q8_0 and F16, batch 1 and 64, in/out 128",
             llmbench_run("--backend", "llamacpp", "--batch-size", "1,64", *F_SHORT, *fa,
                          "-B", "llamacpp.gguf_type=q8_0,f16", *R), 140, "llama_cpp"),
        ]
    raise SystemExit(f"unknown part {part!r}")


PARTS = ("vllm", "llamacpp", "llamacpp-long", "serve", "capacity", "gpu-tests", "transformers",
         "sglang", "train-references", "train-levers", "transformers-ab", *FINDINGS_PARTS, *GATE_PARTS)


def have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="+", choices=[*PARTS, "list"], metavar="PART")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=540.0, help="for all the parts named together")
    ap.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if "list" in a.parts:
        for part in PARTS:
            for label, argv, est, needs in plan(part, "RESULTS"):
                print(f"{part:13} ~{est:4.0f} s  {label}\n{'':20}{shlex.join(argv)}")
        return 0
    deadline = time.monotonic() + a.budget_s
    return max(run_part(part, a.out, deadline, a.dry_run) for part in a.parts)


def run_part(part: str, out: Path, deadline: float, dry_run: bool) -> int:
    results = out / f"records-{part}"
    skipped: list[str] = []
    failed = 0
    for label, argv, est, needs in plan(part, str(results)):
        left = deadline - time.monotonic()
        why = (f"python module {needs!r} is not installed here" if not have(needs) else
               f"{left:.0f} s of the budget left, the step needs ~{est:.0f} s" if left < min(est, 60) else None)
        if why:
            skipped.append(f"{label}: {why}")
            print(f"== SKIPPED {skipped[-1]}", flush=True)
            continue
        print(f"== {label}\n$ {shlex.join(argv)}", flush=True)
        if dry_run:
            continue
        t0 = time.monotonic()
        # its own process group: at the budget's end the engine processes it started go too,
        # so no GPU memory is held into the next step
        proc = subprocess.Popen(argv, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
            skipped.append(f"{label}: killed at the budget's end after {time.monotonic() - t0:.0f} s "
                           "(the points it stored are kept)")
        failed += rc != 0
        print(f"== exit {rc} after {time.monotonic() - t0:.0f} s", flush=True)
    (out / f"skipped-{part}.txt").write_text("".join(s + "\n" for s in skipped) or "nothing skipped\n")
    if results.exists():
        with tarfile.open(out / f"records-{part}.tgz", "w:gz") as tar:
            tar.add(results, arcname=".")
    print(f"== {part}: {len(skipped)} step(s) skipped, {failed} exited non-zero; see {out}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
