#!/usr/bin/env python3
"""The training study on H200s in one call (issue 4; issue 8's 2-GPU scaling when 2 GPUs).

Runs `python -m llmbench train` section by section, in priority order, each in its own process
with a time limit, until the budget is spent; then prints the headline ratios against the
issue's goals and packs the records into OUT/records.tgz (log: OUT/log.txt).

On the device machine (wheels for pydantic carried in .whl-train; torchao optional, for fp8):
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl-train/*.whl && export PYTHONPATH=/tmp/site:$PWD/src
  PYTHONUNBUFFERED=1 python3 benchmarks/train_h200.py --out $OUT --budget-s 500

Goals (issue 4): block h4096/32 heads/s2048 bf16 fwd+bwd >= 0.78 of the measured matmul peak
(aim 0.85); GPT-2 XL s1024 mb16 bf16 MFU >= 0.40 of 989 TFLOP/s (aim 0.50).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

# steps: enough for >= 2 s of timed steps, so NVML's energy counter resolves the window
BLOCK = ["--workload", "block", "--hidden", "4096", "--heads", "32", "--seq-len", "2048",
         "--micro-batch", "4", "--steps", "150", "--warmup", "3"]
XL = ["--workload", "gpt2", "--size", "xl", "--seq-len", "1024", "--micro-batch", "16",
      "--steps", "8", "--warmup", "3"]
G250 = ["--workload", "genslm", "--size", "250m", "--steps", "20", "--warmup", "3"]

# (name, arguments, time limit in seconds); in priority order
SECTIONS: list[tuple[str, list[str], int]] = [
    ("block", BLOCK + ["--mode", "fwdbwd", "--compile", "true,false"], 120),
    ("xl", XL + ["--compile", "true"], 200),
    ("block_more", BLOCK + ["--compile", "true", "--attn-backend", "cudnn"], 60),
    ("genslm2048", G250 + ["--seq-len", "2048", "--micro-batch", "8", "--compile", "true"], 100),
    ("genslm10240", G250 + ["--seq-len", "10240", "--micro-batch", "2", "--compile", "true"], 100),
    ("ddp", XL + ["--compile", "true", "--nproc", "2", "--parallel", "ddp", "--timeout", "170"], 180),
    ("grad_accum", ["--workload", "gpt2", "--size", "small", "--seq-len", "1024", "--micro-batch", "16",
                    "--grad-accum", "1,2,4,8,16", "--compile", "true", "--steps", "5", "--warmup", "2"], 120),
    ("sparsity", BLOCK + ["--mode", "fwdbwd", "--compile", "false", "--sparsity", "none,2:4"], 60),
    ("block_mb8", [*BLOCK[:9], "8", *BLOCK[10:], "--compile", "true"], 60),
    ("xl_eager", XL + ["--compile", "false", "--steps", "5"], 60),
    ("genslm_eager", G250 + ["--seq-len", "2048", "--micro-batch", "8", "--compile", "false", "--steps", "5"], 60),
    ("block_fwd", BLOCK + ["--compile", "true", "--mode", "fwd"], 60),
    ("block_llama", BLOCK + ["--compile", "true", "--style", "llama", "--kv-heads", "8"], 60),
    ("fsdp", XL + ["--compile", "true", "--nproc", "2", "--parallel", "fsdp", "--timeout", "170"], 180),
    ("ddp_genslm", G250 + ["--seq-len", "2048", "--micro-batch", "8", "--compile", "true", "--nproc", "2",
                           "--parallel", "ddp", "--timeout", "170"], 180),
    ("fp8", BLOCK + ["--compile", "true", "--precision", "fp8"], 90),
    # second call: GenSLM 2.5B over 1 -> 2 GPUs (issue 8), gradient accumulation under DDP
    ("genslm2.5b", ["--workload", "genslm", "--size", "2.5b", "--seq-len", "2048", "--micro-batch", "4",
                    "--compile", "true", "--steps", "6", "--warmup", "2"], 150),
    ("xl_ga4", XL + ["--compile", "true", "--grad-accum", "4", "--steps", "4"], 150),
    ("genslm2.5b_2gpu", ["--workload", "genslm", "--size", "2.5b", "--seq-len", "2048", "--micro-batch", "4",
                         "--compile", "true", "--steps", "6", "--warmup", "2", "--nproc", "2",
                         "--parallel", "ddp,fsdp", "--timeout", "150"], 200),
    ("xl_ga4_ddp", XL + ["--compile", "true", "--grad-accum", "4", "--steps", "4", "--nproc", "2",
                         "--parallel", "ddp", "--timeout", "150"], 160),
    # third call, one after another: the block alone, sparsity compiled, eager GenSLM at 10240, fp8
    ("sparsity_compiled", BLOCK + ["--mode", "fwdbwd", "--compile", "true", "--sparsity", "none,2:4"], 90),
    ("genslm10240_eager", G250 + ["--seq-len", "10240", "--micro-batch", "2", "--compile", "false",
                                  "--steps", "5"], 60),
    ("xl_fp8", XL + ["--compile", "true", "--precision", "fp8"], 120),
    ("ac", XL + ["--compile", "true", "--activation-checkpointing", "true", "--steps", "5"], 120),
    # issue 22's levers, each on and off in one run (`--sections` picks them; docs/training.md)
    ("lev_genslm_pad", G250 + ["--seq-len", "2048", "--micro-batch", "8", "--compile", "true,false",
                               "--head-pad", "false,true"], 150),
    ("lev_genslm_modes", G250 + ["--seq-len", "2048", "--micro-batch", "8,16", "--compile", "true",
                                 "--compile-mode", "max-autotune-no-cudagraphs,reduce-overhead"], 200),
    ("lev_xl_loss", XL + ["--compile", "true", "--loss", "full,chunked"], 120),
    ("lev_xl_opt", XL + ["--compile", "true", "--optimizer", "foreach,for-loop"], 120),
    ("lev_xl_mb", [*XL[:7], "24", *XL[8:], "--compile", "true", "--loss", "chunked"], 90),
    ("lev_xl_modes", XL + ["--compile", "true", "--compile-mode", "reduce-overhead,max-autotune-no-cudagraphs"], 240),
    ("lev_block_modes", BLOCK + ["--mode", "fwdbwd", "--compile", "true",
                                 "--compile-mode", "max-autotune-no-cudagraphs,reduce-overhead"], 200),
    ("lev_fp8", BLOCK + ["--mode", "fwdbwd", "--compile", "true", "--precision", "bf16,fp8"], 120),
    ("lev_xl_fp8", XL + ["--compile", "true", "--precision", "fp8"], 150),
    ("lev_genslm2.5b", ["--workload", "genslm", "--size", "2.5b", "--seq-len", "2048", "--micro-batch", "4",
                        "--compile", "true", "--steps", "6", "--warmup", "2"], 120),
]


# With two GPUs, two lanes of one-GPU sections run side by side (one GPU each), then the
# two-GPU sections; with one GPU, everything runs in order on it.
LANES = (("block", "block_more", "sparsity", "block_mb8", "block_fwd", "block_llama", "fp8"),
         ("xl", "genslm2048", "genslm10240", "grad_accum", "xl_eager", "genslm_eager", "ac"))
TWO_GPU_RESERVE_S = 200


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    ap.add_argument("--budget-s", type=float, default=500)
    ap.add_argument("--sections", default="", help="comma list; default all, in order")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--two-gpu-reserve-s", type=float, default=TWO_GPU_RESERVE_S,
                    help="time kept for the two-GPU sections after the one-GPU lanes")
    ap.add_argument("--serial", action="store_true", help="one-GPU sections one after another")
    a = ap.parse_args()
    t_end = time.monotonic() + a.budget_s
    a.out.mkdir(parents=True, exist_ok=True)
    results = a.out / "results"
    log = open(a.out / "log.txt", "a")
    env = dict(os.environ)
    for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1"), ("PYTHONUNBUFFERED", "1")):
        env.setdefault(k, v)
    ngpu = _gpus()
    want = [s for s in a.sections.split(",") if s] or [n for n, _, _ in SECTIONS]
    spec = {n: (args, limit) for n, args, limit in SECTIONS}

    def run(name: str, deadline: float, gpu: str | None = None) -> None:
        args, limit = spec[name]
        left = deadline - time.monotonic()
        if left < 30:
            _say(log, f"## {name}: skipped, budget spent")
            return
        cmd = [sys.executable, "-m", "llmbench", "train", *args, "--device", a.device,
               "--results", str(results)]
        e = dict(env)
        if gpu is not None:
            e["CUDA_VISIBLE_DEVICES"] = gpu
        _say(log, f"## {name} (gpu {gpu or 'all'}): {' '.join(cmd[2:])}")
        t0 = time.monotonic()
        # own process group: a timeout must also end torchrun's workers, which hold GPUs
        proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            text, _ = proc.communicate(timeout=min(limit, left))
            _say(log, f"## {name}: exit {proc.returncode} in {time.monotonic() - t0:.0f} s\n"
                      + text[-4000:])
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            text, _ = proc.communicate()
            _say(log, f"## {name}: TIMEOUT after {time.monotonic() - t0:.0f} s\n" + text[-3000:])

    one_gpu = [n for n in want if "--nproc" not in spec[n][0]]
    two_gpu = [n for n in want if "--nproc" in spec[n][0]]
    if ngpu >= 2 and one_gpu and not a.serial:
        phase_end = t_end - (a.two_gpu_reserve_s if two_gpu else 0)
        lanes = [[n for n in lane if n in one_gpu] for lane in LANES]
        rest = [n for n in one_gpu if not any(n in lane for lane in LANES)]
        for i, n in enumerate(rest):
            lanes[i % len(lanes)].append(n)
        threads = [threading.Thread(target=lambda names=names, g=str(i): [run(n, phase_end, g) for n in names])
                   for i, names in enumerate(lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for n in one_gpu:
            run(n, t_end)
    for n in two_gpu:
        if ngpu < 2:
            _say(log, f"## {n}: skipped, {ngpu} GPU(s) visible")
        else:
            run(n, t_end)
    table(results, log)
    with tarfile.open(a.out / "records.tgz", "w:gz") as tf:
        if results.exists():
            tf.add(results, arcname="results")
    return 0


def _gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:
        return 0


def _say(log, text: str) -> None:
    print(text, flush=True)
    log.write(text + "\n")
    log.flush()


def _m(d: dict, name: str, stat: str = "mean"):
    v = (d.get("metrics") or {}).get(name)
    return None if v is None else v.get(stat)


def table(results: Path, log) -> None:
    rows = []
    for f in sorted(results.rglob("*.json")) if results.exists() else []:
        d = json.loads(f.read_text())
        w = d["workload"]
        label = (f"{d['model']['name']} {w.get('mode')} s{w['seq_len']} mb{w['micro_batch']} "
                 f"ga{w['grad_accum']} n{w['nproc']}{'/' + str(w.get('parallel')) if w['nproc'] > 1 else ''} "
                 f"{w['precision']} sp={w['sparsity']} c={int(w['compile'])} ac={int(w['activation_checkpointing'])} "
                 f"attn={w.get('attn_backend')} mode={w.get('compile_mode')} opt={w.get('optimizer')} "
                 f"loss={w.get('loss')} pad={int(bool(w.get('head_pad')))}")
        if d["status"] != "ok":
            rows.append(f"{label:<140} FAILED {str(d.get('error'))[:200]}")
            continue
        vals = [("tok/s", _m(d, "tokens_per_s")), ("TFLOP/s", _m(d, "tflops_per_device")),
                ("causal", _m(d, "tflops_causal")), ("mfu", _m(d, "mfu")),
                ("mfu_meas", _m(d, "mfu_measured_peak")), ("mm_peak", _m(d, "matmul_peak_tflops")),
                ("step_s", _m(d, "step_time_s", "median")), ("mem", _m(d, "mem_peak_gib")),
                ("J/tok", _m(d, "energy_per_token_j")), ("W", _m(d, "avg_power_w")),
                ("compile_s", _m(d, "compile_time_s")), ("scale", _m(d, "scaling_efficiency")),
                ("speedup", _m(d, "speedup_vs_dense")), ("loss", _m(d, "loss_last"))]
        rows.append(f"{label:<140} " + " ".join(f"{k}={v:.4g}" for k, v in vals if v is not None))
    _say(log, "\n# results\n" + "\n".join(rows))
    goals(results, log)


# issue 22: (label, record filter, metric, goal); the best ok record of each is set against it
GOALS = [
    ("block h4096 s2048 fwd+bwd bf16, causal TFLOP/s", lambda d, w: d["model"]["name"] == "block-gpt-h4096"
     and w["seq_len"] == 2048 and w["precision"] == "bf16" and w.get("mode") == "fwdbwd", "tflops_causal", 671.0),
    ("GPT-2 XL s1024 bf16, MFU", lambda d, w: d["model"]["name"] == "gpt2-xl" and w["precision"] == "bf16",
     "mfu", 0.55),
    ("GenSLM-250M s2048 bf16, MFU", lambda d, w: d["model"]["name"] == "genslm-250m" and w["seq_len"] == 2048
     and w["precision"] == "bf16", "mfu", 0.45),
]


def goals(results: Path, log) -> None:
    recs = [json.loads(f.read_text()) for f in sorted(results.rglob("*.json"))] if results.exists() else []
    lines = []
    for label, keep, metric, goal in GOALS:
        vals = [(_m(d, metric), d["point_key"]) for d in recs
                if d["status"] == "ok" and keep(d, d["workload"]) and _m(d, metric) is not None]
        if not vals:
            lines.append(f"{label}: no record in this run")
            continue
        best, key = max(vals)
        lines.append(f"{label}: best {best:.4g} (point {key}), goal {goal:g}: ratio {best / goal:.3f} "
                     f"({'met' if best >= goal else 'not met'})")
    _say(log, "\n# issue 22 goals\n" + "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
