"""Harness overhead: the same llama.cpp generation through llmbench vs called directly.

Both sides run greedy decoding of the same prompt (batch 1) on the same loaded model:
- direct:   llama-cpp-python's low-level API in a bare loop (decode, argmax, decode ...), and
            its high-level `Llama.generate` generator, for reference;
- llmbench: the offline workload's timed path (prompt building, timelines, metrics) with the
            llamacpp backend, reading its batch_latency_s samples.
Runs interleave so drift hits both sides alike. Prints medians and the ratio (goal <= 1.02).

    .venv/bin/python benchmarks/harness_overhead.py [--input-len 64] [--output-len 64] [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def direct_lowlevel(llm, ll, ctx, prompt, out_len, n_vocab):
    ll.llama_memory_clear(ll.llama_get_memory(ctx), True)
    batch = ll.llama_batch_init(512, 0, 1)
    t0 = time.perf_counter()
    toks, pos = list(prompt), list(range(len(prompt)))
    produced = 0
    while produced < out_len:
        for i, (t, p) in enumerate(zip(toks, pos)):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, p, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i == len(toks) - 1
        batch.n_tokens = len(toks)
        assert ll.llama_decode(ctx, batch) == 0
        nxt = int(np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, len(toks) - 1), shape=(n_vocab,)).argmax())
        produced += 1
        toks, pos = [nxt], [pos[-1] + 1]
    dt = time.perf_counter() - t0
    ll.llama_batch_free(batch)
    return dt


def direct_highlevel(llm, prompt, out_len):
    llm.reset()
    t0 = time.perf_counter()
    for i, _ in enumerate(llm.generate(prompt, top_k=1, temp=0.0, repeat_penalty=1.0, reset=True)):
        if i + 1 == out_len:
            break
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()

    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.measure.power import EnergyMeter
    from llmbench.models import resolve
    from llmbench.spec import Point
    from llmbench.workloads.offline import run_offline
    from llmbench.workloads.prompts import make_prompts

    point = Point(backend="llamacpp", model="smollm2-135m", batch_size=1, input_len=a.input_len,
                  output_len=a.output_len, repeats=1, warmups=0)
    be = LlamaCppBackend(point, resolve("smollm2-135m"))
    be.load()
    be.prepare(point)
    ll, llm = be._ll, be.llm
    prompt = make_prompts(be, 1, a.input_len, 0, 0)[0]
    hl = ll.Llama(str(be.path), n_ctx=a.input_len + a.output_len + 16, n_threads=be.n_threads,
                  verbose=False)
    meter = EnergyMeter("benchmark")
    # warm-up every path once
    direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size)
    direct_highlevel(hl, prompt, a.output_len)
    run_offline(be, point, meter)

    ours, low, high = [], [], []
    for _ in range(a.repeats):
        m, _ = run_offline(be, point, meter)
        ours.append(m["batch_latency_s"].mean)
        low.append(direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size))
        high.append(direct_highlevel(hl, prompt, a.output_len))
    be.close()
    med = statistics.median
    print(f"llama.cpp, SmolLM2-135M Q4_1, batch 1, in {a.input_len}, out {a.output_len}, "
          f"{a.repeats} interleaved repeats, {be.n_threads} threads")
    print(f"  llmbench (offline workload)    median {med(ours) * 1e3:8.2f} ms")
    print(f"  direct low-level loop          median {med(low) * 1e3:8.2f} ms")
    print(f"  direct Llama.generate          median {med(high) * 1e3:8.2f} ms")
    print(f"ratio llmbench / direct low-level = {med(ours) / med(low):.3f}  (goal <= 1.02)")
    print(f"ratio llmbench / Llama.generate   = {med(ours) / med(high):.3f}")


if __name__ == "__main__":
    main()
