"""GenSLM: GPT-NeoX genome language models over codons, sizes 25M / 250M / 2.5B / 25B.

GPT-NeoX as GenSLM configures it: parallel residual (x + attn(ln1 x) + mlp(ln2 x)), rotary
position embedding on the first quarter of each head (rotary_pct 0.25), GELU MLP of GenSLM's
intermediate size (not 4h: 2048 for 25M and 250M, 4096 for 2.5B), untied input/output
embeddings, vocabulary of 69 codon tokens (codon.py). Parameters are counted on the built model
(the published file names are off for two sizes).
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from llmbench.kinds.training.base import Workload, count_params
from llmbench.kinds.training.codon import VOCAB, codon_tokenizer, encode, random_genes, repeating_genes
from llmbench.kinds.training.data import pool_from_rows
from llmbench.kinds.training.attention import causal_attention
from llmbench.kinds.training.head_loss import LMHead

# (layers, hidden, heads, ffn) per size (GenSLM's neox_<params>.json); used when the model
# catalog has no `genslm-<size>` entry. The 25B model is published with hidden 8196, which does
# not split into 64 heads; 8192 is used.
SHAPES = {"25m": (8, 512, 8, 2048), "250m": (12, 1840, 16, 2048), "2.5b": (28, 3840, 32, 4096),
          "25b": (64, 8192, 64, 8000)}
ROTARY_PCT = 0.25
ROPE_BASE = 10000.0


def shape(size: str) -> tuple[int, int, int, int, float]:
    """(layers, hidden, heads, ffn, rotary_pct): the catalog's entry when there is one."""
    try:
        from llmbench.models.catalog import CATALOG

        a = CATALOG.get(f"genslm-{size}")
    except ImportError:
        a = None
    if a is not None and a.hidden % a.heads == 0:
        return a.layers, a.hidden, a.heads, a.ffn, a.rotary_pct
    return (*SHAPES[size], ROTARY_PCT)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class NeoXAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, rotary_pct: float, max_position: int,
                 head_pad: bool = True):
        super().__init__()
        self.heads, self.head_dim, self.head_pad = heads, hidden // heads, head_pad
        self.rot = int(self.head_dim * rotary_pct) // 2 * 2
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)
        inv_freq = 1.0 / ROPE_BASE ** (torch.arange(0, self.rot, 2, dtype=torch.float32) / self.rot)
        freqs = torch.outer(torch.arange(max_position, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def _rotary(self, t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        tr, tp = t[..., :self.rot], t[..., self.rot:]
        return torch.cat((tr * cos + rotate_half(tr) * sin, tp), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        # NeoX's fused layout: per head [q | k | v]
        q, k, v = self.qkv(x).view(b, s, self.heads, 3 * self.head_dim).transpose(1, 2) \
            .split(self.head_dim, dim=-1)
        cos, sin = self.cos[:s].to(q.dtype), self.sin[:s].to(q.dtype)
        q, k = self._rotary(q, cos, sin), self._rotary(k, cos, sin)
        y = causal_attention(q, k, v, pad=self.head_pad)
        return self.dense(y.transpose(1, 2).reshape(b, s, h))


class NeoXLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, rotary_pct: float, max_position: int,
                 head_pad: bool = True):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = NeoXAttention(hidden, heads, rotary_pct, max_position, head_pad)
        self.fc = nn.Linear(hidden, ffn)
        self.proj = nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(self.ln1(x)) + self.proj(F.gelu(self.fc(self.ln2(x))))


class NeoX(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, max_position: int,
                 ffn: int | None = None, rotary_pct: float = ROTARY_PCT, pad_to: int = 64,
                 loss: str = "full", head_pad: bool = True):
        super().__init__()
        self.vocab = vocab
        self.vocab_padded = pad_to * ((vocab + pad_to - 1) // pad_to)
        self.embed_in = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(NeoXLayer(hidden, heads, ffn or 4 * hidden, rotary_pct,
                                              max_position, head_pad) for _ in range(layers))
        self.head = LMHead(hidden, self.vocab_padded, nn.LayerNorm(hidden), loss)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.embed_in(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x, targets)

    def flop_params(self) -> int:
        """flops.py's N: all but the (untied) input embedding and the vocabulary padding."""
        h = self.embed_in.weight.size(1)
        return count_params(self) - self.embed_in.weight.numel() - (self.vocab_padded - self.vocab) * h


def build(p, device: torch.device, dtype: torch.dtype) -> Workload:
    L, h, a, ffn, rotary_pct = shape(p.size)
    if p.hidden:   # a narrower model for quick runs: the MLP keeps GenSLM's ratio
        ffn = max(8, round(ffn * p.hidden / h))
    L, h, a = p.layers or L, p.hidden or h, p.heads or a
    if h % a:
        raise ValueError(f"hidden {h} does not split into {a} heads")
    with torch.device(device):
        model = NeoX(L, h, a, len(VOCAB), max(p.seq_len, 2048), ffn, rotary_pct, loss=p.loss,
                     head_pad=p.head_pad)
    model.to(dtype)
    tok = codon_tokenizer()
    rng = random.Random(p.seed)
    make = repeating_genes if p.learnable else random_genes

    def rows(_g: torch.Generator) -> torch.Tensor:
        ids = torch.tensor(encode(tok, make(p.micro_batch, p.seq_len + 1, rng)), dtype=torch.long)
        assert ids.shape == (p.micro_batch, p.seq_len + 1), ids.shape
        return ids

    name = f"genslm-{p.size}" + ("" if (L, h, a) == shape(p.size)[:3] else f"-L{L}-h{h}-a{a}")
    return Workload(model=model, batch=pool_from_rows(rows, device, p.seed),
                    loss=lambda m, b: m(*b), flop_params=model.flop_params(),
                    total_params=count_params(model), layers=L, hidden=h, heads=a, name=name,
                    blocks=list(model.blocks),
                    info={"vocab": len(VOCAB), "vocab_padded": model.vocab_padded, "ffn": ffn,
                          "rotary_dims": model.blocks[0].attn.rot, "rotary_pct": rotary_pct})
