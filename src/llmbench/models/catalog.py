"""Model architectures by name: the numbers from each model's public config.

Shared by the engines (synthetic random-weight models are built from these), the roofline
model and the importer. `param_count` is computed from the shapes, and tests check it against
the published parameter counts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from llmbench.errors import ModelError, did_you_mean

Family = Literal["llama", "mistral", "qwen2", "gpt2", "gpt_neox", "mixtral",
                 # below: counted here for the roofline and importer; no synthetic HF config yet
                 "gemma", "gptj", "opt", "bloom", "deci"]


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
    head_dim_override: int | None = None  # where head_dim != hidden / heads (Gemma)

    @property
    def head_dim(self) -> int:
        return self.head_dim_override or self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    def param_count(self) -> int:
        h, L, V = self.hidden, self.layers, self.vocab
        if self.family in ("gemma", "gptj", "opt", "bloom"):
            return _other_param_count(self)
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
    # Llama 3.2's small models: tied embeddings, GQA 4:1 (public counts: the model cards)
    _a(name="llama-3.2-1b", family="llama", layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192,
       vocab=128256, max_position=131072, tie_embeddings=True, rope_theta=500000.0,
       public_params=1_235_814_400, hf_id="meta-llama/Llama-3.2-1B"),
    _a(name="llama-3.2-3b", family="llama", layers=28, hidden=3072, heads=24, kv_heads=8, ffn=8192,
       vocab=128256, max_position=131072, tie_embeddings=True, rope_theta=500000.0,
       public_params=3_212_749_824, hf_id="meta-llama/Llama-3.2-3B"),
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

# Models the LLM-Inference-Bench data names, and the training study's GenSLM sizes
# (GenSLM: github.com/ramanathanlab/genslm genslm/architectures/neox/neox_<params>.json, whose
# file names are the parameter counts).
_ARCHS += [
    _a(name="mistral-7b-v0.3", family="mistral", layers=32, hidden=4096, heads=32, kv_heads=8,
       ffn=14336, vocab=32768, max_position=32768, rope_theta=1000000.0,
       public_params=7_248_023_552, hf_id="mistralai/Mistral-7B-v0.3"),
    _a(name="mixtral-8x7b", family="mixtral", layers=32, hidden=4096, heads=32, kv_heads=8,
       ffn=14336, vocab=32000, max_position=32768, rope_theta=1000000.0, num_experts=8,
       experts_per_token=2, public_params=46_702_792_704, hf_id="mistralai/Mixtral-8x7B-v0.1"),
    _a(name="qwen-7b", family="qwen2", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008,
       vocab=151936, max_position=8192, qkv_bias=True, norm_eps=1e-6,
       public_params=7_721_324_544, hf_id="Qwen/Qwen-7B"),
    _a(name="qwen1.5-7b", family="qwen2", layers=32, hidden=4096, heads=32, kv_heads=32,
       ffn=11008, vocab=151936, max_position=32768, qkv_bias=True, rope_theta=1000000.0,
       norm_eps=1e-6, public_params=7_721_324_544, hf_id="Qwen/Qwen1.5-7B"),
    _a(name="qwen2-72b", family="qwen2", layers=80, hidden=8192, heads=64, kv_heads=8,
       ffn=29568, vocab=152064, max_position=131072, qkv_bias=True, rope_theta=1000000.0,
       norm_eps=1e-6, public_params=72_706_203_648, hf_id="Qwen/Qwen2-72B"),
    # DeciLM-7B has variable GQA (a per-layer KV-head list); kv_heads=2 is the uniform value
    # that reproduces its published 7.04B parameters, hence its weight and KV-cache bytes.
    _a(name="decilm-7b", family="deci", layers=32, hidden=4096, heads=32, kv_heads=2,
       ffn=14336, vocab=32000, max_position=8192, public_params=7_040_000_000,
       hf_id="Deci/DeciLM-7B"),
    _a(name="llama-7b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008,
       vocab=32000, max_position=2048, public_params=6_738_415_616, hf_id="huggyllama/llama-7b"),
    _a(name="llama-13b", family="llama", layers=40, hidden=5120, heads=40, kv_heads=40,
       ffn=13824, vocab=32000, max_position=2048, public_params=13_015_864_320,
       hf_id="huggyllama/llama-13b"),
    _a(name="aquila-7b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=32,
       ffn=11008, vocab=100008, max_position=2048, hf_id="BAAI/Aquila-7B"),
    _a(name="gemma-7b", family="gemma", layers=28, hidden=3072, heads=16, kv_heads=16,
       head_dim_override=256, ffn=24576, vocab=256000, max_position=8192, tie_embeddings=True,
       norm_eps=1e-6, public_params=8_537_680_896, hf_id="google/gemma-7b"),
    _a(name="gemma-1.1-7b", family="gemma", layers=28, hidden=3072, heads=16, kv_heads=16,
       head_dim_override=256, ffn=24576, vocab=256000, max_position=8192, tie_embeddings=True,
       norm_eps=1e-6, public_params=8_537_680_896, hf_id="google/gemma-1.1-7b-it"),
    _a(name="opt-6.7b", family="opt", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=16384,
       vocab=50272, max_position=2050, tie_embeddings=True, public_params=6_658_473_984,
       hf_id="facebook/opt-6.7b"),
    _a(name="opt-13b", family="opt", layers=40, hidden=5120, heads=40, kv_heads=40, ffn=20480,
       vocab=50272, max_position=2050, tie_embeddings=True, public_params=12_852_855_808,
       hf_id="facebook/opt-13b"),
    _a(name="gpt-j-6b", family="gptj", layers=28, hidden=4096, heads=16, kv_heads=16, ffn=16384,
       vocab=50400, max_position=2048, rotary_pct=0.25, public_params=6_053_381_344,
       hf_id="EleutherAI/gpt-j-6b"),
    _a(name="bloom-7b1", family="bloom", layers=30, hidden=4096, heads=32, kv_heads=32,
       ffn=16384, vocab=250880, max_position=2048, tie_embeddings=True,
       public_params=7_069_016_064, hf_id="bigscience/bloom-7b1"),
    _a(name="genslm-25m", family="gpt_neox", layers=8, hidden=512, heads=8, kv_heads=8, ffn=2048,
       vocab=69, max_position=2048, rotary_pct=0.25, public_params=25_290_752),
    # 250M and 25B: the counts in their config file names (244,464,576 and 25,076,188,032)
    # do not follow from the configs themselves (+3.7%, +2.1%), so no public count is claimed.
    _a(name="genslm-250m", family="gpt_neox", layers=12, hidden=1840, heads=16, kv_heads=16,
       ffn=2048, vocab=69, max_position=2048, rotary_pct=0.25),
    _a(name="genslm-2.5b", family="gpt_neox", layers=28, hidden=3840, heads=32, kv_heads=32,
       ffn=4096, vocab=69, max_position=2048, rotary_pct=0.25, public_params=2_533_931_008),
    # hidden 8196 is not a multiple of 64 heads (as published); head_dim rounds down to 128.
    _a(name="genslm-25b", family="gpt_neox", layers=64, hidden=8196, heads=64, kv_heads=64,
       ffn=8000, vocab=69, max_position=2048, rotary_pct=0.25),
]


def _other_param_count(a: ModelArch) -> int:
    """Families whose layer shapes differ from the llama/gpt2/neox formulas above."""
    h, L, V, f = a.hidden, a.layers, a.vocab, a.ffn
    emb = V * h * (1 if a.tie_embeddings else 2)
    if a.family == "gemma":  # GeGLU MLP (3 matrices), RMSNorm, q/o of heads*head_dim
        attn = 2 * h * a.q_dim + 2 * h * a.kv_dim
        return emb + L * (attn + 3 * h * f + 2 * h) + h
    if a.family == "gptj":  # one LayerNorm per block, no attention biases, lm_head with bias
        per_layer = 2 * h + 4 * h * h + (h * f + f) + (f * h + h)
        return emb + V + L * per_layer + 2 * h
    if a.family == "opt":  # learned positions (2 offset slots included in max_position)
        per_layer = 4 * h + (4 * h * h + 4 * h) + (h * f + f) + (f * h + h)
        return emb + a.max_position * h + L * per_layer + 2 * h
    if a.family == "bloom":  # ALiBi (no position table), LayerNorm after the embedding
        per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)
        return emb + 2 * h + L * per_layer + 2 * h
    raise ValueError(a.family)


CATALOG: dict[str, ModelArch] = {a.name: a for a in _ARCHS}


def register(arch: ModelArch) -> None:
    CATALOG[arch.name] = arch


#: Architectures read from local models (HF config.json, GGUF metadata) in this process, by
#: their lower-case model name; kept apart from CATALOG, which lists what llmbench ships.
LOCAL: dict[str, ModelArch] = {}


def register_local(arch: ModelArch) -> None:
    LOCAL[arch.name.lower()] = arch


def get_arch(name: str) -> ModelArch:
    try:
        return CATALOG[name.lower()] if name.lower() in CATALOG else LOCAL[name.lower()]
    except KeyError:
        raise ModelError([("model", f"unknown model {name!r}{did_you_mean(name, CATALOG)}; known: "
                                    f"{', '.join(sorted(CATALOG))} (or a path to a local HF "
                                    "directory or .gguf file, or a Hugging Face id in the local "
                                    "cache)")]) from None


# Labels other tools and data sets use for catalog models (lower-case). Every entry's hf_id
# is an alias too. Fine-tunes and re-quantisations share their base model's shapes; the
# dtype they imply (e.g. FP8) is the importer's business, not the architecture's.
ALIASES: dict[str, str] = {
    "neuralmagic/meta-llama-3-8b-instruct-fp8": "llama-3-8b",
    "meta-llama/meta-llama-3-8b-instruct": "llama-3-8b",
    "meta-llama/llama-2-7b-chat-hf": "llama-2-7b",
    "mistralai/mistral-7b-instruct-v0.1": "mistral-7b",
    "google/gemma-1.1-7b": "gemma-1.1-7b",
    "smollm2-135m-instruct": "smollm2-135m",
    "huggingfacetb/smollm2-135m": "smollm2-135m",
}


def canonical_name(label: str) -> str | None:
    """The catalog id for a model label (catalog id, HF id or alias), or None."""
    key = label.strip().lower()
    if key in CATALOG or key in LOCAL:
        return key
    if key in ALIASES:
        return ALIASES[key]
    for a in CATALOG.values():
        if a.hf_id and a.hf_id.lower() == key:
            return a.name
    return None


# -- architectures of local models --------------------------------------------------------------
_HF_FAMILIES = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "mixtral": "mixtral",
                "gpt2": "gpt2", "gpt_neox": "gpt_neox"}


def arch_from_hf_config(name: str, cfg: dict) -> ModelArch:
    """The architecture in a transformers config.json; ValueError naming what is missing or
    not modelled (the caller turns it into the record's note)."""
    mt = cfg.get("model_type")
    family = _HF_FAMILIES.get(mt)
    if family is None:
        raise ValueError(f"model_type {mt!r} is not one the roofline models "
                         f"({', '.join(sorted(_HF_FAMILIES))})")
    if family == "gpt2":
        keys = {"layers": "n_layer", "hidden": "n_embd", "heads": "n_head", "vocab": "vocab_size",
                "max_position": "n_positions"}
    else:
        keys = {"layers": "num_hidden_layers", "hidden": "hidden_size",
                "heads": "num_attention_heads", "vocab": "vocab_size",
                "max_position": "max_position_embeddings", "ffn": "intermediate_size"}
    missing = [v for v in keys.values() if cfg.get(v) is None]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)}")
    a = {k: cfg[v] for k, v in keys.items()}
    if family == "gpt2":
        a["ffn"] = cfg.get("n_inner") or 4 * a["hidden"]
    a["kv_heads"] = cfg.get("num_key_value_heads") or a["heads"]
    extra = dict(tie_embeddings=bool(cfg.get("tie_word_embeddings", family in ("gpt2",))),
                 qkv_bias=bool(cfg.get("attention_bias", family == "qwen2")),
                 rope_theta=float(cfg.get("rope_theta") or 10000.0),
                 norm_eps=float(cfg.get("rms_norm_eps") or cfg.get("layer_norm_eps") or 1e-5),
                 num_experts=int(cfg.get("num_local_experts") or 1),
                 experts_per_token=int(cfg.get("num_experts_per_tok") or 1))
    if family == "gpt_neox":
        extra["rotary_pct"] = float(cfg.get("rotary_pct", 1.0))
    head_dim = cfg.get("head_dim")
    if head_dim and head_dim != a["hidden"] // a["heads"]:
        extra["head_dim_override"] = int(head_dim)
    return ModelArch(name=name, family=family, **a, **extra)


def arch_from_gguf(name: str, path) -> ModelArch:
    """The architecture in a GGUF file's metadata (the `gguf` package's reader, which maps
    the file instead of reading it); ValueError when it cannot be read."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ValueError("reading GGUF metadata needs the 'gguf' package "
                         "(pip install 'llmbench[transformers]')") from None
    try:
        r = GGUFReader(path)
    except Exception as e:  # a truncated or foreign file
        raise ValueError(f"unreadable GGUF: {e}") from None

    def val(key: str):
        f = r.fields.get(key)
        return None if f is None else f.contents()

    arch = val("general.architecture")
    family = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}.get(arch)
    if family is None:
        raise ValueError(f"GGUF architecture {arch!r} is not one the roofline models "
                         "(llama, mistral, qwen2)")
    keys = {"layers": "block_count", "hidden": "embedding_length",
            "heads": "attention.head_count", "ffn": "feed_forward_length",
            "max_position": "context_length"}
    a = {k: val(f"{arch}.{v}") for k, v in keys.items()}
    tokens = r.fields.get("tokenizer.ggml.tokens")
    a["vocab"] = val(f"{arch}.vocab_size") or (len(tokens.data) if tokens is not None else None)
    missing = [k for k, v in a.items() if v is None]
    if missing:
        raise ValueError(f"GGUF metadata lacks {', '.join(missing)}")
    a["kv_heads"] = val(f"{arch}.attention.head_count_kv") or a["heads"]
    tensors = {t.name for t in r.tensors}
    return ModelArch(name=name, family=family, **{k: int(v) for k, v in a.items()},
                     tie_embeddings="output.weight" not in tensors,
                     rope_theta=float(val(f"{arch}.rope.freq_base") or 10000.0),
                     norm_eps=float(val(f"{arch}.attention.layer_norm_rms_epsilon") or 1e-5))
