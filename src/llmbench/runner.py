"""Expand a sweep, validate every point before anything runs, run points grouped so each
model loads once per group, and write one record per point as soon as it is measured."""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llmbench.backends import backend_class, require_installed
from llmbench.errors import LLMBenchError, SpecError
from llmbench.measure import env as envmod
from llmbench.measure.contention import ContentionWatch, WatchedMeter
from llmbench.measure.power import open_meter
from llmbench.measure.stats import summarize
from llmbench.models.sources import ModelRef, resolve
from llmbench.spec import Point, SweepSpec
from llmbench.store import Record, Store, new_run_id
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo


@dataclass
class SweepResult:
    run_id: str
    results_dir: Path
    records: list[Record] = field(default_factory=list)
    skipped: int = 0
    #: with --resume: the stored records of the skipped points, so a summary covers the sweep
    earlier: list[Record] = field(default_factory=list)

    @property
    def failed(self) -> list[Record]:
        return [r for r in self.records if r.status == "failed"]


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
        problems.extend(backend_class(p.backend).check(p, models[p.model]))
    engine_fields = {f for f, _ in problems}
    for p in checkable:
        problems.extend(prob for prob in _context_problems(p, models[p.model])
                        if prob[0] not in engine_fields)
    return models, list(dict.fromkeys(problems))


def cuda_device_count() -> int:
    """CUDA devices visible to this process, through NVML (never imports torch); 0 without
    a driver. CUDA_VISIBLE_DEVICES narrows the count as it narrows what engines see."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
    except Exception:
        return 0
    if visible is not None:
        ids = [v for v in visible.split(",") if v.strip()]
        n = min(n, len(ids))
    return n


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


def run_point(backend, point: Point, rec: Record, on_repeat=None) -> Record:
    from llmbench.workloads.offline import run_offline
    from llmbench.workloads.perplexity import run_perplexity

    watch = ContentionWatch.for_device(point.device, backend.device_count())
    meter = WatchedMeter(open_meter(point.device, backend.device_count()), watch)
    if point.workload == "perplexity":
        metrics, notes = run_perplexity(backend, point, meter)
    else:
        metrics, notes = run_offline(backend, point, meter, on_repeat=on_repeat)
    rec.power = meter.describe()  # after the windows: it names the method they actually used
    rec.metrics.update(metrics)
    rec.notes.extend(notes)
    rec.env["contention"] = contention = watch.result()
    if contention["contended"]:
        rec.notes.append("contended: " + "; ".join(contention["reasons"]))
    peak = backend.memory_peak_gib()
    if peak is not None:
        rec.metrics["mem_peak_gib"] = summarize([peak], "GiB", keep_samples=False)
    return rec


def attach_roofline(rec: Record) -> None:
    """Fill rec.roofline when the roofline module knows the hardware (issue: roofline)."""
    try:
        from llmbench.roofline import annotate
    except ImportError:
        return
    annotate(rec)


def run_sweep(spec: SweepSpec, results: Path, *, run_id: str | None = None, resume: bool = False,
              redo_failed: bool = False, progress: Callable[[str, Point | None, int], None] | None = None,
              points: list[Point] | None = None, group_runner=None) -> SweepResult:
    """Validate everything, then run each load group with `group_runner` (in this process by
    default; launch/isolated.py passes one that runs groups in worker processes)."""
    points = points if points is not None else spec.points()
    models = validate(points)  # nothing runs unless every point can
    store = Store(results)
    say = progress or (lambda *a: None)
    result, points = start(points, store, run_id, resume=resume, redo_failed=redo_failed, say=say)
    group_runner = group_runner or run_group
    for group in group_points(points):
        result.records.extend(group_runner(group, models, result.run_id, store, say))
    return result


def start(points: list[Point], store: Store, run_id: str | None, *, resume: bool,
          redo_failed: bool, say=None) -> tuple[SweepResult, list[Point]]:
    """The sweep's result holder and the points still to run. --resume without a run id
    continues the run that last stored one of these points; skipped points are reported to
    `say` ("skip") so progress counts the whole sweep."""
    if run_id is None and (resume or redo_failed):
        run_id = resume_run_id(store, points)
    result = SweepResult(run_id or new_run_id(), store.root)
    todo, result.skipped = pending(points, store, resume=resume, redo_failed=redo_failed)
    if result.skipped:
        left = {p.key for p in todo}
        skipped = [p for p in points if p.key not in left]
        newest = _newest_records(store, {p.key for p in skipped})
        result.earlier = [newest[p.key] for p in skipped if p.key in newest]
        for p in skipped:
            (say or (lambda *a: None))("skip", p, 0)
    return result, todo


def _newest_records(store: Store, keys: set[str]) -> dict[str, Record]:
    newest: dict[str, dict] = {}
    for _, d in store.raw():
        k = d.get("point_key")
        if k in keys and str(d.get("created_at", "")) >= str(newest.get(k, {}).get("created_at", "")):
            newest[k] = d
    return {k: Record.model_validate(d) for k, d in newest.items()}


def resume_run_id(store: Store, points: list[Point]) -> str | None:
    """The run that most recently stored a record of one of these points (None: no such run)."""
    keys = {p.key for p in points}
    best: tuple[str, str] | None = None
    for _, d in store.raw():
        if d.get("point_key") in keys:
            cand = (str(d.get("created_at", "")), str(d.get("run_id")))
            best = cand if best is None or cand > best else best
    return best[1] if best else None


def stored_count(store: Store, points: list[Point]) -> int:
    """How many of these points have a record in the store (any status)."""
    done = store.done_keys(include_failed=True)
    return sum(p.key in done for p in points)


def pending(points: list[Point], store: Store, *, resume: bool, redo_failed: bool) -> tuple[list[Point], int]:
    """The points still to run and how many were skipped. --redo-failed implies --resume."""
    if not (resume or redo_failed):
        return points, 0
    done = store.done_keys(include_failed=not redo_failed)
    todo = [p for p in points if p.key not in done]
    return todo, len(points) - len(todo)


def group_points(points: list[Point]) -> list[list[Point]]:
    """Points sharing a load key, in sweep order: one engine load per group."""
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault(p.load_key, []).append(p)
    return list(groups.values())


def failed_record(point: Point, run_id: str, model: ModelRef, cause: str) -> Record:
    rec = base_record(point, run_id, model, backend_class(point.backend))
    rec.status, rec.error = "failed", cause
    return rec


def run_group(group: list[Point], models: dict[str, ModelRef], run_id: str, store: Store,
              say: Callable[[str, Point | None, int], None],
              before_point: Callable[[Point], None] | None = None,
              on_record: Callable[[Record, Path], None] | None = None) -> list[Record]:
    """Load the group's engine once, run its points in order, write each record as soon as it
    is measured. An engine's Python-level failure costs its point (or, at load, the group);
    a crash of the process itself is the isolating launcher's business."""
    first = group[0]
    cls = backend_class(first.backend)
    backend = cls(first, models[first.model])
    load_error = None
    say("load", first, 0)
    t0 = time.perf_counter()
    try:
        backend.load()
    except Exception as e:  # the engine's own failure: costs this group, not the sweep
        load_error = _describe(e)
    load_s = time.perf_counter() - t0
    records = []
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
                backend.point, backend.engine_options = p, p.options
                run_point(backend, p, rec, on_repeat=lambda: say("repeat", p, 1))
                say("measured", p, 0)  # the engine's part is over; what follows is bookkeeping
                rec.metrics["load_time_s"] = summarize([load_s], "s", keep_samples=False)
                rec.backend.options = backend.effective_options()
                for k, v in backend.model_facts().items():
                    setattr(rec.model, k, v)
                rec.workload.update(backend.workload_facts())
                attach_roofline(rec)
            except Exception as e:
                rec.status, rec.error = "failed", _describe(e)
                _release_memory()
        path = store.write(rec)
        records.append(rec)
        if on_record:
            on_record(rec, path)
        say("done", p, 0)
    try:
        backend.close()
    except Exception:
        pass
    return records


def _release_memory() -> None:
    """After a failed point (e.g. out of memory), hand cached device memory back before the
    next point; only when torch is already loaded (never import it for this)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            pass


def is_out_of_memory(e: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError (torch.OutOfMemoryError), MemoryError, or an engine's own
    out-of-memory message; checked by name so that torch is never imported for it."""
    names = {c.__name__ for c in type(e).__mro__}
    if "OutOfMemoryError" in names or isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return "out of memory" in text or "cuda_error_out_of_memory" in text


def _describe(e: BaseException) -> str:
    if is_out_of_memory(e):
        first = (str(e).strip().splitlines() or [""])[0][:500]
        return f"out of memory: {type(e).__name__}: {first}"
    if isinstance(e, LLMBenchError):
        return f"{type(e).__name__}: {e}"
    tb = traceback.format_exception(type(e), e, e.__traceback__, limit=-3)
    return f"{type(e).__name__}: {e}\n" + "".join(tb)[-2000:]
