"""What llama.cpp's prompt-eval counter holds when the prompt's graph is rebuilt (issue 37 item 4).

llama.cpp reuses its last compute graph when the next ubatch has the same shape; otherwise it
rebuilds the graph and the scheduler splits and allocates it again, on the host, inside the
timed `llama_decode` (`t_p_eval`). llama-bench's pp reps run the same prompt back to back (the
graph is reused from the second rep); llmbench's prompt follows the previous repeat's
single-token decode steps (the graph is rebuilt every repeat). This measures the difference on
one context, rounds alternating, with llama.cpp's own counter on every side:

  reuse    : memory clear, prompt, sync; again (llama-bench's pp reps)
  rebuild  : memory clear, prompt, sync, then --steps single-token decodes (llmbench's repeat)
  disabled : as `reuse`, in a second context made with LLAMA_GRAPH_REUSE_DISABLE=1 (the graph is
             rebuilt every call: the control)

    .venv/bin/python benchmarks/llamacpp_graph_reuse.py [--model smollm2-135m | --gguf PATH]
        [--prompt 128] [--steps 16] [--reps 20] [--rounds 4] [--threads N] [--gpu-layers 0]

Prints the median `t_p_eval` per side and rebuild - reuse, disabled - reuse (the cost of a
prompt graph rebuilt on this host). On a shared CPU the prompt's compute is noisy: use a short
--prompt to see the host part, and the same --prompt as the point to see its share.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def open_context(ll, model, n_ctx: int, threads: int, reuse: bool):
    """A context of one sequence; reuse=False sets LLAMA_GRAPH_REUSE_DISABLE while it is made
    (llama.cpp reads it in the context's constructor)."""
    p = ll.llama_context_default_params()
    p.n_ctx, p.n_batch, p.n_ubatch = n_ctx, 512, 512
    p.n_threads = p.n_threads_batch = threads
    p.no_perf = False
    old = os.environ.get("LLAMA_GRAPH_REUSE_DISABLE")
    if not reuse:
        os.environ["LLAMA_GRAPH_REUSE_DISABLE"] = "1"
    try:
        ctx = ll.llama_init_from_model(model, p)
    finally:
        if old is None:
            os.environ.pop("LLAMA_GRAPH_REUSE_DISABLE", None)
        else:
            os.environ["LLAMA_GRAPH_REUSE_DISABLE"] = old
    if not ctx:
        raise SystemExit("llama_init_from_model failed")
    return ctx


def decode(ll, ctx, batch, tokens: list[int], start: int) -> None:
    for i, tok in enumerate(tokens):
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, start + i, 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = i == len(tokens) - 1
    batch.n_tokens = len(tokens)
    if ll.llama_decode(ctx, batch) != 0:
        raise SystemExit("llama_decode failed")
    ll.llama_get_logits_ith(ctx, len(tokens) - 1)  # synchronises: closes the counter's span


def prompt_eval_s(ll, ctx, batch, prompt: list[int], steps: int) -> float:
    """One repeat: t_p_eval of the prompt (llama.cpp's counter), then `steps` decode steps."""
    ll.llama_memory_clear(ll.llama_get_memory(ctx), False)
    ll.llama_perf_context_reset(ctx)
    decode(ll, ctx, batch, prompt, 0)
    t = ll.llama_perf_context(ctx).t_p_eval_ms / 1e3
    for k in range(steps):
        decode(ll, ctx, batch, [prompt[k % len(prompt)]], len(prompt) + k)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--reps", type=int, default=20, help="per side per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gpu-layers", type=int, default=0)
    a = ap.parse_args()
    import llama_cpp as ll

    quiet = ll.llama_log_callback(lambda level, text, user_data: None)
    ll.llama_log_set(quiet, None)  # llama.cpp's load and graph logs would flood the output
    path = a.gguf
    if path is None:
        from llmbench.models.sources import model_path

        path = str(model_path(a.model, "gguf"))
    mp = ll.llama_model_default_params()
    mp.n_gpu_layers = a.gpu_layers
    model = ll.llama_model_load_from_file(path.encode(), mp)
    n_vocab = ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model))
    rng = random.Random(0)
    prompt = [rng.randrange(100, n_vocab) for _ in range(a.prompt)]
    n_ctx = a.prompt + a.steps + 16
    ctxs = {"reuse": open_context(ll, model, n_ctx, a.threads, True),
            "disabled": open_context(ll, model, n_ctx, a.threads, False)}
    batch = ll.llama_batch_init(512, 0, 1)
    sides = {"reuse": [], "rebuild": [], "disabled": []}
    for ctx in ctxs.values():  # warm-up of both shapes on both contexts
        prompt_eval_s(ll, ctx, batch, prompt, a.steps)
    for r in range(a.rounds):
        order = ["reuse", "rebuild", "disabled"]
        for side in (order if r % 2 == 0 else order[::-1]):
            ctx = ctxs["disabled" if side == "disabled" else "reuse"]
            steps = a.steps if side == "rebuild" else 0
            prompt_eval_s(ll, ctx, batch, prompt, a.steps if side == "rebuild" else 0)  # sets the last graph
            sides[side] += [prompt_eval_s(ll, ctx, batch, prompt, steps) for _ in range(a.reps)]
    ll.llama_batch_free(batch)
    med = {k: statistics.median(v) for k, v in sides.items()}
    print(f"{Path(path).name}, prompt {a.prompt} tokens, {a.steps} decode steps between prompts "
          f"(rebuild), {a.threads} threads, {a.gpu_layers} GPU layers; {a.rounds} rounds x {a.reps} "
          f"reps per side, order alternating; medians of llama.cpp's t_p_eval")
    for k, v in med.items():
        print(f"  {k:9} {v * 1e3:8.3f} ms  ({a.prompt / v:9.1f} tok/s, n={len(sides[k])})")
    print(f"  rebuild - reuse  = {(med['rebuild'] - med['reuse']) * 1e3:+.3f} ms")
    print(f"  disabled - reuse = {(med['disabled'] - med['reuse']) * 1e3:+.3f} ms")


if __name__ == "__main__":
    main()
