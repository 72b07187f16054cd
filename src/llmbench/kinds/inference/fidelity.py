"""Fidelity beside speed (docs/fidelity.md): an offline point's engine, after its timed repeats,
generates greedily on N fixed prompts, and its tokens and next-token distributions are compared
with the reference's, transformers fp32 on the CPU of the same model.

The reference (prompts, greedy tokens, full next-token log-probabilities along its own
continuation) is computed once per model, prompt set and lengths, and cached on disk. The
engine runs those exact prompt ids (never re-tokenized) in batches of the point's batch size,
and scores the reference's continuation teacher-forced, so every position's two distributions
share one context. The arithmetic is analysis/fidelity.py's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from llmbench.analysis.fidelity import (first_divergence, kl_full, kl_topk, match_fraction,
                                        top1_agreement)
from llmbench.backends import REFERENCE as REFERENCE_ENGINE
from llmbench.backends.call import EngineCall
from llmbench.cache import cache_dir
from llmbench.errors import EngineError
from llmbench.measure.metric_stats import MetricStats
from llmbench.measure.stats import summarize

FIDELITY_PROMPTS = 2_000_000  # make_prompts' repeat index of the fidelity prompts: never a repeat's
TOP_K = 20  # log-probabilities per position asked of a top-k engine (vLLM's max_logprobs)
PPL_CONTEXT, PPL_STRIDE = 256, 128  # PerplexityConfig's defaults: same windows as the perplexity kind
REFERENCE = f"{REFERENCE_ENGINE} fp32 cpu, batch 1"


@dataclass
class Reference:
    prompts: list[list[int]]
    tokens: list[list[int]]          # greedy continuation of each prompt
    logp: np.ndarray                 # (prompts, output_len, vocab) float32 next-token log-probs

    @property
    def vocab(self) -> int:
        return int(self.logp.shape[-1])


def reference_key(model: str, model_path: str, n: int, input_len: int, output_len: int,
                  seed: int, versions: dict[str, str]) -> str:
    blob = json.dumps({"model": model, "path": model_path, "n": n, "input_len": input_len,
                       "output_len": output_len, "seed": seed, "reference": REFERENCE,
                       "versions": versions}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    from llmbench.backends import engine_class

    return {p: version(p) for p in ("torch", engine_class(REFERENCE_ENGINE).distribution)}


def reference_for(model: str, n: int, input_len: int, output_len: int, seed: int) -> Reference:
    """The cached reference, else computed now (and cached: written aside, then renamed)."""
    from llmbench.models.sources import resolve, weights_identity

    key = reference_key(resolve(model).name, weights_identity(model), n, input_len, output_len,
                        seed, _versions())
    path = cache_dir() / "fidelity" / f"{key}.npz"
    if path.is_file():
        with np.load(path) as z:
            return Reference(z["prompts"].tolist(), z["tokens"].tolist(), z["logp"])
    ref = compute_reference(model, n, input_len, output_len, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(fd)
    np.savez(tmp, prompts=np.array(ref.prompts), tokens=np.array(ref.tokens), logp=ref.logp)
    os.replace(tmp, path)
    return ref


def compute_reference(model: str, n: int, input_len: int, output_len: int, seed: int) -> Reference:
    from llmbench.backends import backend_class
    from llmbench.kinds.inference.prompts import make_prompts
    from llmbench.models.sources import resolve

    ref = backend_class(REFERENCE_ENGINE)(EngineCall(model=model, device="cpu", dtype="fp32"), resolve(model))
    ref.load()
    try:
        prompts = make_prompts(ref, n, input_len, seed, FIDELITY_PROMPTS)
        tokens, rows = [], []
        for p in prompts:  # one at a time: no batch can change the reference's numerics
            ref.generate([p], output_len, time.perf_counter())
            tokens.append(list(ref.last_tokens[0]))
            rows.append(ref.next_token_logprobs(p + tokens[-1], len(p), TOP_K).astype(np.float32))
    finally:
        ref.close()
    return Reference(prompts, tokens, np.stack(rows))


def fidelity_problems(point, model) -> list[tuple[str, str]]:
    """What keeps a point's fidelity from being measured, before anything runs."""
    if not point.fidelity:
        return []
    if model.synthetic_weights:
        return [("fidelity", f"{model.name!r} has random weights: its tokens mean nothing to "
                             "compare (use smollm2-135m or a local model)")]
    from llmbench.backends import engine_class

    ref = engine_class(REFERENCE_ENGINE)
    if not ref.installed():
        return [("fidelity", f"the reference is {REFERENCE}: install 'llmbench[{ref.extra}]'")]
    return []


def compare(ref: Reference, tokens: list[list[int]], scored: list | None,
            kind: str | None) -> dict[str, list[float]]:
    """Per prompt: first divergence, match fraction, and where the engine scored the
    reference's continuation, the mean KL over its positions and the top-1 agreement."""
    out: dict[str, list[float]] = {"fidelity_first_divergence_tok": [], "fidelity_match_frac": [],
                                   "fidelity_kl_nats": [], "fidelity_top1_agree_frac": []}
    for i, (want, got) in enumerate(zip(ref.tokens, tokens)):
        out["fidelity_first_divergence_tok"].append(first_divergence(got, want))
        out["fidelity_match_frac"].append(match_fraction(got, want))
        if scored is None:
            continue
        lp = ref.logp[i].astype(np.float64)
        if kind == "full":
            # rounded to float32 as the stored reference is: identical computations give 0
            lq = np.asarray(scored[i], dtype=np.float32).astype(np.float64)
            kl = kl_full(lp, lq)
            top1 = lq.argmax(axis=-1).tolist()
        else:
            kl = np.array([kl_topk(row, q) for row, q in zip(lp, scored[i])])
            top1 = [max(q, key=q.get) for q in scored[i]]
        out["fidelity_kl_nats"].append(float(kl.mean()))
        out["fidelity_top1_agree_frac"].append(top1_agreement(top1, want))
    return {k: v for k, v in out.items() if v}


def measure_fidelity(backend, point) -> tuple[dict[str, MetricStats], list[str]]:
    """The point's fidelity metrics (outside every timed window) and the notes that say how."""
    n = point.fidelity
    ref = reference_for(point.model, n, point.input_len, point.output_len, point.seed)
    if backend.vocab_size != ref.vocab:
        raise EngineError(f"fidelity: the engine's vocabulary ({backend.vocab_size}) is not the "
                          f"reference's ({ref.vocab}); their tokens cannot be compared")
    tokens: list[list[int]] = []
    for c in range(0, n, point.batch_size):
        backend.generate(ref.prompts[c:c + point.batch_size], point.output_len, time.perf_counter())
        tokens.extend(list(t) for t in backend.last_tokens)
    kind = backend.next_token_logprobs_kind
    scored = None if kind is None else [
        backend.next_token_logprobs(p + t, len(p), TOP_K) for p, t in zip(ref.prompts, ref.tokens)]
    units = {"fidelity_first_divergence_tok": "tokens", "fidelity_match_frac": "ratio",
             "fidelity_kl_nats": "nats", "fidelity_top1_agree_frac": "ratio"}
    metrics = {k: summarize(v, units[k]) for k, v in compare(ref, tokens, scored, kind).items()}
    notes = [f"fidelity: {n} prompts of {point.input_len} tokens, {point.output_len} greedy tokens "
             f"each, against {REFERENCE}; run in batches of {point.batch_size}"]
    if kind == "top-k":
        notes.append(f"fidelity: KL from the engine's top-{TOP_K} log-probabilities and one bucket "
                     "for the rest: a lower bound of the full KL")
    elif kind is None:
        notes.append("fidelity: the engine returns no log-probabilities: no KL")
    if backend.scores_text:
        from llmbench.data import bundled_text

        nll, count = backend.loglikelihood(backend.tokenize(bundled_text()), PPL_CONTEXT, PPL_STRIDE)
        metrics["perplexity"] = summarize([math.exp(nll / count)], "", keep_samples=False)
        notes.append(f"perplexity: the bundled text, windows of {PPL_CONTEXT}, stride {PPL_STRIDE}")
    return metrics, notes
