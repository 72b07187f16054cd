"""transformers on a random-weight LLaMA-3-8B in bf16 on H200s: eager generate() with the
dynamic cache vs the fast path (static cache + torch.compile'd decode step), through the
llmbench CLI itself, so every figure is a real llmbench record with NVML energy.

Runs one list of CLI invocations per GPU (in parallel when there are two), then prints a
table: TTFT, TPOT, decode tok/s (= batch / TPOT), output tok/s, % of the HBM bound and energy.

    PYTHONPATH=src python3 benchmarks/transformers_h200.py --out DIR [--gpus 2] [--budget-s 540]

On nvidia-h200-x2 the whole plan takes about 9 minutes (each compile ~60-80 s, eager 1024-token
runs ~85 s each); points past the budget are skipped and said so in the logs.

HBM bound of one decode step: (weight bytes + KV bytes read at the mean context) / 4.8 TB/s
(the H200 datasheet; 16.06 GB of bf16 weights -> 299 tok/s at batch 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HBM_BYTES_S = 4.8e12
MODEL = "llama-3-8b"

# (label, cli args). Eager long runs take one repeat: at ~12 tok/s a 1024-token batch is 80 s.
EAGER = ["-o", "kv_cache=dynamic"]
FAST = ["-o", "kv_cache=static", "-o", "compile=true"]
GEN_COMPILED = FAST + ["-B", "transformers.loop=generate"]
PLANS = {
    0: [("eager", EAGER + ["--batch-size", "1,64", "--input-len", "128", "--output-len", "128",
                           "--warmups", "1", "--repeats", "2"]),
        ("eager", EAGER + ["--batch-size", "1", "--input-len", "1024", "--output-len", "1024",
                           "--warmups", "0", "--repeats", "1"]),
        ("generate+static+compile", GEN_COMPILED + ["--batch-size", "1", "--input-len", "128",
                                                    "--output-len", "128", "--warmups", "1",
                                                    "--repeats", "3"]),
        ("eager", EAGER + ["--batch-size", "64", "--input-len", "1024", "--output-len", "1024",
                           "--warmups", "0", "--repeats", "1"])],
    1: [("step+static+compile", FAST + ["--batch-size", "1,64", "--input-len", "128",
                                        "--output-len", "128", "--warmups", "1", "--repeats", "3"]),
        ("step+static+compile", FAST + ["--batch-size", "1,64", "--input-len", "1024",
                                        "--output-len", "1024", "--warmups", "1", "--repeats", "3"])],
}


def run_plan(gpu: int, plan, results: Path, log: Path, deadline: float) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as f:
        for label, args in plan:
            left = deadline - time.monotonic()
            if left < 30:
                f.write(f"== skipped {label} {args}: out of time\n")
                continue
            cmd = [sys.executable, "-m", "llmbench", "run", "--backend", "transformers", "--model",
                   MODEL, "--device", "cuda", "--dtype", "bf16", "--in-process",
                   "--results", str(results), *args]
            f.write(f"== {label}: {' '.join(cmd)}\n")
            f.flush()
            t0 = time.monotonic()
            try:
                subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=left)
            except subprocess.TimeoutExpired:
                f.write("== killed: out of time\n")
            f.write(f"== {label} took {time.monotonic() - t0:.0f} s\n")
            f.flush()


def table(results: Path) -> list[dict]:
    from llmbench.models.catalog import get_arch

    arch = get_arch(MODEL)
    weights = arch.param_count() * 2
    rows = []
    for p in sorted(results.rglob("*.json")):
        r = json.loads(p.read_text())
        if r.get("kind") != "inference":
            continue
        w, m, o = r["workload"], r["metrics"], r["backend"]["options"]
        if r["status"] != "ok":
            rows.append({"mode": o.get("loop"), "batch": w["batch_size"], "in": w["input_len"],
                         "out": w["output_len"], "status": r["status"], "error": (r.get("error") or "")[:300]})
            continue
        b, n_in, n_out = w["batch_size"], w["input_len"], w["output_len"]
        tpot = m["tpot_s"]["p50"]
        kv = b * (n_in + n_out / 2) * arch.kv_bytes_per_token(2.0)
        bound_step_s = (weights + kv) / HBM_BYTES_S
        get = lambda k, s="mean": (m.get(k) or {}).get(s)  # noqa: E731
        mode = ("eager generate, dynamic cache" if not o.get("compile") else
                f"{o.get('loop')} loop, static cache, compile {o.get('compile_mode')}")
        rows.append({
            "mode": mode, "batch": b, "in": n_in, "out": n_out, "status": "ok",
            "ttft_ms": get("ttft_s", "p50") * 1e3, "tpot_ms": tpot * 1e3,
            "decode_tok_s": b / tpot, "output_tok_s": get("output_throughput_tok_s"),
            "pct_hbm_bound": 100 * bound_step_s / tpot, "avg_power_w": get("avg_power_w"),
            "tokens_per_j": get("tokens_per_joule"), "mem_peak_gib": get("mem_peak_gib"),
            "warmup_s": get("warmup_batch_latency_s", "max"), "repeats": w["repeats"],
            "file": p.name})
    return rows


def print_table(rows: list[dict]) -> None:
    cols = ["mode", "batch", "in", "out", "ttft_ms", "tpot_ms", "decode_tok_s", "output_tok_s",
            "pct_hbm_bound", "avg_power_w", "tokens_per_j", "mem_peak_gib", "warmup_s"]
    print(" | ".join(cols))
    for r in sorted(rows, key=lambda r: (r["mode"], r["in"], r["batch"])):
        if r["status"] != "ok":
            print(f"{r['mode']} | {r['batch']} | {r['in']} | {r['out']} | FAILED: {r['error']}")
            continue
        print(" | ".join(f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpus", type=int, default=None)
    ap.add_argument("--budget-s", type=float, default=540)
    ap.add_argument("--table-only", type=Path, default=None, help="print the table of a results dir")
    a = ap.parse_args()
    if a.table_only:
        print_table(table(a.table_only))
        return
    import torch

    gpus = a.gpus or torch.cuda.device_count()
    results = Path("/tmp/llmbench-h200")
    a.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + a.budget_s
    plans = PLANS if gpus >= 2 else {0: PLANS[1] + PLANS[0]}
    threads = [threading.Thread(target=run_plan, args=(g, plan, results, a.out / f"gpu{g}.log", deadline))
               for g, plan in plans.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = table(results)
    (a.out / "table.json").write_text(json.dumps(rows, indent=1))
    subprocess.run(["tar", "czf", str(a.out / "records.tgz"), "-C", str(results), "."], check=False)
    print_table(rows)


if __name__ == "__main__":
    main()
