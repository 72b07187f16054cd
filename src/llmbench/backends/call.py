"""The engine call: what a backend is asked to run, and nothing of the kind that asks.

A kind builds it from its own point (kinds/inference: `Point.engine_call`); a backend reads
only this, so backends/ imports no kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from llmbench.backends.options import EngineOptions


@dataclass(frozen=True)
class EngineCall:
    model: str                                   # a model reference (catalog name, path ...)
    workload: Literal["offline", "perplexity"] = "offline"
    device: str = "cpu"
    dtype: str = "auto"                          # auto|fp32|fp16|bf16
    batch_size: int = 1                          # sequences decoded together
    input_len: int = 32                          # prompt tokens per sequence
    output_len: int = 32                         # generated tokens per sequence
    options: EngineOptions = field(default_factory=EngineOptions)
    backend_options: dict[str, Any] = field(default_factory=dict)  # the backend's own Options
    warmups: int = 1                             # untimed runs before the measured ones
    seed: int = 0                                # random weights and prompts
    context_len: int | None = None               # perplexity: the scoring window's length

    @property
    def devices(self) -> int:
        """Devices the engine spreads over (tensor x pipeline parallel)."""
        return self.options.tensor_parallel * self.options.pipeline_parallel
