"""Offline batch inference: the paper's setting. One batch of `batch_size` concurrent
requests per repeat, prompts of exactly input_len tokens, exactly output_len generated.

Warm-ups run first and are reported apart (`warmup_batch_latency_s`), never averaged in.
"""

from __future__ import annotations

import time

from llmbench.backends.base import Backend
from llmbench.measure.power import EnergyMeter
from llmbench.measure.stats import summarize
from llmbench.measure.timeline import BatchTiming
from llmbench.metrics import offline_metrics
from llmbench.spec import Point
from llmbench.store.record import MetricStats
from llmbench.workloads.prompts import make_prompts


def run_offline(backend: Backend, point: Point, meter: EnergyMeter,
                on_repeat=None) -> tuple[dict[str, MetricStats], list[str]]:
    notes: list[str] = []
    backend.prepare(point)
    warm = []
    for w in range(point.warmups):
        prompts = make_prompts(backend, point.batch_size, point.input_len, point.seed, -1 - w)
        t0 = time.perf_counter()
        backend.generate(prompts, point.output_len, t0)
        warm.append(time.perf_counter() - t0)
        if on_repeat:
            on_repeat()
    batches: list[BatchTiming] = []
    engine: dict[str, list[float]] = {}
    short = 0
    for rep in range(point.repeats):
        prompts = make_prompts(backend, point.batch_size, point.input_len, point.seed, rep)
        with meter.window() as win:
            t0 = time.perf_counter()
            timelines = backend.generate(prompts, point.output_len, t0)
            t1 = time.perf_counter()
        for tl, p in zip(timelines, prompts):
            if tl.prompt_tokens is None:
                tl.prompt_tokens = len(p)
            if tl.output_tokens != point.output_len:
                short += 1
        batches.append(BatchTiming(t0, t1, timelines, energy_j=win.energy_j))
        for k, v in backend.engine_timings().items():
            engine.setdefault(k, []).append(v)
        if on_repeat:
            on_repeat()
    metrics = offline_metrics(batches, point.input_len)
    for k, v in engine.items():  # the engine's own view, e.g. llama.cpp's perf counters
        unit = "tok/s" if k.endswith("_tok_s") else "s" if k.endswith("_s") else ""
        metrics[f"engine_{k}"] = summarize(v, unit)
    if warm:
        metrics["warmup_batch_latency_s"] = summarize(warm, "s")
    if short:
        notes.append(f"{short} request(s) returned a different number of tokens than "
                     f"output_len={point.output_len}")
    metrics["short_outputs"] = summarize([short], "requests", keep_samples=False)
    return metrics, notes
