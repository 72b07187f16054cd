"""2:4 semi-structured sparsity of the layers' linear weights, for training.

Each forward prunes the dense weight to 2 of every 4 (largest magnitudes, in a pattern that is
2:4 in both the weight and its transpose) and multiplies through PyTorch's semi-structured
kernels (cuSPARSELt, else CUTLASS); the forward and the input-gradient products run sparse.
The weight gradient is dense and flows to all weights (straight-through), as torchao's
runtime-sparse training does. Needs a CUDA GPU of compute capability >= 8.0 and fp16/bf16
compute. FLOPs are still counted dense: the speed-up shows as throughput.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def backend_class():
    from torch.sparse import SparseSemiStructuredTensorCUSPARSELT, SparseSemiStructuredTensorCUTLASS

    if torch.backends.cusparselt.is_available():
        return SparseSemiStructuredTensorCUSPARSELT
    return SparseSemiStructuredTensorCUTLASS


class _Sparsify(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w: torch.Tensor) -> torch.Tensor:
        return backend_class().prune_dense_static_sort(w)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


class SemiSparseLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dt = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else self.weight.dtype
        w = _Sparsify.apply(self.weight.to(dt))
        b = None if self.bias is None else self.bias.to(dt)
        with torch.autocast("cuda", enabled=False):
            return F.linear(x.to(dt).contiguous(), w, b)


def check_supported(device: torch.device) -> None:
    if device.type != "cuda" or torch.cuda.get_device_capability(device) < (8, 0):
        raise ValueError("2:4 semi-structured sparsity needs a CUDA GPU of compute capability >= 8.0")


def sparsify_linears(blocks: nn.ModuleList) -> int:
    """Turn every nn.Linear inside the layers into SemiSparseLinear (same parameters)."""
    n = 0
    for blk in blocks:
        for m in blk.modules():
            if type(m) is nn.Linear and m.in_features % 64 == 0 and m.out_features % 64 == 0:
                m.__class__ = SemiSparseLinear
                n += 1
    return n
