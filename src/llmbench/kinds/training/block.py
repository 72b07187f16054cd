"""One transformer layer, the study's micro-benchmark, and the layer GPT-2 stacks.

GPT style: pre-LayerNorm, fused QKV projection, causal attention through
`scaled_dot_product_attention` (flash / cuDNN / memory-efficient kernels), 4h MLP with tanh GELU
(GPT-2's). LLaMA style: RMSNorm, grouped-query attention, SwiGLU MLP, no biases; rotary
positions when the layer is part of a language model (llama.py), none in the micro-benchmark
(the study's block has no position encoding).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from llmbench.kinds.training.attention import causal_attention
from llmbench.kinds.training.base import Workload, count_params


def llama_ffn(hidden: int, multiple: int = 256) -> int:
    """LLaMA's MLP width: 2/3 of 4h, rounded up to a multiple (4096 -> 11008)."""
    f = int(2 * 4 * hidden / 3)
    return multiple * ((f + multiple - 1) // multiple)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int | None = None, bias: bool = True,
                 head_pad: bool = True, rope: nn.Module | None = None):
        super().__init__()
        self.head_pad, self.rope = head_pad, rope
        kv_heads = kv_heads or heads
        if hidden % heads or heads % kv_heads:
            raise ValueError(f"hidden {hidden} must divide into {heads} heads, heads into {kv_heads} kv heads")
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * self.head_dim, bias=bias)
        self.proj = nn.Linear(hidden, hidden, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split([self.heads * self.head_dim, self.kv_heads * self.head_dim,
                                     self.kv_heads * self.head_dim], dim=-1)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        y = causal_attention(q, k, v, pad=self.head_pad, enable_gqa=self.kv_heads != self.heads)
        return self.proj(y.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn: int, bias: bool = True):
        super().__init__()
        self.fc = nn.Linear(hidden, ffn, bias=bias)
        self.proj = nn.Linear(ffn, hidden, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g, u = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(g) * u)


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, *, style: str = "gpt", kv_heads: int | None = None,
                 ffn: int | None = None, eps: float = 1e-5, head_pad: bool = True,
                 rope: nn.Module | None = None):
        super().__init__()
        if style == "gpt":
            self.ln1, self.ln2 = nn.LayerNorm(hidden, eps=eps), nn.LayerNorm(hidden, eps=eps)
            self.attn = Attention(hidden, heads, kv_heads, bias=True, head_pad=head_pad)
            self.mlp = MLP(hidden, ffn or 4 * hidden)
        else:
            self.ln1, self.ln2 = nn.RMSNorm(hidden, eps=eps), nn.RMSNorm(hidden, eps=eps)
            self.attn = Attention(hidden, heads, kv_heads, bias=False, head_pad=head_pad, rope=rope)
            self.mlp = SwiGLU(hidden, ffn or llama_ffn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Stack(nn.Module):
    """Layers in `blocks`, so compile, checkpointing and sharding treat every workload alike."""

    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


def build(p, device: torch.device, dtype: torch.dtype) -> Workload:
    """The block micro-benchmark. It has no optimizer, so its weights and input are in the
    compute dtype (bf16 means bf16 weights and activations, as in the study)."""
    hidden, heads = p.hidden or 4096, p.heads or 32
    layer = Block(hidden, heads, style=p.style, kv_heads=p.kv_heads, head_pad=p.head_pad)
    model = Stack([layer]).to(device, dtype)
    g = torch.Generator(device=device).manual_seed(p.seed)
    # The input needs a gradient, as a layer inside a model does: else autograd skips the
    # first projection's input-gradient product, which 6N counts.
    xs = [torch.randn(p.micro_batch, p.seq_len, hidden, device=device, dtype=dtype, generator=g)
          .requires_grad_(p.mode == "fwdbwd") for _ in range(2)]
    dy = torch.randn(p.micro_batch, p.seq_len, hidden, device=device, dtype=dtype, generator=g)

    def loss(m, batch):
        y = m(batch[0])
        if p.mode == "fwdbwd":
            # An upstream gradient instead of a scalar loss: no extra reduction in the timing.
            y.backward(dy)
            batch[0].grad = None
        return None

    def batch(i: int) -> tuple:
        return (xs[i % len(xs)],)

    n = count_params(model)
    name = f"block-{p.style}-h{hidden}"
    return Workload(model=model, batch=batch, loss=loss, flop_params=n, total_params=n, layers=1,
                    hidden=hidden, heads=heads, name=name, blocks=list(model.blocks),
                    info={"ffn": model.blocks[0].mlp.proj.in_features if p.style == "gpt"
                          else model.blocks[0].mlp.down.in_features,
                          "kv_heads": p.kv_heads or heads})
