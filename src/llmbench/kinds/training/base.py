"""What the timing loop needs from a workload: a model, batches and a step's loss."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Workload:
    model: Any                                  # torch.nn.Module
    batch: Callable[[int], tuple]               # micro-step index -> inputs on the device
    loss: Callable[[Any, tuple], Any]           # (model, batch) -> scalar loss (or block output)
    flop_params: int                            # N of flops.py (counted on the built model)
    total_params: int
    layers: int
    hidden: int
    heads: int
    name: str                                   # catalog-style model name
    blocks: list = field(default_factory=list)  # the repeated layers (compile/AC/FSDP units)
    info: dict[str, Any] = field(default_factory=dict)


def count_params(module) -> int:
    return sum(p.numel() for p in module.parameters())
