"""The language models' loss: final norm, output projection and cross-entropy, two ways.

- `full`: the logits of every token in the compute dtype, then cross-entropy in fp32: the whole
  [tokens x vocabulary] matrix lives in memory twice (bf16 and its fp32 copy) and its softmax
  is saved for the backward pass. GPT-2 XL at micro-batch 16: 16,384 x 50,304 logits.
- `chunked`: the same loss and the same gradients, a block of tokens at a time: each block's
  logits, its softmax and the gradient they give are made and used at once, so the full logits
  never exist (the idea of Liger-Kernel's fused linear cross-entropy, here in plain PyTorch ops
  so it runs on any accelerator). The gradients are computed in the forward pass, while the
  block's logits are at hand; the backward pass only scales them by the incoming gradient.
  The three matrix products per token are the ones `full` does, so FLOPs are unchanged.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

LOGIT_BLOCK_ELEMENTS = 2**28   # fp32 logits of one block: 1 GiB


def block_rows(tokens: int, vocab: int) -> int:
    """Rows per block: the largest even split of `tokens` whose logits fit the budget (an even
    split keeps every block one shape, so a compiled block function compiles once)."""
    most = max(1, LOGIT_BLOCK_ELEMENTS // vocab)
    parts = -(-tokens // most)
    while tokens % parts:
        parts += 1
    return tokens // parts


def loss_block(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor, scale: torch.Tensor):
    """(summed loss x scale, d loss/d x, d loss/d w) of one block; `scale` = 1 / tokens."""
    acc = torch.promote_types(x.dtype, torch.float32)   # bf16 in, fp32 softmax; fp64 stays
    logits = (x @ w.t()).to(acc)
    lse = torch.logsumexp(logits, dim=-1)
    idx = t.unsqueeze(1)
    loss = (lse - logits.gather(1, idx).squeeze(1)).sum() * scale
    grad = torch.exp(logits - lse.unsqueeze(1))             # softmax ...
    grad.scatter_add_(1, idx, torch.full_like(idx, -1, dtype=grad.dtype))   # ... minus one-hot
    grad = (grad * scale).to(x.dtype)
    return loss, grad @ w, (grad.t() @ x).to(acc)


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, t, block: Callable):
        n = x.size(0)
        rows = block_rows(n, w.size(0))
        acc = torch.promote_types(x.dtype, torch.float32)
        scale = torch.tensor(1.0 / n, device=x.device, dtype=acc)
        loss = torch.zeros((), device=x.device, dtype=acc)
        gx = torch.empty_like(x)
        gw = torch.zeros(w.shape, device=w.device, dtype=acc)
        for s in range(0, n, rows):
            l, gx[s:s + rows], g = block(x[s:s + rows], w, t[s:s + rows], scale)
            loss += l
            gw += g
        ctx.save_for_backward(gx, gw)
        ctx.w_dtype = w.dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        gx, gw = ctx.saved_tensors
        return gx * g.to(gx.dtype), (gw * g).to(ctx.w_dtype), None, None


class LMHead(nn.Module):
    """Final norm, output projection (weight possibly tied to the embedding) and the mean
    cross-entropy over all tokens (every target is a real token: no ignore index)."""

    def __init__(self, hidden: int, vocab_padded: int, norm: nn.Module, loss: str = "full"):
        super().__init__()
        if loss not in ("full", "chunked"):
            raise ValueError(f"loss must be 'full' or 'chunked', not {loss!r}")
        self.norm = norm
        self.proj = nn.Linear(hidden, vocab_padded, bias=False)
        self.loss = loss
        self._block = loss_block

    def compile_parts(self, **kw) -> None:
        """`full`: the whole head is one graph. `chunked`: the norm and the block function are
        compiled; the loop over blocks and its autograd function stay in Python."""
        if self.loss == "full":
            self.compile(**kw)
        else:
            self.norm.compile(**kw)
            self._block = torch.compile(loss_block, **kw)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        if self.loss == "full":
            logits = self.proj(h)
            return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))
        dev = h.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else h.dtype
        with torch.autocast(dev, enabled=False):
            return _LinearCrossEntropy.apply(h.reshape(-1, h.size(-1)).to(dtype),
                                             self.proj.weight.to(dtype), targets.reshape(-1),
                                             self._block)
