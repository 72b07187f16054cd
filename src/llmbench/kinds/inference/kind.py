"""Inference points (offline, perplexity) as a kind of the shared pipeline (launch/kind.py):
validate every point before anything runs, group points so each model loads once per group,
run a group's points on its loaded engine."""

from __future__ import annotations

import time
from collections.abc import Callable

from llmbench.backends import backend_class, require_installed
from llmbench.errors import SpecError
from llmbench.hardware.device import cuda_device_count
from llmbench.launch.failures import describe, release_memory
from llmbench.launch.kind import PointKind
from llmbench.measure import env as envmod
from llmbench.measure.contention import ContentionWatch
from llmbench.measure.gpm import CounterWatch
from llmbench.measure.gpm import attach as gpm_attach
from llmbench.measure.observers import PROGRESS, TIMELINES, observed, observers
from llmbench.measure.power import open_meter
from llmbench.measure.stats import summarize
from llmbench.models.sources import ModelRef, resolve
from llmbench.kinds.inference.spec import Point
from llmbench.store import Record
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo


def validate(points: list[Point], *, local_devices: bool = True) -> dict[str, ModelRef]:
    """Everything that can be checked without running: engines, models, combinations.
    local_devices=False leaves the GPU count to the caller (a Ray driver checks its cluster's)."""
    models, problems = check(points, local_devices=local_devices)
    if problems:
        raise SpecError(problems)
    return models


def check(points: list[Point], *, local_devices: bool = True
          ) -> tuple[dict[str, ModelRef], list[tuple[str, str]]]:
    """validate's findings, every one of them: a bad model does not hide an engine's refusal
    of an option on the points whose model is fine."""
    problems: list[tuple[str, str]] = []
    models: dict[str, ModelRef] = {}
    for name in sorted({p.model for p in points}):
        try:
            models[name] = resolve(name)
        except SpecError as e:
            problems.extend(e.problems)
        except (OSError, ValueError, RuntimeError) as e:  # e.g. '~nosuchuser/x', a NUL byte
            problems.append(("model", f"{name!r} cannot be resolved: {e}"))
    if local_devices:
        problems.extend(device_problems(points, cuda_device_count))
    installed = set()
    for b in sorted({p.backend for p in points}):
        try:
            require_installed(b)
            installed.add(b)
        except SpecError as e:
            problems.extend(e.problems)
    checkable = [p for p in points if p.model in models and p.backend in installed]
    for p in checkable:
        problems.extend(backend_class(p.backend).check(p.engine_call(), models[p.model]))
    from llmbench.kinds.inference.fidelity import fidelity_problems

    for p in checkable:
        problems.extend(fidelity_problems(p, models[p.model]))
    engine_fields = {f for f, _ in problems}
    for p in checkable:
        problems.extend(prob for prob in _context_problems(p, models[p.model])
                        if prob[0] not in engine_fields)
    return models, list(dict.fromkeys(problems))


def device_problems(points: list[Point], count: Callable[[], int],
                    where: str = "") -> list[tuple[str, str]]:
    """Points that need more CUDA devices than `count()` says are present (one host's, or the
    largest Ray node's)."""
    problems: list[tuple[str, str]] = []
    cuda = [p for p in points if p.device.startswith("cuda")]
    if not cuda:
        return problems
    n = count()
    if n == 0:
        return [("device", f"{cuda[0].device!r} asked for, but no CUDA device is present{where}")]
    for p in cuda:
        need = p.options.tensor_parallel * p.options.pipeline_parallel
        first = int(p.device.split(":")[1]) if ":" in p.device else 0
        if first + need > n:
            frm = f"from {p.device} " if ":" in p.device else ""
            prob = ("options.tensor_parallel",
                    f"tensor_parallel x pipeline_parallel = {need} device(s) {frm}but only {n} "
                    f"CUDA device(s) are present{where}")
            if prob not in problems:
                problems.append(prob)
    return problems


def _context_problems(p: Point, model: ModelRef) -> list[tuple[str, str]]:
    """Lengths over the model's context, for every backend (an engine would fail or silently
    truncate)."""
    limit = model.arch.max_position if model.arch else None
    if not limit:
        return []
    if p.workload == "offline" and p.input_len + p.output_len > limit:
        return [("input_len+output_len", f"{p.input_len + p.output_len} exceeds the model's "
                                         f"context of {limit} tokens")]
    if p.workload == "perplexity" and p.perplexity and p.perplexity.context_len > limit:
        return [("perplexity.context_len", f"{p.perplexity.context_len} exceeds the model's "
                                           f"context of {limit} tokens")]
    return []


def base_record(point: Point, run_id: str, model: ModelRef, backend_cls) -> Record:
    kind = "perplexity" if point.workload == "perplexity" else "inference"
    hw = envmod.hardware(point.device, point.options.tensor_parallel * point.options.pipeline_parallel)
    return Record(
        run_id=run_id, point_key=point.key, kind=kind,
        backend=BackendInfo(name=point.backend, options=point.backend_options),
        model=ModelInfo(name=model.name, source=model.source, params=model.params,
                        synthetic_weights=model.synthetic_weights),
        hardware=HardwareInfo(**hw), workload=point.workload_fields(),
        env=envmod.capture(), spec=point.model_dump(mode="json"),
        notes=[f"no roofline: {model.arch_note}"] if model.arch_note else [])


def run_point(backend, point: Point, rec: Record, on_repeat=None, before_energy=None) -> Record:
    """Measure `point` into `rec`. `before_energy` (the caller's bookkeeping) runs while
    NVML's closing energy read is still out on the aside thread, so the two overlap."""
    from llmbench.kinds.inference.offline import measure_offline
    from llmbench.kinds.inference.perplexity import run_perplexity

    watch = ContentionWatch.for_device(point.device, backend.device_count())
    counters = CounterWatch.for_device(point.device, backend.device_count())
    meter = observed(open_meter(point.device, backend.device_count(), sampling=point.power_sampling),
                     watch, counters)
    offline = point.workload != "perplexity"
    if offline:
        run = measure_offline(backend, point, meter, on_repeat=on_repeat)
        metrics, notes = run.metrics, run.notes
    else:
        metrics, notes = run_perplexity(backend, point, meter)
    rec.metrics.update(metrics)
    rec.notes.extend(notes)
    # what does not wait for NVML's energy counter first: its closing read (~4 ms on an
    # H200) is out on the aside thread meanwhile, after the GPM samples gpm_attach waits for
    gpm_attach(rec, meter.take())
    rec.env["contention"] = contention = watch.result()
    if contention["contended"]:
        rec.notes.append("contended: " + "; ".join(contention["reasons"]))
    peak = backend.memory_peak_gib()
    if peak is not None:
        rec.metrics["mem_peak_gib"] = summarize([peak], "GiB", keep_samples=False)
    if before_energy:
        before_energy()
    if offline:
        taken = len(run.notes)
        run.take_energy()
        rec.metrics.update(run.metrics)
        rec.notes.extend(run.notes[taken:])
    rec.power = meter.describe()  # after the windows: it names the method they actually used
    rec.observers.update(observers(meter, watch, counters,
                                   progress=PROGRESS if offline and on_repeat else None,
                                   timelines=TIMELINES if offline else None))
    if offline and point.fidelity:  # after every timed window: it compares, never times
        from llmbench.kinds.inference.fidelity import measure_fidelity

        fidelity, fidelity_notes = measure_fidelity(backend, point)
        rec.metrics.update(fidelity)
        rec.notes.extend(fidelity_notes)
    return rec


def attach_roofline(rec: Record) -> None:
    """Fill rec.roofline when the roofline module knows the hardware (issue: roofline)."""
    try:
        from llmbench.roofline import annotate
    except ImportError:
        return
    annotate(rec)


class InferenceKind(PointKind):
    """Offline and perplexity points: a group is the points that share an engine load."""

    name = "inference"

    def parse_point(self, doc: dict) -> Point:
        return Point.model_validate(doc)

    def prepare(self, points: list[Point], *, local_devices: bool = True) -> dict[str, ModelRef]:
        return validate(points, local_devices=local_devices)

    def context(self, points: list[Point]) -> dict[str, ModelRef]:
        return {name: resolve(name) for name in {p.model for p in points}}

    def device_problems(self, points, count, where=""):
        return device_problems(points, count, where)

    def devices(self, p: Point) -> int:
        return p.options.tensor_parallel * p.options.pipeline_parallel if p.device.startswith("cuda") else 0

    def load_key(self, p: Point) -> tuple:
        return p.load_key

    def base_record(self, p: Point, run_id: str, models: dict[str, ModelRef]) -> Record:
        return base_record(p, run_id, models[p.model], backend_class(p.backend))

    def run_group(self, group, models, run_id, say, before_point=None):
        """Load the group's engine once, run its points in order. An engine's Python-level
        failure costs its point (or, at load, the group); a crash of the process itself is
        the isolating launcher's business."""
        first = group[0]
        cls = backend_class(first.backend)
        backend = cls(first.engine_call(), models[first.model])
        load_error = None
        say("load", first, 0)
        t0 = time.perf_counter()
        try:
            backend.load()
        except Exception as e:  # the engine's own failure: costs this group, not the sweep
            load_error = describe(e)
        load_s = time.perf_counter() - t0
        for p in group:
            rec = base_record(p, run_id, models[p.model], cls)
            try:
                rec.backend.version = backend.version()
            except Exception:
                pass
            if load_error:
                rec.status, rec.error = "failed", f"load failed: {load_error}"
            else:
                say("start", p, 0)
                try:
                    if before_point:
                        before_point(p)
                    backend.use(p.engine_call())
                    run_point(backend, p, rec, on_repeat=lambda: say("repeat", p, 1),
                              before_energy=lambda: _bookkeep(rec, backend, load_s))
                    say("measured", p, 0)  # the engine's part is over
                except Exception as e:
                    rec.status, rec.error = "failed", describe(e)
                    release_memory()
            yield p, rec
        try:
            backend.close()
        except Exception:
            pass


def _bookkeep(rec: Record, backend, load_s: float) -> None:
    """What the engine reports about a measured point, its load time and roofline (which reads
    no energy metric). A failure here costs that fact, noted, never the measurement."""
    rec.metrics["load_time_s"] = summarize([load_s], "s", keep_samples=False)
    def options():
        rec.backend.options = backend.effective_options()

    def model():
        for k, v in backend.model_facts().items():
            setattr(rec.model, k, v)

    def workload():
        rec.workload.update(backend.workload_facts())

    for name, step in (("effective_options", options), ("model_facts", model),
                       ("workload_facts", workload), ("roofline", lambda: attach_roofline(rec))):
        try:
            step()
        except Exception as e:
            rec.notes.append(f"bookkeeping error, measurement kept: {name}: {describe(e)}")


