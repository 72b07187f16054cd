"""Random-weight GGUF files of catalog architectures, for llama.cpp.

No real GGUF of most catalog models exists on a benchmark machine (nothing is downloaded), but
llama.cpp's speed depends only on the shapes and the weight types, not on the values. So this
writes the GGUF llama.cpp's own converter would write for the architecture (same tensor names,
shapes and hyper-parameter keys), with random values and a made-up SentencePiece vocabulary.

F16 is written here, streaming: the header goes through the `gguf` package, then each tensor's
bytes are one random block repeated (rotated per tensor), so no tensor is ever materialised and
an 8B model writes at disk speed. Q8_0 / Q4_0 come from llama.cpp's own quantiser applied to the
cached F16 file, so they are laid out exactly as real quantised files (e.g. Q4_0 keeps the output
matrix at Q6_K, as llama.cpp chooses).

Files are cached under cache_dir()/models, written to a temp file and renamed (a concurrent or
interrupted writer never leaves a half file under the final name) and reused when present.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import shutil
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from llmbench.errors import ModelError
from llmbench.models.catalog import ModelArch

GgufType = Literal["f16", "q8_0", "q4_0"]
GGUF_TYPES: tuple[str, ...] = get_args(GgufType)
# llama.cpp's llama_ftype values (gguf.LlamaFileType) for the types made by its quantiser.
_FTYPE = {"f16": 1, "q8_0": 7, "q4_0": 2}
# Bump when the written content changes: old cached files then stop being reused (cached_path).
WRITER_VERSION = 1
# llama.cpp architecture names per catalog family. Mistral and Mixtral are "llama" in GGUF (as
# llama.cpp's converter writes them); the other families have no cheap llama.cpp equivalent here.
_GGUF_ARCH = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
              "gpt2": "gpt2", "gpt_neox": "gptneox"}
_BLOCK_VALUES = 1 << 22  # 8 MiB of F16: big writes, and rows repeat rarely
_WEIGHT_STD = 0.02       # the usual init scale: activations stay finite through every layer

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
_TYPE_NORMAL, _TYPE_UNKNOWN, _TYPE_CONTROL, _TYPE_BYTE = 1, 2, 3, 6


def synthetic_gguf(arch: ModelArch, gguf_type: str = "f16") -> Path:
    """The cached random-weight GGUF of `arch` in `gguf_type`, written first if absent."""
    if gguf_type not in GGUF_TYPES:
        raise ModelError([("gguf_type", f"{gguf_type!r} is not one of {', '.join(GGUF_TYPES)}")])
    _check_supported(arch)
    target = cached_path(arch, gguf_type)
    if target.is_file():
        return target
    if gguf_type == "f16":
        _atomic_file(target, arch.param_count() * 2, lambda tmp: write_f16(arch, tmp))
    else:
        source = synthetic_gguf(arch, "f16")
        _atomic_file(target, source.stat().st_size, lambda tmp: quantize(source, tmp, gguf_type))
    return target


def cached_path(arch: ModelArch, gguf_type: str) -> Path:
    """Where the file lives (present or not). The name carries a digest of the architecture
    and the writer version: a corrected catalog entry or writer never reuses a stale file."""
    from llmbench.cache import cache_dir

    digest = hashlib.sha256(f"{WRITER_VERSION} {arch.model_dump_json()}".encode()).hexdigest()[:8]
    return cache_dir() / "models" / f"{arch.name}-random-{digest}-{gguf_type}.gguf"


def gguf_unsupported(arch: ModelArch) -> str | None:
    """Why no random-weight GGUF can be written for arch (None: it can). Cheap: for checks
    made before anything runs."""
    if arch.family not in _GGUF_ARCH:
        return (f"{arch.name}: no random-weight GGUF writer for the {arch.family!r} family "
                f"(supported: {', '.join(_GGUF_ARCH)})")
    if arch.hidden % arch.heads:
        return (f"{arch.name}: hidden size {arch.hidden} is not a multiple of {arch.heads} heads, "
                "which llama.cpp requires")
    return None


def _check_supported(arch: ModelArch) -> None:
    reason = gguf_unsupported(arch)
    if reason:
        raise ModelError([("model", reason)])


def _atomic_file(target: Path, size_bytes: int, build) -> None:
    """Build into a temp file beside target, then rename (readers never see a half file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < size_bytes * 1.05:
        raise ModelError([("model", f"writing {target.name} needs about {size_bytes / 1e9:.1f} GB; "
                                    f"{free / 1e9:.1f} GB free under {target.parent}")])
    # A unique name, created by the writer itself: the file gets the user's umask (mkstemp's
    # 0600 would make a shared cache unreadable to others).
    tmp = target.parent / f".{target.name}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        build(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


# -- what the file holds ---------------------------------------------------------------------

def tensor_shapes(arch: ModelArch) -> dict[str, tuple[tuple[int, ...], str]]:
    """GGUF tensor name -> (numpy shape, "f16" | "f32"), in llama.cpp's names and order.

    Shapes are numpy's (rows last-dimension-fastest): GGUF stores them reversed, so token_embd of
    shape (vocab, hidden) is llama.cpp's {n_embd, n_vocab}. 1-D tensors (norms, biases) are F32,
    as llama.cpp's converter writes them.
    """
    h, f, V, q, kv = arch.hidden, arch.ffn, arch.vocab, arch.q_dim, arch.kv_dim
    t: dict[str, tuple[tuple[int, ...], str]] = {"token_embd.weight": ((V, h), "f16")}
    gpt = arch.family in ("gpt2", "gpt_neox")
    if arch.family == "gpt2":
        t["position_embd.weight"] = ((arch.max_position, h), "f16")
    for i in range(arch.layers):
        b = f"blk.{i}."
        t[b + "attn_norm.weight"] = ((h,), "f32")
        if gpt:  # LayerNorm with bias, fused QKV with bias, biased projections
            t[b + "attn_norm.bias"] = ((h,), "f32")
            t[b + "attn_qkv.weight"] = ((q + 2 * kv, h), "f16")
            t[b + "attn_qkv.bias"] = ((q + 2 * kv,), "f32")
            t[b + "attn_output.weight"] = ((h, q), "f16")
            t[b + "attn_output.bias"] = ((h,), "f32")
            t[b + "ffn_norm.weight"] = ((h,), "f32")
            t[b + "ffn_norm.bias"] = ((h,), "f32")
            t[b + "ffn_up.weight"] = ((f, h), "f16")
            t[b + "ffn_up.bias"] = ((f,), "f32")
            t[b + "ffn_down.weight"] = ((h, f), "f16")
            t[b + "ffn_down.bias"] = ((h,), "f32")
            continue
        t[b + "attn_q.weight"] = ((q, h), "f16")
        t[b + "attn_k.weight"] = ((kv, h), "f16")
        t[b + "attn_v.weight"] = ((kv, h), "f16")
        if arch.qkv_bias:
            t[b + "attn_q.bias"] = ((q,), "f32")
            t[b + "attn_k.bias"] = ((kv,), "f32")
            t[b + "attn_v.bias"] = ((kv,), "f32")
        t[b + "attn_output.weight"] = ((h, q), "f16")
        t[b + "ffn_norm.weight"] = ((h,), "f32")
        if arch.num_experts > 1:  # router kept F32, as llama.cpp's converter and quantiser do
            n = arch.num_experts
            t[b + "ffn_gate_inp.weight"] = ((n, h), "f32")
            t[b + "ffn_gate_exps.weight"] = ((n, f, h), "f16")
            t[b + "ffn_up_exps.weight"] = ((n, f, h), "f16")
            t[b + "ffn_down_exps.weight"] = ((n, h, f), "f16")
        else:
            t[b + "ffn_gate.weight"] = ((f, h), "f16")
            t[b + "ffn_up.weight"] = ((f, h), "f16")
            t[b + "ffn_down.weight"] = ((h, f), "f16")
    t["output_norm.weight"] = ((h,), "f32")
    if gpt:
        t["output_norm.bias"] = ((h,), "f32")
    # Tied: llama.cpp reuses token_embd as the output matrix (its GPT-NeoX graph cannot).
    if not arch.tie_embeddings or arch.family == "gpt_neox":
        t["output.weight"] = ((V, h), "f16")
    return t


def vocabulary(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    """A made-up SentencePiece vocabulary of exactly n_vocab tokens: specials, byte tokens
    (so any text tokenizes, by byte fallback), then unique filler pieces."""
    n_bytes = max(0, min(256, n_vocab - len(SPECIAL_TOKENS)))
    tokens = list(SPECIAL_TOKENS)[:n_vocab] + [f"<0x{b:02X}>" for b in range(n_bytes)]
    types = [_TYPE_UNKNOWN, _TYPE_CONTROL, _TYPE_CONTROL][:n_vocab] + [_TYPE_BYTE] * n_bytes
    scores = [0.0] * len(tokens)
    for i in range(n_vocab - len(tokens)):
        tokens.append(f"\u2581t{i}")
        scores.append(-float(i))
        types.append(_TYPE_NORMAL)
    return tokens, scores, types


def _add_metadata(w, arch: ModelArch, gguf_arch: str) -> None:
    w.add_name(f"{arch.name} (random weights, llmbench)")
    w.add_bool("llmbench.synthetic_weights", True)
    w.add_uint32("llmbench.writer_version", WRITER_VERSION)
    w.add_file_type(_FTYPE["f16"])
    w.add_context_length(arch.max_position)
    w.add_embedding_length(arch.hidden)
    w.add_block_count(arch.layers)
    w.add_feed_forward_length(arch.ffn)
    w.add_head_count(arch.heads)
    w.add_head_count_kv(arch.kv_heads)
    w.add_vocab_size(arch.vocab)
    if gguf_arch in ("gpt2", "gptneox"):
        w.add_layer_norm_eps(arch.norm_eps)
    else:
        w.add_layer_norm_rms_eps(arch.norm_eps)
    if gguf_arch != "gpt2":  # GPT-2 has learned positions, no RoPE
        w.add_rope_freq_base(arch.rope_theta)
        w.add_rope_dimension_count(int(arch.head_dim * arch.rotary_pct))
    if gguf_arch == "gptneox":
        w.add_parallel_residual(True)
    if arch.num_experts > 1:
        w.add_expert_count(arch.num_experts)
        w.add_expert_used_count(arch.experts_per_token)
    tokens, scores, types = vocabulary(arch.vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


# -- writing ---------------------------------------------------------------------------------

def write_f16(arch: ModelArch, path: Path, seed: int = 0) -> None:
    """Write arch's random-weight F16 GGUF to path, streaming tensor data."""
    try:
        import gguf
    except ImportError:
        raise ModelError([("format gguf", "writing a random-weight GGUF needs the 'gguf' package "
                                          "(pip install 'llmbench[llamacpp]')")]) from None
    _check_supported(arch)
    gguf_arch = _GGUF_ARCH[arch.family]
    shapes = tensor_shapes(arch)
    w = gguf.GGUFWriter(str(path), gguf_arch)
    _add_metadata(w, arch, gguf_arch)
    for name, (shape, dtype) in shapes.items():
        np_dtype = np.float16 if dtype == "f16" else np.float32
        w.add_tensor_info(name, shape, np.dtype(np_dtype), int(np.prod(shape)) * np.dtype(np_dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    alignment = w.data_alignment
    w.close()

    rng = np.random.default_rng(seed)
    block = (rng.standard_normal(_BLOCK_VALUES, dtype=np.float32) * _WEIGHT_STD).astype(np.float16)
    block_bytes = memoryview(block.view(np.uint8))
    with open(path, "ab") as fout:
        _pad(fout, alignment)
        for k, (name, (shape, dtype)) in enumerate(shapes.items()):
            n = int(np.prod(shape))
            if dtype == "f32":  # small (norms at 1; biases and MoE routers random), held whole
                values = (np.ones(n, np.float32) if name.endswith("norm.weight")
                          else np.resize(block, n).astype(np.float32))
                fout.write(values.tobytes())
            else:
                _write_repeated(fout, block_bytes, n * 2, start=(k * 4099 * 2) % len(block_bytes))
            _pad(fout, alignment)


def _write_repeated(fout, block: memoryview, nbytes: int, start: int) -> None:
    """nbytes of the block, starting at an offset and wrapping around (never a whole tensor in RAM)."""
    first = block[start: start + nbytes]
    fout.write(first)
    nbytes -= len(first)
    while nbytes > 0:
        chunk = block[: min(nbytes, len(block))]
        fout.write(chunk)
        nbytes -= len(chunk)


def _pad(fout, alignment: int) -> None:
    fout.write(b"\0" * (-fout.tell() % alignment))


def quantize(source: Path, out: Path, gguf_type: str) -> None:
    """llama.cpp's own quantiser (the same code path as its llama-quantize tool)."""
    try:
        import llama_cpp
    except ImportError:
        raise ModelError([("format gguf", f"making a {gguf_type} GGUF needs llama-cpp-python "
                                          "(pip install 'llmbench[llamacpp]')")]) from None
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _FTYPE[gguf_type]
    params.nthread = os.cpu_count() or 1
    params.allow_requantize = True  # a real model's quantised GGUF (models/gguf_quantize.py)
    rc = llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(), ctypes.byref(params))
    if rc != 0:
        raise ModelError([("format gguf", f"llama.cpp failed to quantise {source.name} to "
                                          f"{gguf_type} (return code {rc})")])
