"""Model architectures by name: the numbers from each model's public config.

Shared by the engines (synthetic random-weight models are built from these), the roofline
model and the importer. `param_count` is computed from the shapes, and tests check it against
the published parameter counts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from llmbench.errors import ModelError

Family = Literal["llama", "mistral", "qwen2", "gpt2", "gpt_neox", "mixtral"]


class ModelArch(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    family: Family
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    max_position: int
    tie_embeddings: bool = False
    qkv_bias: bool = False
    rope_theta: float = 10000.0
    rotary_pct: float = 1.0
    norm_eps: float = 1e-5
    num_experts: int = 1
    experts_per_token: int = 1
    public_params: int | None = None     # the count the model's authors publish
    hf_id: str | None = None              # for reference only; never downloaded
    bundled: bool = False                 # weights ship with a package (not synthetic)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def param_count(self) -> int:
        h, L, V = self.hidden, self.layers, self.vocab
        if self.family == "gpt2":
            per_layer = (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) + (2 * h) \
                + (h * self.ffn + self.ffn) + (self.ffn * h + h)
            return V * h + self.max_position * h + L * per_layer + 2 * h
        if self.family == "gpt_neox":
            per_layer = 2 * (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) \
                + (h * self.ffn + self.ffn) + (self.ffn * h + h)
            emb = V * h * (1 if self.tie_embeddings else 2)
            return emb + L * per_layer + 2 * h
        attn = h * h + 2 * h * self.kv_dim + h * h
        if self.qkv_bias:
            attn += h + 2 * self.kv_dim
        mlp = 3 * h * self.ffn * self.num_experts
        router = h * self.num_experts if self.num_experts > 1 else 0
        per_layer = attn + mlp + router + 2 * h
        emb = V * h * (1 if self.tie_embeddings else 2)
        return emb + L * per_layer + h

    def active_param_count(self) -> int:
        """Parameters touched per token (differs from param_count for mixture-of-experts)."""
        if self.num_experts == 1:
            return self.param_count()
        dense = self.param_count() - self.layers * 3 * self.hidden * self.ffn * self.num_experts
        return dense + self.layers * 3 * self.hidden * self.ffn * self.experts_per_token

    def kv_bytes_per_token(self, kv_bytes: float = 2.0) -> float:
        return 2 * self.layers * self.kv_dim * kv_bytes


def _a(**kw) -> ModelArch:
    return ModelArch(**kw)


_ARCHS = [
    _a(name="smollm2-135m", family="llama", layers=30, hidden=576, heads=9, kv_heads=3, ffn=1536,
       vocab=49152, max_position=8192, tie_embeddings=True, rope_theta=100000.0,
       public_params=134_515_008, hf_id="HuggingFaceTB/SmolLM2-135M-Instruct", bundled=True),
    _a(name="llama-2-7b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=32,
       ffn=11008, vocab=32000, max_position=4096, public_params=6_738_415_616,
       hf_id="meta-llama/Llama-2-7b-hf"),
    _a(name="llama-2-13b", family="llama", layers=40, hidden=5120, heads=40, kv_heads=40,
       ffn=13824, vocab=32000, max_position=4096, public_params=13_015_864_320,
       hf_id="meta-llama/Llama-2-13b-hf"),
    _a(name="llama-2-70b", family="llama", layers=80, hidden=8192, heads=64, kv_heads=8,
       ffn=28672, vocab=32000, max_position=4096, public_params=68_976_648_192,
       hf_id="meta-llama/Llama-2-70b-hf"),
    _a(name="llama-3-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
       ffn=14336, vocab=128256, max_position=8192, rope_theta=500000.0,
       public_params=8_030_261_248, hf_id="meta-llama/Meta-Llama-3-8B"),
    _a(name="llama-3-70b", family="llama", layers=80, hidden=8192, heads=64, kv_heads=8,
       ffn=28672, vocab=128256, max_position=8192, rope_theta=500000.0,
       public_params=70_553_706_496, hf_id="meta-llama/Meta-Llama-3-70B"),
    _a(name="mistral-7b", family="mistral", layers=32, hidden=4096, heads=32, kv_heads=8,
       ffn=14336, vocab=32000, max_position=32768, public_params=7_241_732_096,
       hf_id="mistralai/Mistral-7B-v0.1"),
    _a(name="qwen2-7b", family="qwen2", layers=28, hidden=3584, heads=28, kv_heads=4,
       ffn=18944, vocab=152064, max_position=32768, qkv_bias=True, rope_theta=1000000.0,
       norm_eps=1e-6, public_params=7_615_616_512, hf_id="Qwen/Qwen2-7B"),
    _a(name="gpt2-small", family="gpt2", layers=12, hidden=768, heads=12, kv_heads=12, ffn=3072,
       vocab=50257, max_position=1024, tie_embeddings=True, public_params=124_439_808,
       hf_id="gpt2"),
    _a(name="gpt2-medium", family="gpt2", layers=24, hidden=1024, heads=16, kv_heads=16,
       ffn=4096, vocab=50257, max_position=1024, tie_embeddings=True,
       public_params=354_823_168, hf_id="gpt2-medium"),
    _a(name="gpt2-large", family="gpt2", layers=36, hidden=1280, heads=20, kv_heads=20,
       ffn=5120, vocab=50257, max_position=1024, tie_embeddings=True,
       public_params=774_030_080, hf_id="gpt2-large"),
    _a(name="gpt2-xl", family="gpt2", layers=48, hidden=1600, heads=25, kv_heads=25, ffn=6400,
       vocab=50257, max_position=1024, tie_embeddings=True, public_params=1_557_611_200,
       hf_id="gpt2-xl"),
]

CATALOG: dict[str, ModelArch] = {a.name: a for a in _ARCHS}


def register(arch: ModelArch) -> None:
    CATALOG[arch.name] = arch


def get_arch(name: str) -> ModelArch:
    try:
        return CATALOG[name.lower()]
    except KeyError:
        raise ModelError([("model", f"unknown model {name!r}; known: {', '.join(sorted(CATALOG))}"
                                    " (or a path to a local HF directory or .gguf file)")]) from None
