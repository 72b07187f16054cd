"""Causal attention through `scaled_dot_product_attention`, with the head width padded where
the fused kernels need it.

Flash and cuDNN attention take head widths that are multiples of 8; GenSLM-250M's heads are
115 wide (1840 / 16), which sends SDPA to its unfused math kernel (the full s x s score matrix
in memory). Padding q, k and v with zero columns to 120 changes nothing in the result: the zeros
add nothing to q.k, the scale stays 1/sqrt(115), and v's zero columns give output columns that
are sliced off. The padded work is real time but is not counted as FLOPs (flops.py counts the
model's own head width).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

HEAD_MULTIPLE = 8   # flash / cuDNN attention: head width a multiple of 8


def padded_width(head_dim: int, pad: bool) -> int:
    """The head width the kernel sees."""
    if not pad or head_dim % HEAD_MULTIPLE == 0:
        return head_dim
    return head_dim + HEAD_MULTIPLE - head_dim % HEAD_MULTIPLE


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, pad: bool,
                     enable_gqa: bool = False) -> torch.Tensor:
    d = q.size(-1)
    width = padded_width(d, pad)
    if width == d:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=enable_gqa)
    q, k, v = (F.pad(t, (0, width - d)) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=d ** -0.5,
                                       enable_gqa=enable_gqa)
    return y[..., :d]
