"""Rotary position embedding as LLaMA applies it (the rotate-half form of Hugging Face's
Llama and torchtitan's real-valued equivalent): each head's first and second halves are the
two coordinates of head_dim/2 rotations whose angles are position x theta^(-2i/head_dim).

Llama 3.1/3.2's "llama3" frequency scaling changes the angles of long wavelengths only, not a
single FLOP, so it is left out (a throughput benchmark, not a checkpoint loader)."""

from __future__ import annotations

import torch
from torch import nn


class Rope(nn.Module):
    def __init__(self, head_dim: int, max_seq: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float32), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)              # [seq, head_dim]
        # buffers (moved with the model), not parameters, and not saved: rebuilt from the shape
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [batch, heads, seq, head_dim] -> rotated, in x's dtype."""
        s = x.size(-2)
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        a, b = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-b, a], dim=-1) * sin
