"""Estimates as a kind of point: a prediction by `llmbench predict` (analysis/predict.py),
stored as a record of kind `estimate` so it can be kept, listed and drawn, but never passes for
a measurement (report/data.py gives it the source 'estimate'; tables, figures and the best-
configuration view mark it, and rank it only when asked).

An estimate record holds the predicted value as each metric's mean (n = 1: one prediction, no
samples), the roofline bound it scales, and an `estimate` section per metric: the 90% interval
(lo, hi) from held-out validation, the fall-back level, and the study records the fit rests on.
The study's frame is the group's context: one load for every point of a run."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

from llmbench.kinds.base import Frozen, point_key
from llmbench.launch.kind import PointKind, Progress
from llmbench.store.record import BackendInfo, HardwareInfo, MetricStats, ModelInfo, Record, Roofline

UNITS = {"output_throughput_tok_s": "tok/s", "batch_latency_s": "s"}


class EstimatePoint(Frozen):
    """One point to predict, and the study data the prediction learns from."""
    study: str
    model: str
    engine: str
    hardware: str
    dtype: str = "bf16"
    batch_size: int = 1
    input_len: int = 128
    output_len: int = 128
    tp: int = 1

    @property
    def key(self) -> str:
        return point_key(self.model_dump())


class EstimateKind(PointKind):
    name = "estimate"

    def parse_point(self, doc: dict) -> EstimatePoint:
        return EstimatePoint(**doc)

    def prepare(self, points: list, *, local_devices: bool = True) -> Any:
        return self.context(points)

    def context(self, points: list) -> dict[str, Any]:
        from llmbench.analysis.predict_report import study_frame

        return {s: study_frame(Path(s)) for s in dict.fromkeys(p.study for p in points)}

    def load_key(self, point: EstimatePoint) -> Hashable:
        return point.study

    def base_record(self, point: EstimatePoint, run_id: str, ctx: Any) -> Record:
        return Record(
            run_id=run_id, kind="estimate", point_key=point.key,
            backend=BackendInfo(name=point.engine), model=ModelInfo(name=point.model, source="catalog"),
            hardware=HardwareInfo(name=point.hardware, count=point.tp),
            workload={"batch_size": point.batch_size, "input_len": point.input_len,
                      "output_len": point.output_len, "weight_dtype": point.dtype,
                      "tensor_parallel": point.tp, "pipeline_parallel": 1},
            notes=["an ESTIMATE by llmbench predict (roofline bound x efficiency learned from "
                   f"{point.study}), not a measurement"])

    def run_group(self, group: list, ctx: Any, run_id: str, say: Progress,
                  before_point: Callable[[Any], None] | None = None
                  ) -> Iterator[tuple[Any, Record]]:
        for p in group:
            if before_point is not None:
                before_point(p)
            say("start", p, 0)
            yield p, estimate_record(self.base_record(p, run_id, ctx), ctx[p.study], p)


def estimate_record(rec: Record, train, p: EstimatePoint) -> Record:
    """`rec` filled with the prediction of point `p` from the study frame `train`."""
    from llmbench.analysis.predict import COVERAGE
    from llmbench.analysis.predict_points import query
    from llmbench.analysis.predict_report import predicted
    from llmbench.models.catalog import get_arch

    q = query(p.model, p.engine, p.hardware, p.dtype, p.batch_size, p.input_len, p.output_len, p.tp)
    row = q.iloc[0]
    rec.model.name = row["model"]  # the catalog's spelling
    rec.model.params = get_arch(row["model"]).param_count()
    sections = {}
    for metric, unit in UNITS.items():
        g = predicted(train, q, metric).iloc[0]
        rec.metrics[metric] = MetricStats(unit=unit, n=1, mean=float(g["predicted"]))
        sections[metric] = {"lo": float(g["lo"]), "hi": float(g["hi"]), "level": g["level"],
                            "n": int(g["n"]), "fit_hardware": list(g["fit_hardware"]),
                            "fit_engines": list(g["fit_engines"]),
                            "interval_from": f"leave-one-{g['split']}-out"}
    rec.roofline = Roofline(bound={m: float(row[f"bound_{m}"]) for m in UNITS},
                            binding_resource=row["binding"])
    rec.estimate = {"interval": COVERAGE, "study": p.study, "metrics": sections}
    return rec


def anchored_records(fit, anchors, points, q: float, n_residuals: int, whose: str, study: str,
                     run_id: str) -> list[Record]:
    """The anchored predictions as records of kind `estimate` (kinds/estimate), their
    `estimate` section naming the anchors (`anchored_on`) beside each metric's interval, so the
    report and the dashboard show what anchored each one."""
    from llmbench.analysis import predict_physics as Q
    from llmbench.analysis.predict import COVERAGE
    from llmbench.analysis.predict_anchored import anchored_predictions

    a, got = anchored_predictions(fit, anchors, points, q)
    anchored_on = {"engine": a.engine, "vendor": a.vendor, "points": len(a.anchors),
                   "engine_versions": sorted(set(a.anchors["engine_version"]) - {""}),
                   "hardware": sorted(set(a.anchors["hardware"])),
                   "runs": sorted(set(a.anchors["run_id"])),
                   "study_stack": Q.describe(a.prior), "anchored_stack": Q.describe(a.theta)}
    out = []
    for idx, p in points.iterrows():
        pt = EstimatePoint(study=study, model=p["model"], engine=p["engine"], hardware=p["hardware"],
                           dtype=p["dtype"], batch_size=int(p["batch"]), input_len=int(p["input_len"]),
                           output_len=int(p["output_len"]), tp=int(p["devices"]))
        rec = EstimateKind().base_record(pt, run_id, None)
        rec.notes.append(f"anchored on {len(a.anchors)} of the user's {a.engine} records: "
                         f"runs {', '.join(anchored_on['runs'])}")
        sections = {}
        for metric, unit in UNITS.items():
            g = got.loc[idx]
            rec.metrics[metric] = MetricStats(unit=unit, n=1, mean=float(g[metric]))
            sections[metric] = {"lo": float(g[f"{metric}_lo"]), "hi": float(g[f"{metric}_hi"]),
                                "level": "anchored", "n": len(a.anchors),
                                "fit_hardware": anchored_on["hardware"], "fit_engines": [a.engine],
                                "interval_from": f"anchored transfer held out by accelerator, {whose}: "
                                                 f"{n_residuals} points"}
        rec.roofline = Roofline(bound={m: float(p[f"bound_{m}"]) for m in UNITS},
                                binding_resource=p["binding"])
        rec.estimate = {"interval": COVERAGE, "study": study, "metrics": sections,
                        "anchored_on": anchored_on}
        out.append(rec)
    return out

