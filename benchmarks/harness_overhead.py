"""Harness overhead: the same llama.cpp generation through llmbench vs called directly.

Both sides run greedy decoding of the same prompt (batch 1) on the same loaded model:
- direct:   llama-cpp-python's low-level API in a bare loop (decode, argmax, decode ...), and
            its high-level `Llama.generate` generator, for reference;
- llmbench, whole point: what a user pays per point of `llmbench run` once the engine is
            loaded, timed around all of it: the record's environment capture, prompt building,
            the energy meter and contention watch, generation, timelines and metrics, the
            roofline and writing the record to disk (the inference kind's base_record, run_point,
            attach_roofline, Store.write);
- llmbench, batch_latency_s: the timed window inside that point (what the record reports);
- the same window with observers taken away one at a time, to price each: without the
  contention watch (`no watch`), and without the energy meter too (`no observers`: no
  sampling thread, no counter reads).
Every repeat runs each variant once, in a fresh random order (order effects and drift hit all
alike). A ratio is computed pair by pair (variant_i / direct_i of the same repeat) and given as
the geometric mean with its 95% t-interval over repeats (scipy), plus the median with a
bootstrap 95% interval: a 1% effect is resolved when the interval is narrower than 1%.
The machine's contention during the run is printed (other processes' share of the CPU, from
measure/contention.busy_cpu_s less this process, and the load average): a contended run says so.
Goals (issue 24): batch_latency_s / direct <= 1.01, whole point / direct <= 1.02.

    .venv/bin/python benchmarks/harness_overhead.py [--input-len 64] [--output-len 64] [--repeats 40]
"""

from __future__ import annotations

import argparse
import math
import os
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
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
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

    from llmbench.measure.contention import busy_cpu_s
    from llmbench.measure.power import EnergyMeter, open_meter
    from llmbench.kinds.inference.offline import run_offline

    def window(meter) -> float:
        """batch_latency_s of the offline workload with this meter (observers as given)."""
        metrics, _ = run_offline(be, point, meter)
        return metrics["batch_latency_s"].mean

    ll, llm = be._ll, be.llm
    prompt = make_prompts(be, 1, a.input_len, 0, 0)[0]
    hl = ll.Llama(str(be.path), n_ctx=a.input_len + a.output_len + 16, n_threads=be.n_threads,
                  verbose=False)
    meter = open_meter(point.device, 1)
    times: dict[str, list[float]] = {k: [] for k in
                                     ("whole", "window", "no watch", "no observers", "direct", "generate")}

    def one(k: str) -> None:
        if k == "whole":
            w, lat = whole_point()
            times["whole"].append(w)
            times["window"].append(lat)
        elif k == "no watch":
            times[k].append(window(meter))
        elif k == "no observers":
            times[k].append(window(EnergyMeter("off for the benchmark")))
        elif k == "direct":
            times[k].append(direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size))
        else:
            times[k].append(direct_highlevel(hl, prompt, a.output_len))

    order = ["whole", "no watch", "no observers", "direct", "generate"]
    for k in order:  # warm-up every path once
        one(k)
    for v in times.values():
        v.clear()
    rng = np.random.default_rng(a.seed)
    load0, busy0, own0, t0 = os.getloadavg()[0], busy_cpu_s(), time.process_time(), time.perf_counter()
    for _ in range(a.repeats):
        for i in rng.permutation(len(order)):
            one(order[i])
    wall, busy, own = time.perf_counter() - t0, busy_cpu_s() - busy0, time.process_time() - own0
    be.close()
    other = max(busy - own, 0.0) / (wall * (os.cpu_count() or 1))
    med = statistics.median
    print(f"llama.cpp, SmolLM2-135M Q4_1, batch 1, in {a.input_len}, out {a.output_len}, "
          f"{a.repeats} repeats (variants in random order each), {be.n_threads} threads, "
          f"energy meter: {meter.source}")
    print(f"contention: other processes used {other:.1%} of the machine's CPU during the run; "
          f"load average {load0:.2f} -> {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
          + ("  (CONTENDED: ratios are not trustworthy)" if other > 0.10 else ""))
    for k, label in (("whole", "llmbench whole point (as paid)"), ("window", "llmbench batch_latency_s"),
                     ("no watch", "  window without contention watch"),
                     ("no observers", "  window without any observer"),
                     ("direct", "direct low-level loop"), ("generate", "direct Llama.generate")):
        print(f"  {label:34s} median {med(times[k]) * 1e3:8.2f} ms")
    for k, goal in (("window", 1.01), ("whole", 1.02), ("no watch", None), ("no observers", None),
                    ("generate", None)):
        gm, lo, hi, m, mlo, mhi = ratio_stats(times[k], times["direct"], rng)
        name = {"window": "batch_latency_s", "whole": "whole point"}.get(k, k)
        print(f"ratio {name:16s}/ direct = {gm:.4f} [95% CI {lo:.4f}, {hi:.4f}]  "
              f"median {m:.4f} [{mlo:.4f}, {mhi:.4f}]" + (f"  goal <= {goal}" if goal else ""))
    book = [w - lat for w, lat in zip(times["whole"], times["window"])]
    print(f"bookkeeping per point (whole - batch_latency_s): median {med(book) * 1e3:.1f} ms")
    for k in ("no watch", "no observers"):
        gm, lo, hi, *_ = ratio_stats(times["window"], times[k], rng)
        print(f"observer cost: window / {k} = {gm:.4f} [95% CI {lo:.4f}, {hi:.4f}]")


def ratio_stats(a: list[float], b: list[float], rng) -> tuple[float, ...]:
    """Paired ratios a_i / b_i: geometric mean with its 95% t-interval (on the logs), and the
    median with a bootstrap 95% interval."""
    from scipy import stats

    logs = np.log(np.asarray(a) / np.asarray(b))
    n = len(logs)
    mean = float(logs.mean())
    half = float(stats.t.ppf(0.975, n - 1) * logs.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    boot = np.median(rng.choice(logs, size=(2000, n), replace=True), axis=1)
    return (math.exp(mean), math.exp(mean - half), math.exp(mean + half),
            float(np.exp(np.median(logs))), float(np.exp(np.quantile(boot, 0.025))),
            float(np.exp(np.quantile(boot, 0.975))))


if __name__ == "__main__":
    main()
