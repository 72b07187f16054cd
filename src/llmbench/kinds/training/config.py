"""What a training measurement runs: a sweep of factors (lists) expanding into points.

Imports nothing heavy, so the CLI validates input without torch.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from llmbench.errors import SpecError
from llmbench.kinds.base import Strict, point_key

Workload = Literal["block", "gpt2", "genslm", "llama"]
Precision = Literal["fp32", "tf32", "bf16", "fp8"]
Sparsity = Literal["none", "2:4"]
Parallel = Literal["auto", "ddp", "fsdp"]
AttnBackend = Literal["auto", "flash", "cudnn", "efficient", "math"]
Optimizer = Literal["fused", "foreach", "for-loop"]
Loss = Literal["full", "chunked"]
CompileMode = Literal["default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead"]
CompileScope = Literal["layers", "model"]

# The language models' defaults: the levers that measured best on an H200 (docs/training.md,
# "Levers on and off"); each falls back where a device lacks it (loop.py says so in the record).
DEFAULT_OPTIMIZER: Optimizer = "fused"
DEFAULT_LOSS: Loss = "full"

SIZES: dict[str, tuple[str, ...]] = {
    "block": ("",),
    "gpt2": ("small", "medium", "large", "xl"),
    "genslm": ("25m", "250m", "2.5b", "25b"),
    "llama": ("3.2-1b", "3.2-3b", "3-8b"),      # llama.py: the catalog's Llama shapes
}
DEFAULT_SIZE = {"block": "", "gpt2": "small", "genslm": "25m", "llama": "3.2-1b"}


class TrainPoint(Strict):
    """One measured training configuration."""

    workload: Workload = "gpt2"
    size: str = ""
    # block shape (the language models: overrides of the catalog shape, for quick or tiny runs)
    hidden: int | None = Field(None, ge=8)
    heads: int | None = Field(None, ge=1)
    kv_heads: int | None = Field(None, ge=1, description="block llama style, llama: grouped-query heads")
    layers: int | None = Field(None, ge=1, description="the language models: fewer layers than the size")
    style: Literal["gpt", "llama"] = Field("gpt", description="block: GPT (LayerNorm, GELU) or LLaMA (RMSNorm, SwiGLU, GQA)")
    mode: Literal["train", "fwd", "fwdbwd"] = Field(
        "train", description="block: fwd or fwdbwd (no optimizer); the language models: train (AdamW step)")
    seq_len: int = Field(1024, ge=2)
    micro_batch: int = Field(1, ge=1)
    grad_accum: int = Field(1, ge=1)
    nproc: int = Field(1, ge=1)
    parallel: Parallel = "auto"
    precision: Precision | None = Field(None, description="default: bf16 on CUDA, fp32 on the CPU")
    sparsity: Sparsity = "none"
    compile: bool = False
    activation_checkpointing: bool = False
    attn_backend: AttnBackend = "auto"
    compile_mode: CompileMode = Field("default", description="torch.compile mode (with compile): "
                                      "max-autotune* tune the kernels; reduce-overhead and "
                                      "max-autotune replay CUDA graphs")
    compile_scope: CompileScope = Field("layers", description="torch.compile one graph per layer (and "
                                        "the head's parts), or the whole model as one graph")
    optimizer: Optimizer | None = Field(None, description="the language models: AdamW's implementation "
                                        f"(default {DEFAULT_OPTIMIZER}); the block has none")
    loss: Loss | None = Field(None, description="the language models: full logits, or chunked (the logits "
                              f"a block of tokens at a time; default {DEFAULT_LOSS}); head_loss.py")
    head_pad: bool = Field(True, description="pad attention heads to a multiple of 8 wide for the "
                           "fused kernels (zeros: same result; attention.py)")
    learnable: bool = False
    lr: float = Field(3e-4, gt=0)
    steps: int = Field(10, ge=1, description="timed steps")
    warmup: int = Field(2, ge=1, description="untimed steps; the first one holds compilation")
    device: str = "cpu"
    seed: int = 0
    timeout_s: float | None = Field(None, gt=0, description="per-point time limit (not part of the key)")

    @model_validator(mode="after")
    def _check(self) -> "TrainPoint":
        sizes = SIZES[self.workload]
        if self.workload == "block":
            self.size = ""
        elif not self.size:
            self.size = DEFAULT_SIZE[self.workload]
        if self.workload != "block" and self.size not in sizes:
            raise ValueError(f"size {self.size!r} is not one of {', '.join(sizes)} for {self.workload}")
        if self.workload == "block":
            if self.mode == "train":
                self.mode = "fwdbwd"
            if self.learnable:
                raise ValueError("learnable needs a language model (gpt2, genslm or llama), not block")
            for name in ("optimizer", "loss"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} is for a language model (gpt2, genslm or llama): the block "
                                     "has no optimizer and no LM head")
        elif self.mode != "train":
            raise ValueError(f"mode {self.mode!r} is for the block workload; {self.workload} trains")
        else:
            self.optimizer = self.optimizer or DEFAULT_OPTIMIZER
            self.loss = self.loss or DEFAULT_LOSS
        if self.compile_mode != "default" and not self.compile:
            raise ValueError(f"compile_mode {self.compile_mode!r} needs compile=true")
        if self.compile_scope != "layers" and not self.compile:
            raise ValueError(f"compile_scope {self.compile_scope!r} needs compile=true")
        if self.device != "cpu" and not (self.device == "cuda" or self.device.startswith("cuda:")):
            raise ValueError("device must be 'cpu', 'cuda' or 'cuda:N'")
        if self.precision is None:
            self.precision = "fp32" if self.device == "cpu" else "bf16"
        if self.device == "cpu" and self.precision == "fp8":
            raise ValueError("fp8 needs a CUDA device (and torchao)")
        if self.device == "cpu" and self.sparsity != "none":
            raise ValueError("2:4 sparsity needs a CUDA device of compute capability >= 8.0")
        return self

    @property
    def key(self) -> str:
        # the default compile scope is not in the key: points measured before it existed keep theirs
        skip = {"timeout_s"} | ({"compile_scope"} if self.compile_scope == "layers" else set())
        return point_key(self.model_dump(mode="json", exclude=skip))

    def baseline_key(self, drop: tuple[str, ...]) -> str:
        """Identity of the point with the `drop` fields ignored (for speed-up/scaling baselines)."""
        d = self.model_dump(mode="json", exclude=set(drop) | {"steps", "warmup", "seed", "timeout_s"}
                            | ({"compile_scope"} if self.compile_scope == "layers" else set()))
        return json.dumps(d, sort_keys=True)


_LIST_FIELDS = ("workload", "size", "hidden", "heads", "kv_heads", "layers", "style", "mode",
                "seq_len", "micro_batch", "grad_accum", "nproc", "parallel", "precision",
                "sparsity", "compile", "activation_checkpointing", "attn_backend", "compile_mode", "compile_scope",
                "optimizer", "loss", "head_pad")


class TrainSweep(Strict):
    """Every factor may be a list; the sweep is their Cartesian product."""

    axes: dict[str, list[Any]] = Field(default_factory=dict)
    fixed: dict[str, Any] = Field(default_factory=dict)

    def points(self) -> list[TrainPoint]:
        bad = [k for k in self.axes if k not in _LIST_FIELDS]
        if bad:
            raise SpecError([(k, f"not a sweepable factor (sweepable: {', '.join(_LIST_FIELDS)})") for k in bad])
        keys = list(self.axes)
        out: list[TrainPoint] = []
        problems: list[tuple[str, str]] = []
        for combo in itertools.product(*(self.axes[k] for k in keys)):
            d = {**self.fixed, **dict(zip(keys, combo))}
            try:
                out.append(TrainPoint(**d))
            except ValidationError as e:
                for err in e.errors():
                    loc = ".".join(str(p) for p in err["loc"]) or "point"
                    msg = err["msg"].removeprefix("Value error, ")
                    problems.append((loc, f"{msg} (in {_short(d)})"))
        if problems:
            raise SpecError(list(dict.fromkeys(problems)))
        # baselines first: 1 device before N, dense before sparse
        out.sort(key=lambda p: (p.nproc, p.sparsity != "none"))
        return out


def _short(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items() if k in _LIST_FIELDS)
