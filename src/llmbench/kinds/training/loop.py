"""The training timing loop: build, prepare (precision, sparsity, checkpointing, compile,
DDP/FSDP2), warm up (the first step holds compilation and is kept apart), then time steps.

Every step is closed by a device synchronisation, so a step's time is wall time of real work.
A step is `grad_accum` micro-steps and one optimizer step; under DDP gradients are all-reduced
on the last micro-step only (`no_sync` before it; FSDP2: `set_requires_gradient_sync`).
Returns plain JSON-able values; record.py turns them into a Record.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from llmbench.kinds.training.attention import padded_width
from llmbench.kinds.training.config import TrainPoint
from llmbench.roofline.flops import flops_per_token

TRAIN_MEM_BYTES_PER_PARAM = 16   # fp32 weight + grad + two AdamW moments
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def dist_env() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's environment; (0, 1, 0) alone."""
    return (int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
            int(os.environ.get("LOCAL_RANK", 0)))


def _build(p: TrainPoint, device, dtype):
    if p.workload == "block":
        from llmbench.kinds.training.block import build
    elif p.workload == "gpt2":
        from llmbench.kinds.training.gpt2 import build
    elif p.workload == "llama":
        from llmbench.kinds.training.llama import build
    else:
        from llmbench.kinds.training.genslm import build
    return build(p, device, dtype)


def _sdpa_context(backend: str):
    if backend == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "math": SDPBackend.MATH}[backend])


def choose_parallel(p: TrainPoint, n_params: int, device) -> str:
    if p.nproc == 1:
        return "none"
    if p.parallel != "auto":
        return p.parallel
    import torch

    if device.type != "cuda":
        return "ddp"
    free = torch.cuda.get_device_properties(device).total_memory
    return "fsdp" if n_params * TRAIN_MEM_BYTES_PER_PARAM > 0.6 * free else "ddp"


def run(p: TrainPoint, around_steps=contextlib.nullcontext) -> dict[str, Any]:
    """`around_steps`: a context manager factory entered around the timed steps only (a
    profiler, benchmarks/train_kernel_profile.py); the point's timing is unchanged by it."""
    import torch
    import torch.distributed as dist

    rank, world, local = dist_env()
    if world != p.nproc:
        raise ValueError(f"point asks for {p.nproc} processes, the launcher started {world}")
    device = torch.device(f"cuda:{local}" if p.device.startswith("cuda") and world > 1 else p.device)
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.manual_seed(p.seed + rank)
    tf32 = p.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    notes: list[str] = []

    measured = measured_peak_safe(str(device), p.precision, notes)

    # The block has no optimizer: its weights are in the compute dtype. The language models keep
    # fp32 master weights and compute under bf16 autocast (fp8: torchao's float8 linears inside).
    low = torch.bfloat16 if p.precision in ("bf16", "fp8") else None
    block = p.workload == "block"
    param_dtype = (low or torch.float32) if block else torch.float32
    autocast = low is not None and not block
    w = _build(p.model_copy(update={"seed": p.seed + rank}), device, param_dtype)
    model = w.model
    blocks = model.blocks

    if p.sparsity == "2:4":
        from llmbench.kinds.training.sparsity import check_supported, sparsify_linears

        check_supported(device)
        notes.append(f"2:4 sparsity on {sparsify_linears(blocks)} linear layers (runtime pruning)")
    if p.precision == "fp8":
        try:
            from torchao.float8 import convert_to_float8_training
        except ImportError as e:
            raise ValueError(f"fp8 needs torchao ({e})") from None
        convert_to_float8_training(
            blocks, module_filter_fn=lambda m, fqn: isinstance(m, torch.nn.Linear)
            and m.in_features % 16 == 0 and m.out_features % 16 == 0)
        notes.append("fp8: torchao float8 training (tensorwise scaling) on the layers' linears")
    if p.activation_checkpointing:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

        for i in range(len(blocks)):
            blocks[i] = checkpoint_wrapper(blocks[i])
    if p.compile:
        # Regional compilation: one graph per layer (identical layers share the compiled code),
        # so a 48-layer model compiles about as fast as one layer.
        # A sweep meets the same layer class at many shapes: keep each compiled, never dynamic.
        import torch._dynamo

        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        kw = {"dynamic": False, **({"mode": p.compile_mode} if p.compile_mode != "default" else {})}
        if p.compile_scope == "model":
            # one graph for the whole forward: fusions across layer boundaries (the residual add
            # into the next norm), at the price of compiling every layer apart
            model.compile(**kw)
        else:
            for b in blocks:
                b.compile(**kw)
            if hasattr(model, "head"):
                model.head.compile_parts(**kw)
        if p.compile_mode in CUDA_GRAPH_MODES and device.type != "cuda":
            notes.append(f"compile_mode {p.compile_mode}: CUDA graphs need a CUDA device; "
                         "inductor runs the graphs without them here")
    head_dim = w.hidden // w.heads
    if padded_width(head_dim, p.head_pad) != head_dim:
        notes.append(f"attention heads {head_dim} wide, padded with zeros to "
                     f"{padded_width(head_dim, True)} for the fused kernels (not counted as FLOPs)")

    parallel = choose_parallel(p, w.total_params, device)
    ddp = fsdp = False
    if parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        ddp = True
    elif parallel == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mp = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32) if low else MixedPrecisionPolicy()
        for b in blocks:
            fully_shard(b, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        fsdp = True

    train = p.mode == "train"
    opt, optimizer = (make_optimizer(p, model.parameters(), device, notes) if train
                      else (None, None))
    graphs = p.compile and p.compile_mode in CUDA_GRAPH_MODES and device.type == "cuda"

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step(i: int):
        if graphs:  # a new iteration: the CUDA graphs may reuse the last step's output memory
            torch.compiler.cudagraph_mark_step_begin()
        losses = []
        for j in range(p.grad_accum):
            last = j == p.grad_accum - 1
            batch = w.batch(i * p.grad_accum + j)
            if fsdp:
                model.set_requires_gradient_sync(last)
            ctx = model.no_sync() if ddp and not last else contextlib.nullcontext()
            with ctx, _sdpa_context(p.attn_backend):
                if p.mode == "fwd":
                    with torch.no_grad():
                        w.loss(model, batch)
                elif p.mode == "fwdbwd":
                    w.loss(model, batch)
                else:
                    with torch.autocast(device.type, dtype=low, enabled=autocast):
                        loss = w.loss(model, batch)
                    (loss / p.grad_accum).backward()
                    losses.append(loss.detach())
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)
        elif p.mode == "fwdbwd":
            model.zero_grad(set_to_none=True)
        return torch.stack(losses).mean() if losses else None

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    sync()
    losses = []
    t0 = time.perf_counter()
    losses.append(step(0))
    sync()
    first_step_s = time.perf_counter() - t0
    for i in range(1, p.warmup):
        losses.append(step(i))
    sync()

    from llmbench.measure.contention import ContentionWatch
    from llmbench.measure.gpm import CounterWatch
    from llmbench.measure.observers import observed
    from llmbench.measure.power import open_meter

    meter = None
    if rank == 0:
        # under torchrun the other ranks are ours too: they are the launcher's children
        watch = ContentionWatch.for_device(str(device), world, os.getppid() if world > 1 else None)
        meter = observed(open_meter(str(device), world), watch, CounterWatch.for_device(str(device), world))
    times = []
    with (meter.window() if meter else contextlib.nullcontext()) as win, around_steps():
        for i in range(p.warmup, p.warmup + p.steps):
            t = time.perf_counter()
            losses.append(step(i))
            sync()
            times.append(time.perf_counter() - t)
    wall_s = sum(times)

    if world > 1:  # a step lasts as long as its slowest rank
        tt = torch.tensor(times, dtype=torch.float64, device=device)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        times = tt.tolist()

    if device.type == "cuda":
        mem_gib = torch.cuda.max_memory_allocated(device) / 2**30
        if world > 1:
            m = torch.tensor([mem_gib], device=device)
            dist.all_reduce(m, op=dist.ReduceOp.MAX)
            mem_gib = float(m.item())
        mem_what = "torch.cuda.max_memory_allocated, largest over ranks"
        device_name = torch.cuda.get_device_name(device)
    else:
        import resource

        mem_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        mem_what = "host peak RSS of the process (CPU run)"
        from llmbench.measure.env import cpu_name

        device_name = cpu_name()

    loss_vals = [float(x.item()) for x in losses if x is not None]
    backward = p.mode != "fwd"
    fpt = flops_per_token(w.flop_params, w.layers, w.hidden, p.seq_len, backward=backward)
    fpt_causal = flops_per_token(w.flop_params, w.layers, w.hidden, p.seq_len, backward=backward,
                                 causal_attention=True)
    out: dict[str, Any] = {
        "rank": rank, "world": world, "device": str(device), "device_name": device_name,
        "model_name": w.name, "flop_params": w.flop_params, "total_params": w.total_params,
        "layers": w.layers, "hidden": w.hidden, "heads": w.heads, "info": w.info,
        "parallel": parallel, "flops_per_token": fpt, "flops_per_token_causal": fpt_causal,
        "tokens_per_step": p.micro_batch * p.seq_len * p.grad_accum * world,
        "samples_per_step": p.micro_batch * p.grad_accum * world,
        "step_times_s": times, "first_step_s": first_step_s, "warmup_steps": p.warmup,
        "losses": loss_vals, "mem_peak_gib": mem_gib, "mem_what": mem_what,
        "measured_peak": measured, "notes": notes, "wall_s": wall_s, "optimizer": optimizer,
    }
    if meter is not None:
        from llmbench.measure.observers import observers

        out["power"] = meter.describe()
        out["observers"] = observers(meter, watch, meter.counters)
        out["contention"] = watch.result()
        out["hardware_counters"] = meter.take()
        if win is not None and win.energy_j is not None:
            out["energy_j"] = win.energy_j
            out["avg_power_w"] = win.avg_power_w
            out["energy_window_s"] = win.duration_s
    return out


def make_optimizer(p: TrainPoint, params, device, notes: list[str]):
    """AdamW (GPT-2's betas and weight decay) in the asked implementation: `fused` (one kernel
    for all parameters), `foreach` (batched ops per tensor list) or `for-loop` (per tensor).
    A device without the fused kernel gets foreach, and the record says so."""
    import torch

    kw = {"lr": p.lr, "betas": (0.9, 0.95), "weight_decay": 0.1}
    impl = {"fused": {"fused": True}, "foreach": {"foreach": True},
            "for-loop": {"foreach": False, "fused": False}}[p.optimizer]
    params = list(params)
    try:
        return torch.optim.AdamW(params, **kw, **impl), p.optimizer
    except (RuntimeError, ValueError) as e:
        notes.append(f"optimizer: fused AdamW refused on {device.type} ({e}); foreach used")
        return torch.optim.AdamW(params, **kw, foreach=True), "foreach"


def measured_peak_safe(device: str, precision: str, notes: list[str]) -> dict | None:
    from llmbench.kinds.training.peaks import measured_matmul_peak

    try:
        return measured_matmul_peak(device, precision)
    except Exception as e:  # e.g. no fp8 kernels on this GPU: the metric is then absent
        notes.append(f"matmul peak not measured: {type(e).__name__}: {e}")
        return None
