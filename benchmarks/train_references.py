"""llmbench's training step beside the trainers users would run instead (issue 42): torchtitan's
own training loop on the same Llama model, and a nanoGPT-style GPT-2 written here, independent
of llmbench's code.

    python3 benchmarks/train_references.py llama --size 3-8b --layers 8 --seq-len 2048 \
        --micro-batch 2 [--compile] [--repeats 3] [--steps 20] [--warmup 5] [--device cuda]
    python3 benchmarks/train_references.py nanogpt --size xl --seq-len 1024 --micro-batch 16 \
        [--compile] [--repeats 3] [--steps 20] [--warmup 5] [--device cuda]

Like with like (benchmarks/crosscheck_stats.py): the same model shape (torchtitan's model is
built from llmbench's catalog: benchmarks/torchtitan_llama.py; the parameter counts agree:
tests/benchmarks/test_train_references.py), batch, sequence length, precision (fp32 master
weights computing under bf16 autocast on CUDA, as llmbench's loop, torchtitan on one device and
nanoGPT do; fp32 on the CPU), AdamW, full-logit cross-entropy, the same warm-up steps left out of each
side's figure, and rounds whose order alternates (the reference first in odd rounds). Each side's
figure per round is the median tokens/s of its timed steps; the ratio is llmbench / reference as
a throughput (> 1 = llmbench faster), its interval the Student-t interval of the per-round ratios
(rounds are paired by adjacency, so drift on the machine hits both sides of a round alike).

FLOP conventions, the same on all three sides: 6N + 12 L h s per token (N without an untied
embedding table; attention counted dense, as if not causal): llmbench's roofline/flops.py,
torchtitan's `get_dense_model_nparams_and_flops` (6 N + 6 L heads (2 head_dim) s), nanoGPT's
`estimate_mfu` (6 N + 12 L h s, N without the position table).

torchtitan 0.2.2 (0.3.0 needs a newer torch than the GPU machine's 2.11.0: torchtitan_llama.py)
runs through `torchrun` with its dependencies carried as wheels (the GPU machine has no index):
torchtitan, torchdata, datasets<4.8, tyro, docstring-parser, typeguard, dill<0.4.1,
multiprocess<0.70.19, tomli; tensorboard, xxhash and einops are the machine's own. Its tokenizer and data are made here, offline: a word-level tokenizer of the model's
whole vocabulary and random words as JSON lines (the token ids do not change the step's work).
Each side of a round runs in a process of its own, so neither inherits the other's GPU memory. Its trainer needs an accelerator (tools/utils.get_local_device picks `cuda` when none is
found), so the llama reference runs on a GPU only; the nanoGPT reference runs anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from crosscheck_stats import DIRECTION, paired_ratio  # noqa: E402

TPS_LINE = re.compile(r"step:\s*(\d+).*?tps:\s*([\d,]+)")


# -- the statistics ---------------------------------------------------------------------------
def after_warmup_median(step_tps: dict[int, float], warmup: int) -> float:
    """The median tokens/s of the steps after the first `warmup` ones."""
    timed = [v for k, v in sorted(step_tps.items()) if k > warmup]
    if not timed:
        raise ValueError(f"no step after the {warmup} warm-up steps was logged")
    return statistics.median(timed)


def parse_torchtitan_log(text: str) -> dict[int, float]:
    """torchtitan's per-step `step: N ... tps: 12,345` lines -> {step: tokens/s per device}."""
    return {int(m.group(1)): float(m.group(2).replace(",", "")) for m in TPS_LINE.finditer(text)}


# -- llmbench's side ----------------------------------------------------------------------------
def llmbench_tokens_per_s(workload: str, size: str, a) -> tuple[float, dict]:
    """One `llmbench train` point in a fresh process: the median tokens/s of its timed steps."""
    from llmbench.store.store import Store

    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "llmbench", "train", "--workload", workload, "--size", size,
               "--seq-len", str(a.seq_len), "--micro-batch", str(a.micro_batch),
               "--steps", str(a.steps), "--warmup", str(a.warmup), "--device", a.device,
               "--compile", "true" if a.compile else "false", "--results", d]
        if a.layers:
            cmd += ["--layers", str(a.layers)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        (rec,) = Store(d).records()
        if rec.status != "ok":
            raise RuntimeError(f"llmbench's point failed: {rec.error}")
        return rec.metrics["tokens_per_s"].median, {
            "flop_params": rec.workload["flop_params"], "flops_per_token": rec.workload["flops_per_token"],
            "mfu": rec.metrics.get("mfu").median if rec.metrics.get("mfu") else None}


# -- torchtitan's side --------------------------------------------------------------------------
def torchtitan_assets(d: Path, vocab: int, tokens: int = 200_000, seed: int = 0) -> tuple[Path, Path]:
    """A word-level tokenizer of the model's whole vocabulary and a JSON-lines dataset of random
    words, made here: no hub and no GGUF package on the GPU machine (the token ids do not change
    the step's work, only its shape does)."""
    import random

    from llmbench.models.synthetic_tokenizer import write_wordlevel_tokenizer

    tok = d / "tokenizer"
    tok.mkdir(parents=True, exist_ok=True)
    write_wordlevel_tokenizer(vocab, tok)
    data = d / "data"
    data.mkdir(exist_ok=True)
    rng = random.Random(seed)
    with open(data / "train.json", "w") as f:
        for _ in range(tokens // 2048):
            f.write(json.dumps({"text": " ".join(f"w{rng.randrange(vocab)}" for _ in range(2048))}) + "\n")
    return tok, data


def torchtitan_cmd(a, tok: Path, data: Path, out: Path) -> list[str]:
    """torchtitan 0.2.2's trainer on llmbench's flavor (torchtitan_llama.py), one device, no
    activation checkpointing (its default is selective), a log line per step."""
    cmd = ["torchrun", "--standalone", "--nproc_per_node", "1", "-m", "torchtitan.train",
           "--experimental.custom_import", "torchtitan_llama",
           "--model.name", "llama3", "--model.flavor", "llmbench", "--model.hf_assets_path", str(tok),
           "--training.dataset", "c4_test", "--training.dataset_path", str(data),
           "--job.dump_folder", str(out), "--training.steps", str(a.warmup + a.steps),
           "--training.seq_len", str(a.seq_len), "--training.local_batch_size", str(a.micro_batch),
           "--activation_checkpoint.mode", "none", "--metrics.log_freq", "1"]
    if a.compile:
        cmd += ["--compile.enable", "--compile.components", "model"]
    return cmd


def torchtitan_tokens_per_s(a, tok: Path, data: Path) -> float:
    env = {**os.environ, "LLMBENCH_LLAMA_SIZE": a.size,
           "LLMBENCH_LLAMA_LAYERS": str(a.layers or ""),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run(torchtitan_cmd(a, tok, data, Path(out)), env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        raise RuntimeError("torchtitan failed:\n" + p.stdout[-3000:])
    return after_warmup_median(parse_torchtitan_log(p.stdout), a.warmup)


# -- the nanoGPT-style reference ----------------------------------------------------------------
def nanogpt_tokens_per_s(a) -> float:
    """A GPT-2 written here in nanoGPT's manner (fused QKV, SDPA causal attention, tanh GELU,
    tied head, per-block compile, fused AdamW on CUDA), timed step by step with a device sync."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from llmbench.models.catalog import get_arch

    arch = get_arch(f"gpt2-{a.size}")
    L, h, nh = a.layers or arch.layers, arch.hidden, arch.heads
    vocab = 64 * math.ceil(arch.vocab / 64)
    dev = torch.device(a.device)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
            q, k, v = (t.view(b, s, nh, h // nh).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(b, s, h))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(arch.max_position, h)
            self.h = nn.ModuleList(Layer() for _ in range(L))
            self.ln_f, self.lm_head = nn.LayerNorm(h), nn.Linear(h, vocab, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.float().view(-1, vocab), targets.view(-1))

    torch.manual_seed(a.seed)
    net = Net().to(dev)            # fp32 master weights; bf16 autocast on CUDA (nanoGPT's way)
    if a.compile:
        for blk in net.h:
            blk.compile()
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4, fused=dev.type == "cuda")
    ids = torch.randint(0, arch.vocab, (a.micro_batch, a.seq_len + 1), device=dev)
    x, y = ids[:, :-1], ids[:, 1:].contiguous()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    tps = {}
    for step in range(1, a.warmup + a.steps + 1):
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            loss = net(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        tps[step] = a.micro_batch * a.seq_len / (time.perf_counter() - t0)
    return after_warmup_median(tps, a.warmup)


def nanogpt_in_subprocess(a) -> float:
    """The reference in a fresh process, as llmbench's side: a process that has run one side
    keeps its CUDA caching allocator's memory (76 GiB after GPT-2 XL), which the other side's
    next process would then lack on an 80 GB card."""
    argv = [sys.executable, __file__, "nanogpt", "--once", "--size", a.size, "--seq-len", str(a.seq_len),
            "--micro-batch", str(a.micro_batch), "--steps", str(a.steps), "--warmup", str(a.warmup),
            "--device", a.device, "--seed", str(a.seed)] + (["--layers", str(a.layers)] if a.layers else []) \
        + (["--compile"] if a.compile else [])
    p = subprocess.run(argv, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        raise RuntimeError("the nanoGPT-style reference failed:\n" + p.stdout[-3000:])
    return float(json.loads(p.stdout.strip().splitlines()[-1])["tokens_per_s"])


# -- the comparison -----------------------------------------------------------------------------
def compare(a) -> dict:
    ours, theirs, info = [], [], {}
    if a.reference == "llama":
        from llmbench.kinds.training.llama import SIZES
        from llmbench.models.catalog import get_arch

        tmp = Path(tempfile.mkdtemp(prefix="llmbench-tt-"))
        tok, data = torchtitan_assets(tmp, get_arch(SIZES[a.size]).vocab)
        reference = lambda: torchtitan_tokens_per_s(a, tok, data)  # noqa: E731
        workload = "llama"
    else:
        reference = lambda: nanogpt_in_subprocess(a)  # noqa: E731
        workload = "gpt2"
    for r in range(a.repeats):
        first_ours = r % 2 == 0
        for side in ("llmbench", "reference") if first_ours else ("reference", "llmbench"):
            if side == "llmbench":
                v, info = llmbench_tokens_per_s(workload, a.size, a)
                ours.append(v)
            else:
                theirs.append(reference())
            print(f"round {r + 1} {side}: {(ours if side == 'llmbench' else theirs)[-1]:,.0f} tok/s",
                  flush=True)
    out = {"reference": "torchtitan 0.2.2" if a.reference == "llama" else "nanoGPT-style (this file)",
           "point": {k: getattr(a, k) for k in ("size", "layers", "seq_len", "micro_batch", "compile",
                                                "steps", "warmup", "repeats", "device")},
           "llmbench_tok_s": ours, "reference_tok_s": theirs, "llmbench": info,
           "direction": DIRECTION, **paired_ratio(ours, theirs)}
    out["meets_goal"] = out["median_ratio"] >= 1.0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference", choices=["llama", "nanogpt"])
    ap.add_argument("--size", help="llama: 3.2-1b|3.2-3b|3-8b; nanogpt: small|medium|large|xl")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write the result here too")
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)  # one reference run, in this process
    a = ap.parse_args(argv)
    a.size = a.size or ("3-8b" if a.reference == "llama" else "xl")
    if a.once:
        print(json.dumps({"tokens_per_s": nanogpt_tokens_per_s(a)}))
        return 0
    if a.reference == "llama" and not a.device.startswith("cuda"):
        ap.error("torchtitan's trainer needs an accelerator (it picks cuda when none is found)")
    res = compare(a)
    lo, hi = res["ci95"]
    print(f"llmbench / {res['reference']}: {res['median_ratio']:.3f} (ratio of medians); per-round "
          f"mean {res['mean']:.3f}" + (f" [{lo:.3f}, {hi:.3f}] 95% t" if lo is not None else "")
          + f"; goal >= 1.0: {'met' if res['meets_goal'] else 'NOT met'}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
