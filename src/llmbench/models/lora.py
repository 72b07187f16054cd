"""Random LoRA adapters of a base model, made locally in the engines' formats.

An adapter's cost to a server depends on its rank and the modules it covers, not on its values,
so benchmarks use random low-rank weights: A ~ N(0, std), B ~ N(0, std) (or B = 0, the adapter
whose output is the base model's exactly: the known answer). Two forms of the same adapter:
- PEFT (adapter_config.json + adapter_model.safetensors), read by vLLM and SGLang;
- GGUF LoRA, read by llama.cpp: general.type=adapter, adapter.type=lora, adapter.lora.alpha,
  tensors `blk.N.<gguf name>.weight.lora_a` (rank x in) and `.lora_b` (out x rank), with the
  q/k rows of B permuted as llama.cpp's converter permutes the base's q/k (convert_hf_to_gguf).
Both are cached under cache_dir()/adapters by everything that makes them differ, and reused.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llmbench.cache import atomic_dir
from llmbench.errors import ModelError, did_you_mean

if TYPE_CHECKING:   # numpy only where weights are drawn: engines' options import this module
    import numpy as np

WRITER_VERSION = 1
# PEFT module name -> (GGUF tensor name, (in, out) from the HF config).
MODULES = {
    "q_proj": ("attn_q", lambda c: (c["hidden_size"], c["num_attention_heads"] * _head_dim(c))),
    "k_proj": ("attn_k", lambda c: (c["hidden_size"], c["num_key_value_heads"] * _head_dim(c))),
    "v_proj": ("attn_v", lambda c: (c["hidden_size"], c["num_key_value_heads"] * _head_dim(c))),
    "o_proj": ("attn_output", lambda c: (c["num_attention_heads"] * _head_dim(c), c["hidden_size"])),
    "gate_proj": ("ffn_gate", lambda c: (c["hidden_size"], c["intermediate_size"])),
    "up_proj": ("ffn_up", lambda c: (c["hidden_size"], c["intermediate_size"])),
    "down_proj": ("ffn_down", lambda c: (c["intermediate_size"], c["hidden_size"])),
}
_STD = 0.02     # the usual init scale (the delta is alpha/rank * B @ A: raise alpha to move tokens more)


class AdapterSpec(BaseModel):
    """One random adapter: what it covers and how it is drawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rank: int = Field(8, ge=1, le=512)
    modules: tuple[str, ...] = ("q_proj", "v_proj")
    alpha: float = Field(16.0, gt=0)
    seed: int = 0
    zero_b: bool = False        # B = 0: the adapter changes nothing (the base's output exactly)

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for m in v:
            if m not in MODULES:
                raise ValueError(f"unknown module {m!r}{did_you_mean(m, MODULES)}; "
                                 f"known: {', '.join(MODULES)}")
        if not v:
            raise ValueError("an adapter covers at least one module")
        return tuple(sorted(set(v), key=list(MODULES).index))

    def tag(self) -> str:
        mods = "-".join(MODULES[m][0].replace("attn_", "").replace("ffn_", "") for m in self.modules)
        return (f"r{self.rank}-a{self.alpha:g}-{mods}-s{self.seed}"
                f"{'-zerob' if self.zero_b else ''}-v{WRITER_VERSION}")


class LoraSet(BaseModel):
    """The adapters a launched server loads for the lora request shape: `adapters` random
    adapters served as prefix+i (adapter i drawn from seed i, so each differs), at most
    `max_loras` of them active at once (None: all; fewer forces the server to swap)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    adapters: int = Field(ge=1, le=4096)
    prefix: str = "lora"
    rank: int = Field(8, ge=1, le=512)
    alpha: float = Field(16.0, gt=0)
    modules: tuple[str, ...] = ("q_proj", "v_proj")
    zero_b: int = Field(0, ge=0)      # the first zero_b adapters have B = 0 (answer as the base)
    max_loras: int | None = Field(None, ge=1)

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return AdapterSpec._known_modules(v)

    @field_validator("max_loras", "zero_b")
    @classmethod
    def _at_most_all(cls, v: int | None, info) -> int | None:
        n = info.data.get("adapters")
        if v is not None and n is not None and v > n:
            raise ValueError(f"{info.field_name} {v} is more than the {n} adapters")
        return v

    def named(self) -> list[tuple[str, AdapterSpec]]:
        """(served name, adapter) for every adapter, in index order."""
        return [(f"{self.prefix}{i}", AdapterSpec(rank=self.rank, alpha=self.alpha, modules=self.modules,
                                                  seed=i, zero_b=i < self.zero_b))
                for i in range(self.adapters)]


def _head_dim(cfg: dict) -> int:
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def adapter_weights(cfg: dict, spec: AdapterSpec) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    """(layer, module) -> (A: rank x in, B: out x rank) in float32, drawn from spec.seed in a
    fixed order so both formats hold the same adapter."""
    import numpy as np

    rng = np.random.default_rng(spec.seed)
    out = {}
    for layer in range(cfg["num_hidden_layers"]):
        for m in spec.modules:
            d_in, d_out = MODULES[m][1](cfg)
            a = rng.normal(0, _STD, (spec.rank, d_in)).astype(np.float32)
            b = rng.normal(0, _STD, (d_out, spec.rank)).astype(np.float32)
            out[layer, m] = (a, np.zeros_like(b) if spec.zero_b else b)
    return out


def _read_config(base_hf: Path) -> dict:
    path = Path(base_hf) / "config.json"
    if not path.is_file():
        raise ModelError([("adapter base", f"{base_hf} has no config.json (an HF model directory)")])
    cfg = json.loads(path.read_text())
    if cfg.get("model_type") not in ("llama", "mistral", "qwen2"):
        raise ModelError([("adapter base", f"random adapters are written for llama-like models "
                                           f"(q/k/v/o, gate/up/down); {cfg.get('model_type')!r} is not one")])
    return cfg


def peft_adapter(base_hf: Path, spec: AdapterSpec) -> Path:
    """The cached PEFT adapter directory for the HF model at base_hf (written first if absent)."""
    base_hf = Path(base_hf)
    target = _cache(base_hf) / f"peft-{spec.tag()}"
    if (target / "adapter_model.safetensors").is_file():
        return target
    cfg = _read_config(base_hf)
    atomic_dir(target, lambda d: _write_peft(d, cfg, spec, base_hf), "adapter_model.safetensors")
    return target


def _write_peft(d: Path, cfg: dict, spec: AdapterSpec, base_hf: Path) -> None:
    from safetensors.numpy import save_file

    tensors = {}
    for (layer, m), (a, b) in adapter_weights(cfg, spec).items():
        group = "self_attn" if m in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        prefix = f"base_model.model.model.layers.{layer}.{group}.{m}"
        tensors[f"{prefix}.lora_A.weight"] = a
        tensors[f"{prefix}.lora_B.weight"] = b
    save_file(tensors, str(d / "adapter_model.safetensors"))
    (d / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": str(base_hf),
        "r": spec.rank, "lora_alpha": spec.alpha, "lora_dropout": 0.0, "bias": "none",
        "target_modules": list(spec.modules), "fan_in_fan_out": False, "inference_mode": True,
    }, indent=1))


def gguf_adapter(base_hf: Path, spec: AdapterSpec) -> Path:
    """The cached GGUF LoRA (llama.cpp) of the same adapter peft_adapter writes; base_hf gives
    the shapes (the GGUF base must be the same model)."""
    base_hf = Path(base_hf)
    target = _cache(base_hf) / f"gguf-{spec.tag()}.gguf"
    if target.is_file():
        return target
    cfg = _read_config(base_hf)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
    os.close(fd)
    try:
        _write_gguf(Path(tmp), cfg, spec)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order (convert_hf_to_gguf LlamaModel.permute) applied to B's rows."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _write_gguf(path: Path, cfg: dict, spec: AdapterSpec) -> None:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(spec.alpha))
    heads = {"q_proj": cfg["num_attention_heads"], "k_proj": cfg["num_key_value_heads"]}
    for (layer, m), (a, b) in adapter_weights(cfg, spec).items():
        if m in heads:
            b = _permute_rows(b, heads[m])
        name = f"blk.{layer}.{MODULES[m][0]}.weight"
        w.add_tensor(f"{name}.lora_a", a)
        w.add_tensor(f"{name}.lora_b", np.ascontiguousarray(b))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _cache(base_hf: Path) -> Path:
    from llmbench.cache import cache_dir

    return cache_dir() / "adapters" / base_hf.name
