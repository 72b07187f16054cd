"""Model FLOPs per token: the count every training `tflops` and `mfu` is based on.

Training step (forward + backward), per token:

    flops_per_token = 6 * N + 12 * L * h * s

* `N` counts the parameters that take part in a matrix product: every weight and bias of the
  layers, the norms, and the output projection (the LM head). Lookup tables that never enter a
  matrix product are left out: GPT-2's position embeddings (`wpe`) and an *untied* input
  embedding (GPT-NeoX's `embed_in`). GPT-2 ties its input embedding to the LM head, so `wte`
  counts once, as the head. This is nanoGPT's `get_num_params(non_embedding=True)` convention
  (it subtracts `wpe` only). Rows added to pad the vocabulary to a multiple of 64 are compute
  the model does but not counted: the count is the model's, not the kernel's.
* `12 * L * h * s` is attention's two sequence-length products (Q·Kᵀ and A·V, 2·s·h each
  forward, times 3 for forward + backward) over *all* s×s query/key pairs. This is the MFU
  convention of PaLM (appendix B) and Megatron-LM (Narayanan et al. 2021), and nanoGPT's
  `estimate_mfu`: `tflops` and `mfu` use it, so they compare with published MFUs.
  A causal kernel skips the upper triangle: query i attends to i + 1 keys, (s + 1) / 2 on
  average, so the work it must do is `6 * L * h * (s + 1)` per token. `causal_attention=True`
  gives that count; records keep it as `tflops_causal`, and the roofline's step time uses it
  (the least work a step must do). Under the full-attention convention a causal kernel can
  therefore show an MFU a little above its real share of the peak.
* The backward pass is counted as twice the forward (the `6` = 2 forward + 4 backward); the
  recomputation of activation checkpointing is not counted (model FLOPs, not hardware FLOPs).
  The optimizer step, norms' and activations' elementwise work are not counted.

Forward only: `2 * N + 4 * L * h * s` (the same conventions).
"""

from __future__ import annotations


def attention_flops_per_token(layers: int, hidden: int, seq_len: int, *, backward: bool = True,
                              causal_attention: bool = False) -> float:
    keys = (seq_len + 1) / 2 if causal_attention else seq_len  # keys a query attends to, mean
    per_pass = 4 * layers * hidden * keys              # Q·Kᵀ + A·V, 2·h per (query, key) each
    return float(per_pass * (3 if backward else 1))


def flops_per_token(n_params: int, layers: int, hidden: int, seq_len: int, *,
                    backward: bool = True, causal_attention: bool = False) -> float:
    """Model FLOPs for one token of one training step (or of a forward when backward=False)."""
    dense = (6 if backward else 2) * n_params
    return dense + attention_flops_per_token(layers, hidden, seq_len, backward=backward,
                                             causal_attention=causal_attention)
