"""A Llama-class language model for training steps: token embedding, LLaMA layers (RMSNorm,
rotary positions, grouped-query attention, SwiGLU; block.py), final RMSNorm and LM head.

Shapes come from `llmbench.models.catalog` ('llama-3.2-1b', 'llama-3.2-3b', 'llama-3-8b').
`--layers` runs fewer layers of the same width where memory requires; the record's model
name then says so (`llama-3-8b-L8`). `--hidden/--heads/--kv-heads` shrink the width for tiny
runs (the MLP keeps the catalog's ffn/hidden ratio; name `llama-3.2-1b-L2-h64-a4-kv2`). Llama 3.2's small models tie the head to the embedding,
Llama 3-8B does not. FLOPs follow flops.py: N is every parameter but an untied embedding table
(a lookup, no product); a tied table is counted once, as the head.
"""

from __future__ import annotations

import torch
from torch import nn

from llmbench.kinds.training.base import Workload, count_params
from llmbench.kinds.training.block import Block
from llmbench.kinds.training.data import token_batches
from llmbench.kinds.training.head_loss import LMHead
from llmbench.kinds.training.rope import Rope

SIZES = {"3.2-1b": "llama-3.2-1b", "3.2-3b": "llama-3.2-3b", "3-8b": "llama-3-8b"}


class Llama(nn.Module):
    def __init__(self, *, layers: int, hidden: int, heads: int, kv_heads: int, ffn: int,
                 vocab: int, seq_len: int, rope_theta: float, tie: bool, eps: float = 1e-5,
                 loss: str = "full", head_pad: bool = True):
        super().__init__()
        self.vocab, self.tied = vocab, tie
        self.tok = nn.Embedding(vocab, hidden)
        # one rotary table per layer: each layer is its own compile/checkpoint/FSDP unit
        self.blocks = nn.ModuleList(
            Block(hidden, heads, style="llama", kv_heads=kv_heads, ffn=ffn, eps=eps,
                  head_pad=head_pad, rope=Rope(hidden // heads, seq_len, rope_theta))
            for _ in range(layers))
        self.head = LMHead(hidden, vocab, nn.RMSNorm(hidden, eps=eps), loss)
        if tie:
            self.head.proj.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x, targets)

    def flop_params(self) -> int:
        """flops.py's N: all parameters but an untied embedding table."""
        n = count_params(self)
        return n if self.tied else n - self.tok.weight.numel()


def build(p, device: torch.device, dtype: torch.dtype) -> Workload:
    from llmbench.models.catalog import get_arch

    arch = get_arch(SIZES[p.size])
    layers, hidden = p.layers or arch.layers, p.hidden or arch.hidden
    heads, kv_heads = p.heads or arch.heads, p.kv_heads or arch.kv_heads
    ffn = arch.ffn if hidden == arch.hidden else arch.ffn * hidden // arch.hidden
    if p.seq_len > arch.max_position:
        raise ValueError(f"seq_len {p.seq_len} exceeds {arch.name}'s {arch.max_position} positions")
    with torch.device(device):
        model = Llama(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                      ffn=ffn, vocab=arch.vocab, seq_len=p.seq_len, rope_theta=arch.rope_theta,
                      tie=arch.tie_embeddings, eps=arch.norm_eps, loss=p.loss, head_pad=p.head_pad)
    model.to(dtype)
    batches = token_batches(arch.vocab, p.micro_batch, p.seq_len, device, p.seed, p.learnable)
    name = arch.name + (f"-L{layers}" if layers != arch.layers else "") + \
        (f"-h{hidden}-a{heads}-kv{kv_heads}" if (hidden, heads, kv_heads) !=
         (arch.hidden, arch.heads, arch.kv_heads) else "")
    return Workload(model=model, batch=batches, loss=lambda m, b: m(*b),
                    flop_params=model.flop_params(), total_params=count_params(model),
                    layers=layers, hidden=hidden, heads=heads, name=name,
                    blocks=list(model.blocks),
                    info={"vocab": arch.vocab, "kv_heads": kv_heads, "ffn": ffn,
                          "tied_embeddings": arch.tie_embeddings, "catalog_layers": arch.layers,
                          "catalog_params": arch.param_count()})
