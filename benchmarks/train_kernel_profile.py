#!/usr/bin/env python3
"""Where a training step's GPU time goes: kernel time by kind, over the timed steps of one point.

Runs one `llmbench train` point (kinds/training/loop.run, the same code and timing as the CLI)
with torch.profiler around its timed steps only, then sorts every CUDA kernel by its name into
matrix products, attention, the optimizer, inductor's fused reductions (norms, loss, bias
gradients) and pointwise kernels, copies and the rest. Prints per step: each kind's time and
share, the GPU idle time (wall minus kernel time: kernels on one stream do not overlap), the
matrix products' achieved TFLOP/s (6 N per token, the dense part of flops.py's count) and the
attention kernels' (the causal attention term), and the MFU the step would reach if everything
but the matrix products and attention took no time: the ceiling the non-matmul work leaves.

    PYTHONPATH=src python3 benchmarks/train_kernel_profile.py --out DIR \\
        --set workload=gpt2 size=xl seq_len=1024 micro_batch=16 compile=true device=cuda steps=3

The profiler adds its own cost to the wall time of these steps; the kernel times are the GPU's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# MFU here is the record's (record.py): flops.py's count with attention counted non-causally.
# (kind, pattern on the kernel name); the first match wins, so attention precedes the matmuls
# (cuDNN's attention kernels carry "gemm"-like words) and the optimizer precedes "foreach".
KINDS: list[tuple[str, str]] = [
    ("attention", r"flash|fmha|attention|sdpa"),
    ("matmul", r"gemm|nvjet|xmma|cutlass|cublas|wgmma|matmul|splitk"),
    ("optimizer", r"adam|multi_tensor"),
    ("fused reduction", r"^triton_(red|per)_"),
    ("fused pointwise", r"^triton_poi_"),
    ("memory", r"memcpy|memset|copy"),
    ("aten elementwise/reduce", r"elementwise|reduce_kernel|vectorized"),
]


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def breakdown(kernels: list[tuple[str, float]], steps: int, wall_s: float, dense_flop: float,
              attn_flop: float, model_flop: float, datasheet_flop_s: float) -> dict:
    """`kernels`: (name, seconds) of every kernel in the timed steps. Per step: `dense_flop`
    (6 N x tokens), `attn_flop` (causal attention), `model_flop` (the record's MFU count).
    Returns per-step seconds by kind and the derived rates."""
    by_kind: dict[str, float] = {}
    for name, s in kernels:
        by_kind[kind_of(name)] = by_kind.get(kind_of(name), 0.0) + s / steps
    busy_s = sum(by_kind.values())
    step_s = wall_s / steps
    mm, at = by_kind.get("matmul", 0.0), by_kind.get("attention", 0.0)
    out = {"step_s": step_s, "kernel_s": busy_s, "idle_s": max(step_s - busy_s, 0.0),
           "by_kind_s": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
           "matmul_tflop_s": dense_flop / mm / 1e12 if mm else None,
           "attention_tflop_s": attn_flop / at / 1e12 if at else None,
           "mfu": model_flop / step_s / datasheet_flop_s,
           "mfu_if_only_matmul_and_attention": (model_flop / (mm + at) / datasheet_flop_s)
                                               if mm + at else None}
    return out


def kernel_events(prof) -> list[tuple[str, float]]:
    from torch.autograd import DeviceType

    return [(e.name, e.time_range.elapsed_us() / 1e6) for e in prof.events()
            if e.device_type == DeviceType.CUDA]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                    help="TrainPoint fields (kinds/training/config.py)")
    ap.add_argument("--out", type=Path, help="write profile.json here")
    ap.add_argument("--top", type=int, default=12, help="longest kernels to list")
    a = ap.parse_args()

    import torch

    from llmbench.kinds.training import loop
    from llmbench.kinds.training.config import TrainPoint
    from llmbench.kinds.training.peaks import hardware_peak

    from pydantic import ValidationError

    if bad := [kv for kv in a.set if "=" not in kv]:
        ap.error(f"--set takes FIELD=VALUE, not {' '.join(bad)}")
    try:
        p = TrainPoint(**dict(kv.split("=", 1) for kv in a.set))
    except ValidationError as e:
        ap.error("; ".join(f"{'.'.join(map(str, x['loc'])) or 'point'}: {x['msg']}" for x in e.errors()))
    if not p.device.startswith("cuda"):
        ap.error("the kernel profile needs device=cuda")
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    out = loop.run(p, around_steps=lambda: prof)
    kernels = kernel_events(prof)
    if not kernels:
        print("the profiler saw no CUDA kernel", file=sys.stderr)
        return 1
    tokens = out["tokens_per_step"]
    dense = 6 * out["flop_params"] * tokens
    attn = out["flops_per_token_causal"] * tokens - dense
    peak, _ = hardware_peak(out["device_name"], p.precision)
    b = breakdown(kernels, p.steps, out["wall_s"], dense, attn, out["flops_per_token"] * tokens, peak)
    measured = (out.get("measured_peak") or {}).get("flops")

    print(f"{out['model_name']} {p.precision} mb{p.micro_batch} s{p.seq_len} compile={p.compile} "
          f"on {out['device_name']}: {p.steps} profiled steps")
    print(f"step {b['step_s'] * 1e3:.1f} ms (profiler on), kernels {b['kernel_s'] * 1e3:.1f} ms, "
          f"GPU idle {b['idle_s'] * 1e3:.1f} ms")
    for kind, s in b["by_kind_s"].items():
        print(f"  {kind:26s} {s * 1e3:8.2f} ms  {s / b['step_s']:6.1%}")
    print(f"matmul kernels: {b['matmul_tflop_s']:.0f} TFLOP/s (6N x tokens / their time)"
          + (f", {b['matmul_tflop_s'] * 1e12 / measured:.2f} of the measured peak "
             f"{measured / 1e12:.0f}" if measured else ""))
    if b["attention_tflop_s"]:
        print(f"attention kernels: {b['attention_tflop_s']:.0f} TFLOP/s (causal count)")
    print(f"MFU {b['mfu']:.3f} (datasheet {peak / 1e12:.1f} TFLOP/s); with only the matmuls "
          f"and attention at their measured speed: {b['mfu_if_only_matmul_and_attention']:.3f}")
    top: dict[str, float] = {}
    for name, s in kernels:
        top[name] = top.get(name, 0.0) + s / p.steps
    print("longest kernels (per step):")
    for name, s in sorted(top.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"  {s * 1e3:7.2f} ms  {kind_of(name):18s} {name[:100]}")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "profile.json").write_text(json.dumps(
            {"point": p.model_dump(mode="json"), "breakdown": b, "measured_peak": out.get("measured_peak"),
             "kernels_per_step_s": dict(sorted(top.items(), key=lambda kv: -kv[1]))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
