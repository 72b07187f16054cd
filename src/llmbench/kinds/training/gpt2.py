"""GPT-2 (small/medium/large/xl), compact, in nanoGPT's spirit, for training steps.

Shapes come from `llmbench.models.catalog` ('gpt2-small' ...). The vocabulary is padded from
50257 to a multiple of 64 (50304) so the LM-head matrix product runs on full tiles; FLOPs are
counted on the unpadded model (flops.py).
"""

from __future__ import annotations

import torch
from torch import nn

from llmbench.kinds.training.base import Workload, count_params
from llmbench.kinds.training.block import Block
from llmbench.kinds.training.data import token_batches
from llmbench.kinds.training.head_loss import LMHead


class GPT(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, max_position: int,
                 pad_to: int = 64, loss: str = "full", head_pad: bool = True):
        super().__init__()
        self.vocab = vocab
        self.vocab_padded = pad_to * ((vocab + pad_to - 1) // pad_to)
        self.wte = nn.Embedding(self.vocab_padded, hidden)
        self.wpe = nn.Embedding(max_position, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, style="gpt", head_pad=head_pad)
                                    for _ in range(layers))
        self.head = LMHead(hidden, self.vocab_padded, nn.LayerNorm(hidden), loss)
        self.head.proj.weight = self.wte.weight          # tied, as GPT-2
        self.apply(self._init)
        for name, p in self.named_parameters():          # GPT-2's scaled residual init
            if name.endswith("proj.weight") and "blocks" in name:
                nn.init.normal_(p, mean=0.0, std=0.02 / (2 * layers) ** 0.5)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.head(x, targets)

    def flop_params(self) -> int:
        """flops.py's N: all parameters but the position table and the vocabulary padding."""
        n = count_params(self) - self.wpe.weight.numel()
        return n - (self.vocab_padded - self.vocab) * self.wte.weight.size(1)


def build(p, device: torch.device, dtype: torch.dtype) -> Workload:
    from llmbench.models.catalog import get_arch

    arch = get_arch(f"gpt2-{p.size}")
    layers, hidden, heads = p.layers or arch.layers, p.hidden or arch.hidden, p.heads or arch.heads
    if p.seq_len > arch.max_position:
        raise ValueError(f"seq_len {p.seq_len} exceeds GPT-2's {arch.max_position} positions")
    with torch.device(device):
        model = GPT(layers, hidden, heads, arch.vocab, arch.max_position, loss=p.loss,
                    head_pad=p.head_pad)
    model.to(dtype)
    batches = token_batches(arch.vocab, p.micro_batch, p.seq_len, device, p.seed, p.learnable)
    name = arch.name if (layers, hidden, heads) == (arch.layers, arch.hidden, arch.heads) \
        else f"{arch.name}-L{layers}-h{hidden}-a{heads}"
    return Workload(model=model, batch=batches, loss=lambda m, b: m(*b),
                    flop_params=model.flop_params(), total_params=count_params(model),
                    layers=layers, hidden=hidden, heads=heads, name=name,
                    blocks=list(model.blocks),
                    info={"vocab": arch.vocab, "vocab_padded": model.vocab_padded,
                          "catalog_params": arch.param_count()})
