"""Offline batch inference: the paper's setting. One batch of `batch_size` concurrent
requests per repeat, prompts of exactly input_len tokens, exactly output_len generated.

Warm-ups run first and are reported apart (`warmup_batch_latency_s`), never averaged in.

Timing: a repeat's `batch_latency_s` runs from the batch start to its last token, as the
backend stamped it; the time until generate() returned (which for llama.cpp also reads its
perf counters and frees the batch) is kept apart as `generate_return_s`.

Energy: a meter's window covers the timed batch and, while it is shorter than
`point.energy_min_window_s` (2 s by default; NVML's counter is too coarse below that), more
batches of fresh prompts of the same shape; the repeat's `energy_j` is the window's energy /
the batches in it. Those extra batches are not timed: latency repeats stay one batch each.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from llmbench.backends.base import Backend
from llmbench.measure.power import (BUFFER_SAMPLES_MIN, MIN_RELIABLE_WINDOW_S, EnergyMeter,
                                    EnergyWindow, min_reliable_window_s)
from llmbench.measure.stats import summarize
from llmbench.measure.timeline import BatchTiming
from llmbench.metrics import energy_metrics, last_token_time, metric, offline_metrics
from llmbench.kinds.inference.spec import Point
from llmbench.measure.metric_stats import MetricStats
from llmbench.kinds.inference.prompts import make_prompts

ENERGY_PROMPTS = 1_000_000  # prompt indices of the untimed energy batches: never a repeat's


@dataclass
class OfflineRun:
    """A measured offline point before its energy is taken (measure_offline): a reader
    thread's closing counter read (~4 ms with NVML) is still out, and the caller's other
    bookkeeping may run before take_energy() waits for it."""
    metrics: dict[str, MetricStats]
    notes: list[str]
    batches: list[BatchTiming]
    windows: list[EnergyWindow]
    point: Point

    def take_energy(self) -> None:
        """Settle every window's energy into its batch, then the energy metrics and note."""
        for b, win in zip(self.batches, self.windows):
            if (energy := win.energy_j) is not None:
                b.energy_j, b.avg_power_w = energy / b.energy_batches, win.avg_power_w
                b.energy_window_s = win.duration_s
        self.metrics.update(energy_metrics(self.batches))
        windows = [b.energy_window_s for b in self.batches if b.energy_window_s is not None]
        used = [w for w in self.windows if w.energy_j is not None]
        gaps = [w.buffer_gap_s for w in used if w.buffer_gap_s]
        limit = min_reliable_window_s({w.method for w in used}, statistics.median(gaps) if gaps else None)
        if windows and min(windows) < limit:
            coarse = "NVML's energy counter is" if limit == MIN_RELIABLE_WINDOW_S else \
                f"{BUFFER_SAMPLES_MIN} of the driver's power samples are the least"
            self.notes.append(
                f"energy unreliable: measured over windows of {min(windows):.2f} s, under "
                f"{limit:g} s (energy_min_window_s={self.point.energy_min_window_s:g}); "
                f"{coarse} for that")


def run_offline(backend: Backend, point: Point, meter: EnergyMeter,
                on_repeat=None) -> tuple[dict[str, MetricStats], list[str]]:
    run = measure_offline(backend, point, meter, on_repeat)
    run.take_energy()
    return run.metrics, run.notes


def measure_offline(backend: Backend, point: Point, meter: EnergyMeter, on_repeat=None) -> OfflineRun:
    notes: list[str] = []
    backend.prepare(point.engine_call())
    warm = []
    for w in range(point.warmups):
        prompts = make_prompts(backend, point.batch_size, point.input_len, point.seed, -1 - w)
        t0 = time.perf_counter()
        backend.generate(prompts, point.output_len, t0)
        warm.append(time.perf_counter() - t0)
        if on_repeat:
            on_repeat()
    batches: list[BatchTiming] = []
    energy_windows: list[EnergyWindow] = []
    engine: dict[str, list[float]] = {}
    short = 0
    for rep in range(point.repeats):
        prompts = make_prompts(backend, point.batch_size, point.input_len, point.seed, rep)
        n = 1
        with meter.window() as win:
            t0 = time.perf_counter()
            timelines = backend.generate(prompts, point.output_len, t0)
            t_ret = time.perf_counter()
            timings = backend.engine_timings()  # of the timed batch, before any energy batch
            while meter.available and time.perf_counter() - t0 < point.energy_min_window_s:
                extra = make_prompts(backend, point.batch_size, point.input_len, point.seed,
                                     ENERGY_PROMPTS * (rep + 1) + n)
                backend.generate(extra, point.output_len, time.perf_counter())
                n += 1
        for tl, p in zip(timelines, prompts):
            if tl.prompt_tokens is None:
                tl.prompt_tokens = len(p)
            if tl.output_tokens != point.output_len:
                short += 1
        batches.append(BatchTiming(t0, last_token_time(timelines, t_ret), timelines,
                                   t_return=t_ret, energy_batches=n))
        energy_windows.append(win)
        for k, v in timings.items():
            engine.setdefault(k, []).append(v)
        if on_repeat:
            on_repeat()
    metrics = offline_metrics(batches, point.input_len)
    for k, v in engine.items():  # the engine's own view, e.g. llama.cpp's perf counters
        known = metric(f"engine_{k}")  # a counter the catalog lacks has no known unit
        metrics[f"engine_{k}"] = summarize(v, known.unit if known else "")
    if warm:
        metrics["warmup_batch_latency_s"] = summarize(warm, "s")
    if short:
        notes.append(f"{short} request(s) returned a different number of tokens than "
                     f"output_len={point.output_len}")
    metrics["short_outputs"] = summarize([short], "requests", keep_samples=False)
    return OfflineRun(metrics, notes, batches, energy_windows, point)
