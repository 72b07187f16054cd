"""Expand a sweep, validate every point before anything runs, run points grouped so each
model loads once per group, and write one record per point as soon as it is measured."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llmbench.backends import backend_class, require_installed
from llmbench.errors import LLMBenchError, SpecError
from llmbench.measure import env as envmod
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

    @property
    def failed(self) -> list[Record]:
        return [r for r in self.records if r.status == "failed"]


def validate(points: list[Point]) -> dict[str, ModelRef]:
    """Everything that can be checked without running: engines, models, combinations."""
    problems: list[tuple[str, str]] = []
    models: dict[str, ModelRef] = {}
    for name in sorted({p.model for p in points}):
        try:
            models[name] = resolve(name)
        except SpecError as e:
            problems.extend(e.problems)
    for b in sorted({p.backend for p in points}):
        try:
            require_installed(b)
        except SpecError as e:
            problems.extend(e.problems)
    if not problems:
        seen = set()
        for p in points:
            for prob in backend_class(p.backend).check(p, models[p.model]):
                if prob not in seen:
                    seen.add(prob)
                    problems.append(prob)
    if problems:
        raise SpecError(problems)
    return models


def base_record(point: Point, run_id: str, model: ModelRef, backend_cls) -> Record:
    kind = "perplexity" if point.workload == "perplexity" else "inference"
    hw = envmod.hardware(point.device, point.options.tensor_parallel * point.options.pipeline_parallel)
    return Record(
        run_id=run_id, point_key=point.key, kind=kind,
        backend=BackendInfo(name=point.backend, options=point.backend_options),
        model=ModelInfo(name=model.name, source=model.source, params=model.params,
                        synthetic_weights=model.synthetic_weights),
        hardware=HardwareInfo(**hw), workload=point.workload_fields(),
        env=envmod.capture(), spec=point.model_dump(mode="json"))


def run_point(backend, point: Point, rec: Record, on_repeat=None) -> Record:
    from llmbench.workloads.offline import run_offline
    from llmbench.workloads.perplexity import run_perplexity

    meter = open_meter(point.device, backend.device_count())
    rec.power = meter.describe()
    if point.workload == "perplexity":
        metrics, notes = run_perplexity(backend, point, meter)
    else:
        metrics, notes = run_offline(backend, point, meter, on_repeat=on_repeat)
    rec.metrics.update(metrics)
    rec.notes.extend(notes)
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
              points: list[Point] | None = None) -> SweepResult:
    points = points if points is not None else spec.points()
    models = validate(points)
    store = Store(results)
    result = SweepResult(run_id or new_run_id(), store.root)
    if resume:
        done = store.done_keys(include_failed=not redo_failed)
        result.skipped = sum(p.key in done for p in points)
        points = [p for p in points if p.key not in done]
    say = progress or (lambda *a: None)

    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault(p.load_key, []).append(p)
    for group in groups.values():
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
        for p in group:
            rec = base_record(p, result.run_id, models[p.model], cls)
            try:
                rec.backend.version = backend.version()
            except Exception:
                pass
            if load_error:
                rec.status, rec.error = "failed", f"load failed: {load_error}"
            else:
                say("start", p, 0)
                try:
                    backend.point, backend.engine_options = p, p.options
                    run_point(backend, p, rec, on_repeat=lambda: say("repeat", p, 1))
                    rec.metrics["load_time_s"] = summarize([load_s], "s", keep_samples=False)
                    rec.backend.options = backend.effective_options()
                    attach_roofline(rec)
                except Exception as e:
                    rec.status, rec.error = "failed", _describe(e)
            store.write(rec)
            result.records.append(rec)
            say("done", p, 0)
        try:
            backend.close()
        except Exception:
            pass
    return result


def _describe(e: BaseException) -> str:
    if isinstance(e, LLMBenchError):
        return f"{type(e).__name__}: {e}"
    tb = traceback.format_exception(type(e), e, e.__traceback__, limit=-3)
    return f"{type(e).__name__}: {e}\n" + "".join(tb)[-2000:]
