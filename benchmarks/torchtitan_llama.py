"""torchtitan's config registry for llmbench's Llama shapes, so torchtitan's own trainer runs
the model `llmbench train --workload llama` runs (benchmarks/train_references.py).

torchtitan 0.3.0 takes a fully qualified module as `--module` and a function of it as
`--config`; the shape comes from the environment (LLMBENCH_LLAMA_SIZE: 3.2-1b | 3.2-3b | 3-8b,
LLMBENCH_LLAMA_LAYERS: fewer layers), read from llmbench's catalog, so both sides build the
same parameters (checked: tests/benchmarks/test_train_references.py counts them on the meta
device). What differs, by design of each trainer: torchtitan's attention is FlexAttention with
per-document (block-causal) masks, llmbench's SDPA causal over the whole row; torchtitan's
RoPE is the complex (interleaved) form, llmbench's the rotate-half form (same FLOPs).
The private builders below are torchtitan 0.3.0's (pinned in benchmarks/h200/setup.sh).
"""

from __future__ import annotations

import os


def llama_model_config(size: str, layers: int | None = None, attn_backend: str = "flex"):
    """torchtitan's Llama3Model.Config of llmbench's catalog shape."""
    from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm
    from torchtitan.models.llama3 import (_EMBEDDING_INIT, _NORM_INIT, _build_llama3_layers,
                                          _output_linear_init)
    from torchtitan.models.llama3.model import Llama3Model

    from llmbench.kinds.training.llama import SIZES
    from llmbench.models.catalog import get_arch

    a = get_arch(SIZES[size])
    dim, vocab = a.hidden, a.vocab
    return Llama3Model.Config(
        dim=dim, vocab_size=vocab,
        tok_embeddings=Embedding.Config(num_embeddings=vocab, embedding_dim=dim,
                                        param_init=_EMBEDDING_INIT),
        norm=RMSNorm.Config(normalized_shape=dim, param_init=_NORM_INIT),
        lm_head=Linear.Config(in_features=dim, out_features=vocab, param_init=_output_linear_init(dim)),
        layers=_build_llama3_layers(
            fuse_qkv=True, n_layers=layers or a.layers, dim=dim, n_heads=a.heads,
            n_kv_heads=a.kv_heads, hidden_dim=a.ffn,
            rope=ComplexRoPE.Config(dim=a.head_dim, max_seq_len=a.max_position, theta=a.rope_theta,
                                    scaling="none"),
            attn_backend=attn_backend),
        enable_weight_tying=a.tie_embeddings)


def llmbench_llama():
    """The trainer: llmbench's shape, AdamW, plain cross-entropy over full logits (llmbench's
    `--loss full`), no activation checkpointing, no checkpoints or validation; the batch,
    sequence length, steps and compile come from the command line (train_references.py)."""
    from torchtitan.components.checkpoint import CheckpointManager
    from torchtitan.components.loss import CrossEntropyLoss
    from torchtitan.components.metrics import MetricsProcessor
    from torchtitan.components.optimizer import default_adamw
    from torchtitan.components.validate import Validator
    from torchtitan.config import TrainingConfig
    from torchtitan.hf_datasets.text_datasets import HuggingFaceTextDataLoader
    from torchtitan.models.llama3 import model_registry
    from torchtitan.models.common.config_utils import decoder_vocab_size
    from torchtitan.trainer import Trainer

    size = os.environ.get("LLMBENCH_LLAMA_SIZE", "3.2-1b")
    layers = int(os.environ["LLMBENCH_LLAMA_LAYERS"]) if os.environ.get("LLMBENCH_LLAMA_LAYERS") else None
    spec = model_registry("debugmodel")
    spec.model = llama_model_config(size, layers)
    spec.flavor = f"llmbench-{size}" + (f"-L{layers}" if layers else "")
    return Trainer.Config(
        loss=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(spec)),
        model_spec=spec,
        optimizer=default_adamw(lr=3e-4),
        training=TrainingConfig(local_batch_size=1, seq_len=2048, steps=20),
        dataloader=HuggingFaceTextDataLoader.Config(dataset="c4_test"),
        metrics=MetricsProcessor.Config(log_freq=1),
        checkpoint=CheckpointManager.Config(enable=False),
        validator=Validator.Config(enable=False),
    )
