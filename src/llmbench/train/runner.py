"""Run training points and store one record each. One device: in this process (or a worker
process with `isolate`); N devices: torchrun (`torch.distributed.run`) starts N workers.

After each point: a 2:4-sparse point gets `speedup_vs_dense` against its dense twin, an N-device
point `scaling_efficiency` = tokens_per_s(N) / (N x tokens_per_s(1)) against its 1-device twin,
found in this sweep or already in the results directory."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmbench.store.record import Record, new_run_id
from llmbench.store.store import Store
from llmbench.train.config import TrainPoint
from llmbench.train.record import add_ratio, failed_record, to_record

SCALING_DROP = ("nproc", "parallel")
SPARSITY_DROP = ("sparsity",)


def _point_of(doc: dict[str, Any]) -> TrainPoint | None:
    spec = dict(doc.get("spec") or {})
    spec.pop("peak", None)
    try:
        return TrainPoint(**spec)
    except Exception:
        return None


class Baselines:
    def __init__(self, store: Store):
        self.scaling: dict[str, Record] = {}
        self.dense: dict[str, Record] = {}
        for _, d in store.raw():
            if d.get("kind") == "training" and d.get("status") == "ok":
                p = _point_of(d)
                if p is not None:
                    self.add(p, Record.model_validate(d))

    # keyed by the point less the dropped factors and by the model name, so that a record of
    # another build of the same point (other code, another shape) is never a baseline
    def add(self, p: TrainPoint, rec: Record) -> None:
        if rec.status != "ok":
            return
        if p.nproc == 1:
            self.scaling[p.baseline_key(SCALING_DROP) + rec.model.name] = rec
        if p.sparsity == "none":
            self.dense[p.baseline_key(SPARSITY_DROP) + rec.model.name] = rec

    def annotate(self, p: TrainPoint, rec: Record) -> None:
        if rec.status != "ok":
            return
        name = rec.model.name
        if p.nproc > 1 and (b := self.scaling.get(p.baseline_key(SCALING_DROP) + name)):
            add_ratio(rec, "scaling_efficiency", b, per=p.nproc)
        if p.sparsity != "none" and (b := self.dense.get(p.baseline_key(SPARSITY_DROP) + name)):
            add_ratio(rec, "speedup_vs_dense", b)


def run_in_process(p: TrainPoint) -> dict[str, Any]:
    from llmbench.train.loop import run

    try:
        return run(p)
    finally:
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def run_in_workers(p: TrainPoint, timeout_s: float | None = None) -> dict[str, Any]:
    """torchrun for N > 1 (one worker per device), a plain worker process for N = 1."""
    with tempfile.TemporaryDirectory(prefix="llmbench-train-") as tmp:
        pj, oj = Path(tmp, "point.json"), Path(tmp, "result.json")
        pj.write_text(p.model_dump_json())
        if p.nproc > 1:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={p.nproc}", "-m", "llmbench.train.worker", str(pj), str(oj)]
        else:
            cmd = [sys.executable, "-m", "llmbench.train.worker", str(pj), str(oj)]
        env = dict(os.environ)
        if p.device == "cpu":
            env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // p.nproc)))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        if r.returncode != 0 or not oj.exists():
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
            raise RuntimeError(f"worker exited with {r.returncode}:\n{tail}")
        return json.loads(oj.read_text())


def run_points(points: list[TrainPoint], results: Path, *, isolate: bool = False,
               timeout_s: float | None = None,
               progress: Callable[[str, TrainPoint, Record | None], None] | None = None,
               run_id: str | None = None) -> list[Record]:
    from llmbench.measure.env import capture, hardware, package_version

    store = Store(results)
    base = Baselines(store)
    run_id = run_id or new_run_id()
    env = capture()
    torch_version = package_version("torch")
    out = []
    for p in points:
        if progress:
            progress("start", p, None)
        hw = hardware(p.device, p.nproc)
        try:
            if p.nproc > 1 or isolate:
                r = run_in_workers(p, timeout_s)
            else:
                r = run_in_process(p)
            rec = to_record(p, r, run_id, hw, env, torch_version)
        except Exception as e:  # one failed point fails its record, not the sweep
            rec = failed_record(p, f"{type(e).__name__}: {e}", run_id, hw, env)
        base.annotate(p, rec)
        base.add(p, rec)
        _roofline(rec)
        store.write(rec)
        out.append(rec)
        if progress:
            progress("done", p, rec)
    return out


def _roofline(rec: Record) -> None:
    """The step-time bound from model FLOPs, when the hardware is in the catalog."""
    try:
        from llmbench.roofline import annotate
    except ImportError:
        return
    annotate(rec)
