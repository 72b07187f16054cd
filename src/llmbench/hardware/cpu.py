"""This machine's CPU as a roofline entry: memory bandwidth and matmul rate measured with numpy.

No datasheet describes "whatever CPU this is" (VMs report "AMD EPYC"), so the bound comes from
a measurement, cached per CPU model, core count and numpy version under the user cache dir.
- bandwidth: best of several reads of a 256 MiB array (a dot product streams it once, on one
  thread and split over one thread per core), or a copy counted as read + write, whichever is
  faster; the array is 8x a 32 MiB L3 so caches
  do not help.
- fp32 rate: best of several 2048^3 sgemm (numpy's BLAS, all cores).
- bf16 rate: measured with torch (oneDNN's bf16 gemm, 2048^3) when torch is installed, since
  CPUs with avx512_bf16/AMX run bf16 dot products at up to twice the fp32 rate and vLLM-cpu
  uses them; without torch, 2x fp32 where the CPU has avx512_bf16/amx_bf16, else the fp32 rate.
  fp16 is taken as the bf16 rate.
- int8 rate: an estimate, not a measurement: 4x the fp32 rate where the CPU has VNNI (one
  vpdpbusd does four int8 multiply-adds per 32-bit lane), else 2x. llama.cpp's quantized
  matmuls (Q4/Q8 x Q8) use these instructions, so its prefill can exceed the fp32 rate.
Measurements on a busy machine read low; `measure(force=True)` (`llmbench roofline --hardware
cpu --remeasure`) measures again and keeps the best of old and new.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

from llmbench.hardware.entry import Hardware

LOCAL_ID = "cpu"


def _cpu_name() -> str:
    from llmbench.measure.env import cpu_name

    return cpu_name()


def _flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def is_local_cpu(name: str) -> bool:
    n = name.strip().lower()
    return n in (LOCAL_ID, "local-cpu", "local cpu") or n == _cpu_name().strip().lower()


def _cache_path() -> Path:
    import numpy as np

    from llmbench.cache import cache_dir

    key = f"{_cpu_name()}|{os.cpu_count()}|{np.__version__}"
    safe = "".join(c if c.isalnum() else "_" for c in key)[:120]
    return cache_dir() / "hardware" / f"cpu-{safe}.json"


def _best(f, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(force: bool = False) -> dict:
    """Measured bandwidth (GB/s) and fp32 matmul rate (TFLOP/s), cached. A re-measurement
    keeps the best of it and the cached one: other load only ever makes a CPU look slower,
    and a bound must not shrink below what the machine has shown it can do."""
    path = _cache_path()
    old = None
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = None
        if old is not None and not force:
            return old
    import numpy as np

    n = 64 * 1024 * 1024  # 256 MiB of fp32
    a = np.ones(n, np.float32)
    b = np.empty_like(a)
    read_s = _best(lambda: a @ a, 5)
    parallel_s = _parallel_read_s(a, 5)
    copy_s = _best(lambda: np.copyto(b, a), 5)
    bw = max(a.nbytes / read_s, a.nbytes / parallel_s, 2 * a.nbytes / copy_s)
    del a, b
    m = 2048
    x = np.random.default_rng(0).random((m, m), dtype=np.float32)
    y = np.random.default_rng(1).random((m, m), dtype=np.float32)
    mm_s = _best(lambda: x @ y, 5)
    bw_gbs, tflops = bw / 1e9, 2 * m ** 3 / mm_s / 1e12
    bf16 = _bf16_tflops(m)
    if old is not None:
        bw_gbs, tflops = max(bw_gbs, old["mem_bw_gbs"]), max(tflops, old["fp32_tflops"])
        if bf16 is not None and old.get("bf16_tflops"):
            bf16 = max(bf16, old["bf16_tflops"])
    result = {"mem_bw_gbs": bw_gbs, "fp32_tflops": tflops, "bf16_tflops": bf16,
              "cpu": _cpu_name(), "cores": os.cpu_count(), "numpy": np.__version__,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    return result


def _parallel_read_s(a, repeats: int) -> float:
    """The best time to read `a` split over one thread per core (numpy drops the GIL in a dot
    product): engines stream weights from every core, and one core alone may not reach the
    memory's bandwidth, which would put the bound below what llama.cpp achieves."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    parts = np.array_split(a, os.cpu_count() or 1)
    with ThreadPoolExecutor(len(parts)) as pool:
        return _best(lambda: list(pool.map(lambda p: p @ p, parts)), repeats)


def _bf16_tflops(m: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    # A CPU without bf16 instructions (no AMX, no AVX512-BF16: this AMD EPYC VM) emulates them,
    # and one 2048^3 product takes minutes: a 256^3 probe sizes the matrix to ~0.1 s a product.
    p = torch.randn(256, 256, dtype=torch.bfloat16)
    t0 = time.perf_counter()
    p @ p
    rate = 2 * 256 ** 3 / max(time.perf_counter() - t0, 1e-9)
    m = max(256, min(m, int((0.1 * rate / 2) ** (1 / 3)) // 64 * 64))
    x = torch.randn(m, m, dtype=torch.bfloat16)
    y = torch.randn(m, m, dtype=torch.bfloat16)
    x @ y
    return 2 * m ** 3 / _best(lambda: x @ y, 5) / 1e12


@functools.cache
def local_cpu() -> Hardware:
    m = measure()
    if "bf16_tflops" not in m:  # cached by an older llmbench
        m = measure(force=True)
    fp32 = m["fp32_tflops"]
    flags = _flags()
    vnni = bool({"avx512_vnni", "avx_vnni", "amx_int8"} & flags)
    bf16 = m.get("bf16_tflops") or fp32 * (2 if {"avx512_bf16", "amx_bf16"} & flags else 1)
    bf16 = max(bf16, fp32)
    return Hardware(
        id=LOCAL_ID, name=m["cpu"], vendor="cpu", mem_bw_gbs=m["mem_bw_gbs"],
        peak_tflops={"fp32": fp32, "tf32": None, "bf16": bf16, "fp16": bf16,
                     "int8": fp32 * (4 if vnni else 2), "fp8": None},
        link_gbs=None, source=f"measured on this machine ({m['cores']} cores, {m['measured_at']})",
        notes="bandwidth and fp32 sgemm measured with numpy, bf16 gemm with torch when present; "
              "int8 rate estimated "
              f"({'4x: VNNI' if vnni else '2x: no VNNI'})", measured=True)
