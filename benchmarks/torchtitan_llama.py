"""torchtitan's Llama flavor of llmbench's catalog shape, so torchtitan's own trainer runs the
model `llmbench train --workload llama` runs (benchmarks/train_references.py).

torchtitan 0.2.2 is the release that runs on the GPU machine's torch 2.11.0: 0.3.0 imports
`torch.distributed.fsdp.DataParallelMeshDims`, which torch 2.11.0 lacks (seen there on
2026-12-07). Its trainer imports this module by `--experimental.custom_import
torchtitan_llama`, which registers the flavor `llmbench` of its `llama3` model from the
environment (LLMBENCH_LLAMA_SIZE: 3.2-3b | 3-8b, LLMBENCH_LLAMA_LAYERS: fewer layers), read from
llmbench's catalog, so both sides build the same parameters (checked on the meta device by
tests/benchmarks/test_train_references.py). What differs, by design of each trainer: torchtitan's
RoPE is the complex (interleaved) form, llmbench's the rotate-half form (same FLOPs); both use
SDPA causal attention over the whole row.
"""

from __future__ import annotations

import os

FLAVOR = "llmbench"


def llama_model_args(size: str, layers: int | None = None):
    """torchtitan 0.2.2's TransformerModelArgs of llmbench's catalog shape."""
    from torchtitan.models.llama3.model.args import TransformerModelArgs

    from llmbench.kinds.training.llama import SIZES
    from llmbench.models.catalog import get_arch

    a = get_arch(SIZES[size])
    if a.tie_embeddings:
        # torchtitan 0.2.2's llama3 has no tied output head: its parameters would not match
        raise ValueError(f"{size}: a tied embedding, which torchtitan 0.2.2's llama3 cannot build")
    # torchtitan sizes the SwiGLU width as multiple_of * ceil(int(8 * dim / 3) / multiple_of);
    # with multiple_of = the catalog's width that is the catalog's width whenever 8 dim / 3 <= it
    if int(8 * a.hidden / 3) > a.ffn:
        raise ValueError(f"{size}: FFN width {a.ffn} is below torchtitan's 8/3 dim rule")
    return TransformerModelArgs(
        dim=a.hidden, n_layers=layers or a.layers, n_heads=a.heads, n_kv_heads=a.kv_heads,
        vocab_size=a.vocab, multiple_of=a.ffn, ffn_dim_multiplier=None, rope_theta=a.rope_theta,
        max_seq_len=a.max_position, attn_type="sdpa", attn_mask_type="causal")


def _register() -> None:
    from torchtitan.models.llama3 import llama3_args

    layers = os.environ.get("LLMBENCH_LLAMA_LAYERS")
    llama3_args[FLAVOR] = llama_model_args(os.environ.get("LLMBENCH_LLAMA_SIZE", "3-8b"),
                                           int(layers) if layers else None)


if os.environ.get("LLMBENCH_LLAMA_SIZE"):   # imported by torchtitan's trainer
    _register()
