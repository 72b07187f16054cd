"""Harness overhead: the same generation through llmbench vs called directly (issue 24).

Both sides run greedy decoding of the same prompt (batch 1) on the same loaded model:
- direct:   llama.cpp: llama-cpp-python's low-level API in a bare loop (decode, argmax,
            decode ...), and its high-level `Llama.generate` generator, for reference;
            transformers: the backend's public `generate` alone, timed to its last token's
            stamp as batch_latency_s is (no meter, no watch, no record);
- llmbench, whole point: what a user pays per point of `llmbench run` once the engine is
            loaded, timed around all of it: the record's environment capture, prompt building,
            the energy meter, contention watch and GPU counters, generation, timelines and
            metrics, the engine's facts and the roofline (taken while NVML's closing energy
            read is out, as run_group does) and writing the record to disk (base_record,
            run_point, _bookkeep, Store.write), with each part's time printed. As in
            run_group, the record's fsyncs run on the store's sync thread once it is in
            place; the next write waits for them first (Store.flush), and that wait, if
            any, is in its point's time;
- llmbench, batch_latency_s: the timed window inside that point (what the record reports);
- with --observers, the same window with observers changed, to price each: without the
  contention watch and GPU counters (`no watch`), without any observer (`no observers`: no
  thread, no reads), and with the power-sampling thread every P ms (`sampler P ms`; the
  device's own meter when it reads power, NVML, else a stand-in whose reading costs nothing, so
  only the thread's wake-ups are priced; a short period magnifies a cost too small to resolve
  at 50 ms); and llama-cpp-python's `Llama.generate`.
Order: each repeat runs every variant once, in a fresh random order, as an ABBA block beside the
direct loop (direct, variant, variant, direct; mirrored every other repeat): each variant run
has a direct run next to it in time, and a steady drift of the machine's speed and the order
within a pair cancel in the block's ratio, log(variant / direct) = the mean of the block's two
variant logs less the mean of its two direct logs. Both sides get the same warm-up (one run
each) and the same statistic. The verdict is the Hodges-Lehmann estimate of the blocks'
log-ratios with the signed-rank test's 95% interval (robust to a block slowed by other work,
nearly as tight as the mean); the geometric mean with its t-interval is printed beside it. A
1% effect is resolved when the interval's half-width is under 1%.
Why this much: on this 2-core VM one run of the direct loop (~1 s) varies by 4-8% from the
next with nothing else running (the host, not the guest: a single engine thread is no
quieter), so the interval narrows only with the number of blocks (+-1.2-1.7% at 60 blocks,
+-0.7-0.9% at 160, ~11 min a run).
Measured figures (CPU and H200), with the commands: docs/overhead.md.
The machine's contention is printed for the run (other processes' share of the CPU, from
measure/contention.busy_cpu_s less this process, the load average, the hypervisor's steal) and
counted per block: blocks in which others used > CPU_SHARE_LIMIT are kept, or with
--drop-contended left out, and their number is printed either way.
Energy windows are not lengthened (energy_min_window_s=0): the extra untimed batches that
would fill 2 s are a measurement choice, not overhead.
Goals (issue 24): batch_latency_s / direct <= 1.01, whole point / direct <= 1.02.

    .venv/bin/python benchmarks/harness_overhead.py [--input-len 64] [--output-len 64] [--repeats 160] \\
        [--nice -10] [--observers] [--drop-contended] [--profile N] [--breakdown N]
    # a GPU engine path (random weights from the catalog, as `llmbench run` builds them):
    .venv/bin/python benchmarks/harness_overhead.py --engine transformers --device cuda \\
        --model llama-3-8b --dtype bf16 --fast --repeats 30
    # the same path proven on the CPU with a tiny random model:
    .venv/bin/python benchmarks/harness_overhead.py --engine transformers --model tiny --repeats 5
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np

TINY = "tiny-llama-overhead"  # --model tiny: 2 layers, hidden 64 (the tests' tiny model)


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


def llamacpp_engine(a) -> tuple:
    """(backend, point, direct paths by name) for llama.cpp on SmolLM2-135M."""
    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.kinds.inference.prompts import make_prompts
    from llmbench.models import resolve

    point = make_point(a, "llamacpp", "smollm2-135m", "cpu", "auto", {},
                       {"n_threads": a.threads} if a.threads else {})
    be = LlamaCppBackend(point.engine_call(), resolve(point.model))
    be.load()
    be.prepare(point.engine_call())
    ll, llm = be._ll, be.llm
    prompt = make_prompts(be, 1, a.input_len, 0, 0)[0]
    hl = ll.Llama(str(be.path), n_ctx=a.input_len + a.output_len + 16, n_threads=be.n_threads,
                  verbose=False)
    return be, point, {
        "direct": lambda: direct_lowlevel(llm, ll, be.ctx, prompt, a.output_len, be.vocab_size),
        "generate": lambda: direct_highlevel(hl, prompt, a.output_len)}


def transformers_engine(a) -> tuple:
    """(backend, point, direct paths by name) for transformers; only the backend's public
    load/prepare/generate are called."""
    from llmbench.backends.transformers import TransformersBackend
    from llmbench.kinds.inference.prompts import make_prompts
    from llmbench.metrics import last_token_time
    from llmbench.models import resolve

    model = a.model
    if model == "tiny":
        from llmbench.models.catalog import ModelArch, register

        register(ModelArch(name=TINY, family="llama", layers=2, hidden=64, heads=4, kv_heads=2,
                           ffn=128, vocab=1000, max_position=256))
        model = TINY
    options = {"kv_cache": "static", "compile": True} if a.fast else {}
    backend_options = {"threads": a.threads} if a.threads else {}
    point = make_point(a, "transformers", model, a.device, a.dtype, options, backend_options)
    be = TransformersBackend(point.engine_call(), resolve(model))
    be.load()
    be.prepare(point.engine_call())
    prompts = make_prompts(be, 1, a.input_len, point.seed, 0)

    def direct() -> float:
        t0 = time.perf_counter()
        timelines = be.generate(prompts, a.output_len, t0)
        return last_token_time(timelines, time.perf_counter()) - t0

    return be, point, {"direct": direct}


def make_point(a, backend: str, model: str, device: str, dtype: str, options: dict,
               backend_options: dict):
    from llmbench.kinds.inference.spec import Point

    return Point(backend=backend, model=model, device=device, dtype=dtype, batch_size=1,
                 input_len=a.input_len, output_len=a.output_len, options=options,
                 backend_options=backend_options, repeats=1, warmups=0, energy_min_window_s=0)


def sampler_meter(device: str, period_s: float):
    """The device's meter sampling power every period_s in every window; a stand-in with a
    free reading and no counter where the device's meter reads no power (RAPL, none)."""
    from llmbench.measure.power import EnergyMeter, open_meter

    class Probe(EnergyMeter):
        source, available, reads_power = "probe (stand-in: reading costs nothing)", True, True

        def _power_w(self) -> float:
            return 0.0

    meter = open_meter(device, 1, sampling="dense")
    if not meter.reads_power:
        meter = Probe("", sampling="dense")
    meter.SAMPLE_PERIOD_S = period_s
    return clock_reads(meter)


def clock_reads(meter):
    """Note the sampling thread's own CPU clock at each power reading: the difference between a
    thread's consecutive readings is the CPU one wake-up costs (meter.wake_cpu_s() the median),
    a figure that the machine's noise in wall time cannot hide."""
    read, clocks = meter._power_w, {}

    def stamped():
        clocks.setdefault(threading.current_thread(), []).append(time.thread_time())
        return read()

    def wake_cpu_s() -> float | None:
        gaps = [b - a for c in clocks.values() for a, b in zip(c, c[1:])]
        return statistics.median(gaps) if gaps else None

    meter._power_w, meter.wake_cpu_s = stamped, wake_cpu_s
    return meter


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("llamacpp", "transformers"), default="llamacpp")
    ap.add_argument("--model", default="tiny", help="transformers: a catalog model (random "
                    "weights) or 'tiny'; llama.cpp runs SmolLM2-135M")
    ap.add_argument("--device", default="cpu", help="transformers: cpu | cuda[:N]")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--fast", action="store_true",
                    help="transformers: the fast path (static KV cache + torch.compile'd step)")
    ap.add_argument("--threads", type=int, default=None,
                    help="engine CPU threads (llama.cpp default: every core; transformers: torch's)")
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=160,
                    help="ABBA blocks per variant (each: 2 runs of the variant, 2 direct)")
    ap.add_argument("--observers", action="store_true",
                    help="also price each observer: windows without the watch, without any "
                         "observer, with the power sampler (--sampler-ms); and Llama.generate")
    ap.add_argument("--sampler-ms", default="50,5",
                    help="with --observers: power-sampling periods to price, comma-separated ms")
    ap.add_argument("--nice", type=int, default=0,
                    help="run at this niceness (negative: ahead of the machine's other work; "
                         "both sides alike)")
    ap.add_argument("--drop-contended", action="store_true",
                    help="leave out blocks in which other processes used more than "
                         "CPU_SHARE_LIMIT of the CPU (their count is printed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", help="write every block's times (s) to this JSON file")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the blocks, run N more whole points under cProfile and print "
                         "the functions that take their bookkeeping (outside the timed window)")
    ap.add_argument("--breakdown", type=int, default=0, metavar="N",
                    help="after the blocks, run N more whole points with each step of a point "
                         "timed on the caller's thread (reader threads left out) and print them")
    a = ap.parse_args(argv)
    for flag in ("profile", "breakdown"):
        if getattr(a, flag) < 0:
            ap.error(f"--{flag}: a number of points >= 0, not {getattr(a, flag)}")
    return a


def abba(variant: Callable[[], tuple[float, ...]], direct: Callable[[], float],
         flip: bool) -> tuple[list[tuple[float, ...]], list[float]]:
    """One block: direct, variant, variant, direct (or the mirror when flip), so each variant
    run has a direct run beside it in time, and a linear drift and the order within a pair
    cancel in the block's ratio."""
    runs, directs = [], []
    for is_variant in ((False, True, True, False) if not flip else (True, False, False, True)):
        if is_variant:
            runs.append(variant())
        else:
            directs.append(direct())
    return runs, directs


def block_ratio(runs: list[tuple[float, ...]], directs: list[float], col: int) -> float:
    """log(variant / direct) of one block: the mean of its two variant runs' logs less the
    mean of its two direct runs' logs."""
    return (sum(math.log(r[col]) for r in runs) - sum(math.log(d) for d in directs)) / len(runs)


def other_share(busy0: float, own0: float, t0: float) -> float:
    """Other processes' share of the machine's CPU since (busy0, own0, t0)."""
    from llmbench.measure.contention import busy_cpu_s

    wall = time.perf_counter() - t0
    return max(busy_cpu_s() - busy0 - (time.process_time() - own0), 0.0) / (wall * (os.cpu_count() or 1))


def main() -> None:
    a = parse_args()
    if a.nice:
        os.nice(a.nice)

    from llmbench.kinds.inference.kind import _bookkeep, base_record, run_point
    from llmbench.kinds.inference.offline import run_offline
    from llmbench.measure.contention import CPU_SHARE_LIMIT, busy_cpu_s
    from llmbench.measure.observers import RECORD_SYNC
    from llmbench.measure.power import EnergyMeter, open_meter
    from llmbench.store import Store

    be, point, directs = (llamacpp_engine if a.engine == "llamacpp" else transformers_engine)(a)
    model = be.model
    store = Store(tempfile.mkdtemp(prefix="llmbench-overhead-"))
    parts: dict[str, list[float]] = {k: [] for k in ("base_record", "run_point outside the window",
                                                     "facts and roofline", "store write")}
    last: dict = {}

    def whole_point() -> tuple[float, float]:
        """(seconds for the whole point as `llmbench run` does it, its batch_latency_s)"""
        t0 = time.perf_counter()
        rec = base_record(point, "overhead", model, type(be))
        t1 = time.perf_counter()
        book = []

        def bookkeep():  # as run_group does: while NVML's closing energy read is out
            b0 = time.perf_counter()
            _bookkeep(rec, be, 0.0)
            book.append(time.perf_counter() - b0)

        # on_repeat: as the CLI's progress bar is told
        run_point(be, point, rec, on_repeat=lambda: None, before_energy=bookkeep)
        t2 = time.perf_counter()
        rec.observers.setdefault("record_sync", RECORD_SYNC)
        store.write(rec, sync_later=True)  # as run_group writes
        t3 = time.perf_counter()
        lat = rec.metrics["batch_latency_s"].mean
        for k, dt in zip(parts, (t1 - t0, t2 - t1 - lat - book[0], book[0], t3 - t2)):
            parts[k].append(dt)
        last["record"] = rec
        return t3 - t0, lat

    def window(meter) -> tuple[float]:
        """batch_latency_s of the offline workload with this meter (observers as given)."""
        metrics, _ = run_offline(be, point, meter)
        return (metrics["batch_latency_s"].mean,)

    bare = open_meter(point.device, 1)
    direct = directs.pop("direct")
    variants: dict[str, Callable[[], tuple[float, ...]]] = {"whole": whole_point}
    samplers = {}
    if a.observers:
        periods_ms = [float(x) for x in a.sampler_ms.split(",") if x.strip()]
        samplers = {f"sampler {ms:g} ms": sampler_meter(point.device, ms / 1e3) for ms in periods_ms}
        variants |= {"no watch": lambda: window(bare),
                     "no observers": lambda: window(EnergyMeter("off for the benchmark")),
                     **{k: (lambda m=m: window(m)) for k, m in samplers.items()},
                     **{k: (lambda f=f: (f(),)) for k, f in directs.items()}}

    for f in variants.values():  # warm-up every path once (compiles the fast path)
        f()
    direct()
    for v in parts.values():
        v.clear()
    rng = np.random.default_rng(a.seed)
    blocks: dict[str, list[dict]] = {k: [] for k in variants}
    load0, busy0, own0, t0 = os.getloadavg()[0], busy_cpu_s(), time.process_time(), time.perf_counter()
    steal0 = steal_cpu_s()
    names = list(variants)
    for r in range(a.repeats):
        for i in rng.permutation(len(names)):
            b0, o0, s0 = busy_cpu_s(), time.process_time(), time.perf_counter()
            runs, ds = abba(variants[names[i]], direct, flip=bool(r % 2))
            blocks[names[i]].append({"repeat": r, "runs": runs, "direct": ds, "t_s": s0 - t0,
                                     "other_cpu": other_share(b0, o0, s0)})
    wall, busy, own = time.perf_counter() - t0, busy_cpu_s() - busy0, time.process_time() - own0
    steal = (steal_cpu_s() - steal0) / (wall * (os.cpu_count() or 1))
    profile = profile_points(whole_point, a.profile) if a.profile else None
    breakdown = breakdown_points(whole_point, be, a.breakdown) if a.breakdown else None
    be.close()
    other = max(busy - own, 0.0) / (wall * (os.cpu_count() or 1))

    print(f"{a.engine}, {model.name} ({'random weights' if model.synthetic_weights else model.source}), "
          f"{point.device}, batch 1, in {a.input_len}, out {a.output_len}, {a.repeats} ABBA blocks "
          f"per variant (variants in random order each repeat), energy meter: {bare.source}"
          + (f", {be.n_threads} threads" if hasattr(be, "n_threads") else "")
          + (", fast path (static cache + compile)" if a.fast else "")
          + (f", niceness {os.nice(0)}" if a.nice else ""))
    print(f"contention: other processes used {other:.1%} of the machine's CPU during the run; "
          f"load average {load0:.2f} -> {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"the hypervisor stole {steal:.1%} of the CPU time")
    print("observers in the record: " + "; ".join(f"{k}: {v}" for k, v in last["record"].observers.items()))
    report(blocks, parts, a.drop_contended, CPU_SHARE_LIMIT)
    for k, m in samplers.items():
        if (cpu_s := m.wake_cpu_s()) is not None:
            print(f"{k} ({m.source}): the thread's CPU per wake-up {cpu_s * 1e6:.0f} us, "
                  f"{cpu_s / m.SAMPLE_PERIOD_S:.3%} of the window's time")
    if profile:
        print(profile)
    if breakdown:
        print(breakdown)
    if a.dump:
        with open(a.dump, "w") as f:
            json.dump({"blocks": blocks, "bookkeeping_parts_s": parts}, f)


def profile_points(whole_point: Callable[[], tuple[float, float]], n: int, top: int = 40) -> str:
    """Where a point's bookkeeping goes: n whole points under cProfile (after the measured
    blocks: the profiler's own cost never enters a ratio), the functions by cumulative time,
    with the timed windows' share named so the rest reads as bookkeeping."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    windows = wholes = 0.0
    for _ in range(n):
        prof.enable()
        whole, lat = whole_point()
        prof.disable()
        wholes, windows = wholes + whole, windows + lat
    out = io.StringIO()
    print(f"profile of {n} whole points (profiled: slower than measured): {wholes / n * 1e3:.1f} ms "
          f"a point, of it the timed window {windows / n * 1e3:.1f} ms, bookkeeping "
          f"{(wholes - windows) / n * 1e3:.1f} ms; llmbench's, NVML's and torch.cuda's functions "
          f"by cumulative time (the engine's own are left out):", file=out)
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(
        r"llmbench/|pynvml|torch/cuda", top)
    return out.getvalue()


class Sections:
    """Wall time the caller's (main) thread spends in named functions, each net of the named
    functions it calls (exclusive time). cProfile in Python 3.12 follows every thread, so it
    counts the NVML reads a reader thread waits in as if they were the point's; this does not.
    Time in a named function on another thread (the aside thread's NVML reads) is summed apart,
    inclusive, in `aside`."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.totals: dict[str, float] = {}
        self.aside: dict[str, float] = {}
        self.calls: dict[str, int] = {}  # the caller's thread's calls of each name
        self._stack: list[list] = []  # [name, start, time in named callees]
        self._undo: list[tuple[object, str, object]] = []

    def wrap(self, owner, attr: str, name: str | None = None) -> None:
        """Time owner.attr (a module's function or a class's method) under `name`."""
        real = getattr(owner, attr)
        name = name or attr
        sections = self

        def timed(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                t0 = sections.clock()
                try:
                    return real(*args, **kwargs)
                finally:
                    sections.aside[name] = sections.aside.get(name, 0.0) + sections.clock() - t0
            sections.calls[name] = sections.calls.get(name, 0) + 1
            sections._stack.append([name, sections.clock(), 0.0])
            try:
                return real(*args, **kwargs)
            finally:
                n, t0, inner = sections._stack.pop()
                spent = sections.clock() - t0
                sections.totals[n] = sections.totals.get(n, 0.0) + spent - inner
                if sections._stack:
                    sections._stack[-1][2] += spent

        self._undo.append((owner, attr, owner.__dict__.get(attr, real)))
        setattr(owner, attr, timed)

    def restore(self) -> None:
        for owner, attr, real in reversed(self._undo):
            setattr(owner, attr, real)
        self._undo.clear()


def breakdown_points(whole_point: Callable[[], tuple[float, float]], backend, n: int) -> str:
    """Where a point's bookkeeping goes on the caller's thread: n more whole points with the
    steps of a point timed (Sections), each step's mean ms a point, and what no step holds."""
    from llmbench import definitions, roofline
    from llmbench.kinds.inference import kind, offline
    from llmbench.measure import contention, env, gpm, power
    from llmbench.store import Store, store
    from llmbench.store.record import Record

    sec = Sections()
    for owner, attr, name in (
            (Store, "write", "store write: its own lines"),
            (Record, "model_dump_json", "store write: the record as JSON"),
            (store, "redact_json", "store write: secrets redacted"),
            (definitions, "stamp", "store write: definitions stamped"),
            (store, "sync_written", "store: a record's fsyncs (file, directory)"),
            (Store, "flush", "store: waiting for the previous record's fsyncs"),
            (store, "atomic_write_text", "store write: temp file, rename"),
            (env, "capture", "base_record: env.capture"), (env, "hardware", "base_record: env.hardware"),
            (roofline, "annotate", "facts: roofline"),
            (type(backend), "effective_options", "facts: backend.effective_options"),
            (type(backend), "model_facts", "facts: backend.model_facts"),
            (type(backend), "workload_facts", "facts: backend.workload_facts"),
            (kind.ContentionWatch, "for_device", "contention set-up"),
            (kind.CounterWatch, "for_device", "counters set-up"), (kind, "open_meter", "meter set-up"),
            (type(backend), "prepare", "backend.prepare"), (offline, "make_prompts", None),
            (type(backend), "engine_timings", "backend.engine_timings"),
            (type(backend), "memory_peak_gib", "backend.memory_peak_gib"),
            (contention.ContentionWatch, "_ours", "contention: our process tree"),
            (contention, "_procs", "contention: our tree: /proc listed"),
            (contention, "ppid_descendants", "contention: our tree: parents read (stat files)"),
            (contention, "proc_descendants", "contention: our tree: children files read (full walk)"),
            (contention, "pids_cpu_s", "contention: our CPU times"),
            (contention, "busy_cpu_s", "contention: machine CPU times"),
            (contention, "proc_stat", "contention: /proc/stat read (task count, machine CPU)"),
            (contention.ContentionWatch, "_gpu_scan", "contention: GPU scan (hand-over)"),
            (contention, "gpu_processes", "contention: NVML's GPU process list"),
            (power.NvmlMeter, "_read_j", "energy: NVML counter read"),
            (power.NvmlMeter, "_power_w", "energy: NVML power sample"),
            (contention.ContentionWatch, "result", "contention: result (scans taken)"),
            (gpm.CounterWatch, "_edge", "counters: clocks/temperature edges"),
            (gpm.CounterWatch, "_sample", "counters: GPM samples"),
            (gpm.CounterWatch, "_metrics", "counters: GPM metrics"),
            (gpm.CounterWatch, "result", "counters: result"),
            (power.EnergyWindow, "settle", "energy: settle (waits for the reader)"),
            (power, "aside", "energy: reads (hand-over)"), (gpm, "aside", "counters: hand-over"),
            (threading.Thread, "start", "thread starts"),
            (offline, "offline_metrics", None), (offline, "energy_metrics", None),
            (offline, "summarize", "summarize (engine, warm-up)"),
            (kind, "observers", None), (kind, "gpm_attach", None)):
        sec.wrap(owner, attr, name)
    wholes = windows = 0.0
    try:
        for _ in range(n):
            whole, lat = whole_point()
            wholes, windows = wholes + whole, windows + lat
    finally:
        sec.restore()
    return (breakdown_text(sec.totals, n, wholes, windows, sec.aside, sec.calls) + "\n"
            + tree_text(contention))


def tree_text(contention) -> str:
    """What the contention watch counts as ours now (each process is one stat read an edge)."""
    ours = sorted(contention.own_pids())
    names: dict[str, int] = {}
    for pid in ours:
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = "?"
        names[comm] = names.get(comm, 0) + 1
    return (f"our process tree now: {len(ours)} process(es): "
            + ", ".join(f"{k} x{v}" for k, v in sorted(names.items(), key=lambda kv: -kv[1])))


def breakdown_text(totals: dict[str, float], n: int, wholes: float, windows: float,
                   aside: dict[str, float] | None = None, calls: dict[str, int] | None = None) -> str:
    book = (wholes - windows) / n
    lines = [f"breakdown of {n} whole points on the caller's thread: {wholes / n * 1e3:.2f} ms a "
             f"point, of it the timed window {windows / n * 1e3:.2f} ms, bookkeeping "
             f"{book * 1e3:.2f} ms; each step's own time (ms a point):"]
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        often = f" ({calls[name] / n:.3g} calls a point)" if calls and name in calls else ""
        lines.append(f"  {t / n * 1e3:8.3f}  {name}{often}")
    lines.append(f"  {book * 1e3 - sum(totals.values()) / n * 1e3:8.3f}  in no step named here "
                 "(base_record and the facts and roofline, timed above; run_offline's and run_point's own lines)")
    if aside:
        lines.append("on other threads (the aside thread's NVML calls, the store's sync thread; inclusive, ms a point):")
        lines += [f"  {t / n * 1e3:8.3f}  {name}" for name, t in sorted(aside.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


LABELS = {"whole": "whole point", "window": "batch_latency_s", "generate": "Llama.generate"}
GOALS = {"window": 1.01, "whole": 1.02}


def report(blocks: dict[str, list[dict]], parts: dict[str, list[float]], drop_contended: bool,
           limit: float) -> None:
    """Each variant's ratio to the direct loop, from its blocks: the Hodges-Lehmann estimate
    of the blocks' log-ratios with its signed-rank 95% interval (the verdict), and the
    geometric mean with its t-interval beside it."""
    med = statistics.median
    all_blocks = [b for bs in blocks.values() for b in bs]
    busy = [b for b in all_blocks if b["other_cpu"] > limit]
    print(f"blocks in which other processes used > {limit:.0%} of the CPU: {len(busy)} of "
          f"{len(all_blocks)}" + ((" (left out below)" if drop_contended else " (kept)") if busy else ""))
    if drop_contended:
        blocks = {k: [b for b in bs if b["other_cpu"] <= limit] for k, bs in blocks.items()}
    by_repeat = {k: {b["repeat"]: block_ratio(b["runs"], b["direct"], 0) for b in bs}
                 for k, bs in blocks.items()}
    if "whole" in blocks:
        by_repeat["window"] = {b["repeat"]: block_ratio(b["runs"], b["direct"], 1) for b in blocks["whole"]}
    logs = {k: list(v.values()) for k, v in by_repeat.items()}
    direct_s = [d for bs in blocks.values() for b in bs for d in b["direct"]]
    print(f"  direct (no llmbench) median {med(direct_s) * 1e3:.2f} ms over {len(direct_s)} runs")
    for k in sorted(logs, key=lambda k: k not in GOALS):
        m, mlo, mhi = hodges_lehmann_ci(logs[k])
        gm, lo, hi = mean_ci(logs[k])
        goal = GOALS.get(k)
        print(f"ratio {LABELS.get(k, k):16s}/ direct = {m:.4f} [95% CI {mlo:.4f}, {mhi:.4f}] "
              f"(+-{(mhi - mlo) / 2:.2%}, {len(logs[k])} blocks)  geometric mean {gm:.4f} "
              f"[{lo:.4f}, {hi:.4f}]"
              + (f"  goal <= {goal}: {'met' if mhi <= goal else 'not shown'}" if goal else ""))
    if "whole" in blocks:
        book = [w - lat for b in blocks["whole"] for w, lat in b["runs"]]
        print(f"bookkeeping per point (whole - batch_latency_s): median {med(book) * 1e3:.1f} ms "
              f"(goal <= 10 ms); of it: " + ", ".join(f"{k} {med(v) * 1e3:.2f} ms" for k, v in parts.items()))
    if "no observers" in by_repeat:
        base = by_repeat["no observers"]
        for k in (k for k in logs if k not in ("no observers", "whole", "generate")):
            # repeat r of each: (k / direct) / (no observers / direct)
            gm, lo, hi = mean_ci([x - base[r] for r, x in by_repeat[k].items() if r in base])
            print(f"observer cost: {LABELS.get(k, k)} / no observers = {gm:.4f} [95% CI {lo:.4f}, {hi:.4f}]")


def steal_cpu_s() -> float:
    """CPU-seconds the hypervisor gave to other guests while ours wanted them (0 on bare metal)."""
    import psutil

    return getattr(psutil.cpu_times(), "steal", 0.0)


def mean_ci(logs: list[float]) -> tuple[float, float, float]:
    """exp of the mean log-ratio with its 95% t-interval: the geometric mean of the ratios."""
    from scipy import stats

    x = np.asarray(logs)
    n = len(x)
    mean = float(x.mean())
    half = float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def hodges_lehmann_ci(logs: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """exp of the Hodges-Lehmann estimate of the log-ratios (the median of all pairwise means)
    with the distribution-free interval of the signed-rank test (normal approximation): like
    the median, a block slowed by a burst of other work moves it by one rank, not by its size,
    and it is nearly as tight as the mean on well-behaved data (efficiency 0.95, median 0.64)."""
    from scipy import stats

    x = np.asarray(logs)
    n = len(x)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = max(0, math.floor(len(walsh) / 2 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24)))
    return (float(np.exp(np.median(walsh))), float(np.exp(walsh[k])),
            float(np.exp(walsh[len(walsh) - 1 - k])))


if __name__ == "__main__":
    main()
