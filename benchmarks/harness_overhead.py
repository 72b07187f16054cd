"""Harness overhead: the same llama.cpp generation through llmbench vs called directly.

Both sides run greedy decoding of the same prompt (batch 1) on the same loaded model:
- direct:   llama-cpp-python's low-level API in a bare loop (decode, argmax, decode ...), and
            its high-level `Llama.generate` generator, for reference;
- llmbench, whole point: what a user pays per point of `llmbench run` once the engine is
            loaded, timed around all of it: the record's environment capture, prompt building,
            the energy meter and contention watch, generation, timelines and metrics, the
            roofline and writing the record to disk (the inference kind's base_record, run_point,
            attach_roofline, Store.write);
- llmbench, batch_latency_s: the timed window inside that point (what the record reports).
Runs interleave so drift hits both sides alike. Prints medians and both ratios against the
direct loop (goal for batch_latency_s <= 1.02; the whole point's ratio is the bookkeeping cost).

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

    import tempfile

    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.models import resolve
    from llmbench.kinds.inference.kind import attach_roofline, base_record, run_point
    from llmbench.kinds.inference.spec import Point
    from llmbench.store import Store
    from llmbench.kinds.inference.prompts import make_prompts

    point = Point(backend="llamacpp", model="smollm2-135m", batch_size=1, input_len=a.input_len,
                  output_len=a.output_len, repeats=1, warmups=0)
    model = resolve("smollm2-135m")
    be = LlamaCppBackend(point, model)
    be.load()
    be.point, be.engine_options = point, point.options  # as InferenceKind.run_group sets them
    be.prepare(point)
    store = Store(tempfile.mkdtemp(prefix="llmbench-overhead-"))

    def whole_point() -> tuple[float, float]:
        """(seconds for the whole point as `llmbench run` does it, its batch_latency_s)"""
        t0 = time.perf_counter()
        rec = base_record(point, "overhead", model, LlamaCppBackend)
        run_point(be, point, rec)
        attach_roofline(rec)
        store.write(rec)
        return time.perf_counter() - t0, rec.metrics["batch_latency_s"].mean

    ll, llm = be._ll, be.llm
    prompt = make_prompts(be, 1, a.input_len, 0, 0)[0]
    hl = ll.Llama(str(be.path), n_ctx=a.input_len + a.output_len + 16, n_threads=be.n_threads,
                  verbose=False)
    # warm-up every path once
    direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size)
    direct_highlevel(hl, prompt, a.output_len)
    whole_point()

    whole, ours, low, high = [], [], [], []
    for _ in range(a.repeats):
        w, lat = whole_point()
        whole.append(w)
        ours.append(lat)
        low.append(direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size))
        high.append(direct_highlevel(hl, prompt, a.output_len))
    be.close()
    med = statistics.median
    print(f"llama.cpp, SmolLM2-135M Q4_1, batch 1, in {a.input_len}, out {a.output_len}, "
          f"{a.repeats} interleaved repeats, {be.n_threads} threads")
    print(f"  llmbench whole point (as paid) median {med(whole) * 1e3:8.2f} ms")
    print(f"  llmbench batch_latency_s       median {med(ours) * 1e3:8.2f} ms")
    print(f"  direct low-level loop          median {med(low) * 1e3:8.2f} ms")
    print(f"  direct Llama.generate          median {med(high) * 1e3:8.2f} ms")
    print(f"ratio llmbench whole point / direct low-level = {med(whole) / med(low):.3f}  "
          f"(bookkeeping: {(med(whole) - med(ours)) * 1e3:.1f} ms per point)")
    print(f"ratio llmbench batch_latency_s / direct low-level = {med(ours) / med(low):.3f}  (goal <= 1.02)")
    print(f"ratio llmbench / Llama.generate   = {med(ours) / med(high):.3f}")


if __name__ == "__main__":
    main()
