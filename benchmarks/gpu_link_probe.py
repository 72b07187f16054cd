"""Probe a multi-GPU machine: device count, link topology and NCCL all-reduce bus bandwidth.

The roofline's tensor-parallel term needs the device-to-device bandwidth actually reached.
    torchrun --nproc-per-node N benchmarks/gpu_link_probe.py
"""

import os
import time

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    for size_mib in (64, 256, 1024):
        x = torch.randn(size_mib * 2**20 // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        n = 10
        t0 = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / n
        # NCCL-tests' bus bandwidth convention for all-reduce: 2(n-1)/n * bytes / time.
        busbw = 2 * (world - 1) / world * x.numel() * 2 / dt
        if rank == 0:
            print(f"all_reduce {size_mib:5d} MiB bf16 x{world}: {dt * 1e3:7.3f} ms, bus bandwidth {busbw / 1e9:7.1f} GB/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    main()
