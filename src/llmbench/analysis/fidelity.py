"""Fidelity of an engine's output to a reference's (docs/fidelity.md), pure arithmetic.

- first divergence: the index of the first generated token that differs from the
  reference's; the output length when none does (the value is censored there).
- match fraction: the share of positions whose token equals the reference's at the same
  position (after the first divergence the contexts differ, so a match there is a
  re-convergence, counted as it is).
- KL divergence KL(P_ref || Q_engine) in nats, both next-token distributions conditioned on the
  same context (the reference's own greedy continuation, teacher-forced; llama.cpp's
  --kl-divergence measures the same direction). With the full vocabulary of both it is exact.
  An engine that returns only its top-k log-probabilities (vLLM) is compared on k + 1 buckets:
  the tokens it returned, and one bucket holding the rest of each distribution's mass. Merging
  outcomes never raises a KL divergence (the data-processing inequality), so that value is a
  lower bound of the full one, exact when the rest holds no mass.
- top-1 agreement: the share of teacher-forced positions where the engine's most likely
  token is the reference's (free of the cascade that follows a divergence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def first_divergence(tokens: Sequence[int], reference: Sequence[int]) -> int:
    """Index of the first differing token; len(reference) when the engine's output equals it
    (a shorter output diverges where it ends)."""
    for i, ref in enumerate(reference):
        if i >= len(tokens) or tokens[i] != ref:
            return i
    return len(reference)


def match_fraction(tokens: Sequence[int], reference: Sequence[int]) -> float:
    """Share of the reference's positions where the engine produced the same token."""
    if not reference:
        raise ValueError("an empty reference has no positions to match")
    return sum(1 for a, b in zip(tokens, reference) if a == b) / len(reference)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Rows of logits -> rows of natural-log probabilities (float64)."""
    x = np.asarray(logits, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def kl_full(ref_logp: np.ndarray, logq: np.ndarray) -> np.ndarray:
    """KL(P || Q) per row, from log-probabilities over the whole vocabulary (nats).
    Terms with P = 0 contribute 0 (the limit p log p -> 0)."""
    lp = np.asarray(ref_logp, dtype=np.float64)
    lq = np.asarray(logq, dtype=np.float64)
    if lp.shape != lq.shape:
        raise ValueError(f"distributions of different shapes: {lp.shape} vs {lq.shape}")
    p = np.exp(lp)
    with np.errstate(invalid="ignore"):  # p = 0 rows where both are -inf: masked out below
        terms = np.where(p > 0, p * (lp - lq), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)  # a tiny negative sum is rounding


def kl_topk(ref_logp: np.ndarray, topk: Mapping[int, float]) -> float:
    """KL(P || Q) on the buckets {each token the engine returned} + {the rest} (see the module
    docstring): P over the full vocabulary (one row), Q known on `topk` (token -> log-prob)."""
    lp = np.asarray(ref_logp, dtype=np.float64)
    ids = np.fromiter(topk.keys(), dtype=np.int64)
    lq = np.fromiter(topk.values(), dtype=np.float64)
    p_in, q_in = np.exp(lp[ids]), np.exp(lq)
    p_rest, q_rest = max(1.0 - p_in.sum(), 0.0), max(1.0 - q_in.sum(), 0.0)
    with np.errstate(invalid="ignore"):  # p = 0 terms masked out
        kl = float(np.where(p_in > 0, p_in * (lp[ids] - lq), 0.0).sum())
    if p_rest > 0:
        kl += p_rest * (math.log(p_rest) - math.log(q_rest)) if q_rest > 0 else math.inf
    return max(kl, 0.0)


def top1_agreement(engine_top1: Sequence[int], reference_next: Sequence[int]) -> float:
    """Share of teacher-forced positions where the engine's most likely token is the one the
    reference generated next."""
    if not reference_next:
        raise ValueError("no positions to compare")
    return sum(1 for a, b in zip(engine_top1, reference_next) if a == b) / len(reference_next)
