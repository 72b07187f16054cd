"""Training points as a kind of the shared pipeline (launch/kind.py): the pipeline gives them
validation, resume, isolation, time limits, failure records, Ray and job arrays.

Groups: the 1-process points of one device share a worker (torch imported once); an
N-process point is a group of its own whose worker is torchrun (`torch.distributed.run`
starting N copies of the worker, one per device): one unit of N devices for the launcher.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Callable
from functools import cached_property
from typing import Any

from llmbench.errors import SpecError
from llmbench.launch.failures import describe, release_memory
from llmbench.launch.kind import PointKind
from llmbench.store.record import Record
from llmbench.store.store import Store
from llmbench.kinds.training.config import TrainPoint


class TrainingKind(PointKind):
    name = "training"

    def parse_point(self, doc: dict) -> TrainPoint:
        return TrainPoint.model_validate(doc)

    def prepare(self, points: list[TrainPoint], *, local_devices: bool = True) -> None:
        problems: list[tuple[str, str]] = []
        if importlib.util.find_spec("torch") is None:
            problems.append(("train", "needs PyTorch, which is not installed (pip install 'llmbench[train]')"))
        if local_devices:
            from llmbench.hardware.device import cuda_device_count

            problems.extend(self.device_problems(points, cuda_device_count))
        if problems:
            raise SpecError(problems)
        return None

    def device_problems(self, points, count, where=""):
        cuda = [p for p in points if p.device.startswith("cuda")]
        if not cuda:
            return []
        n = count()
        if n == 0:
            return [("device", f"{cuda[0].device!r} asked for, but no CUDA device is present{where}")]
        problems = []
        for p in cuda:
            first = int(p.device.split(":")[1]) if ":" in p.device else 0
            if first + p.nproc > n:
                prob = ("nproc", f"{p.nproc} device(s) from {p.device} but only {n} CUDA device(s) "
                                 f"are present{where}")
                if prob not in problems:
                    problems.append(prob)
        return problems

    def devices(self, p: TrainPoint) -> int:
        return p.nproc if p.device.startswith("cuda") else 0

    def load_key(self, p: TrainPoint) -> tuple:
        return ("one process", p.device) if p.nproc == 1 else ("torchrun", p.key)

    def command(self, group: list[TrainPoint]) -> tuple[list[str], dict[str, str]]:
        p = group[0]
        if p.nproc == 1:
            return [sys.executable], {}
        env = {}
        if p.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:  # ranks share the cores
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // p.nproc))
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={p.nproc}"], env

    def in_process_ok(self, group: list[TrainPoint]) -> bool:
        return group[0].nproc == 1

    @cached_property
    def _env(self) -> dict[str, Any]:
        from llmbench.measure.env import capture

        return capture()

    def base_record(self, p: TrainPoint, run_id: str, ctx: Any = None) -> Record:
        from llmbench.measure.env import hardware
        from llmbench.kinds.training.record import base_record

        return base_record(p, run_id, hardware(p.device, p.nproc), self._env)

    def run_group(self, group, ctx, run_id, say, before_point: Callable | None = None):
        """Every rank runs this; rank 0 yields the records. A Python error on rank 0 fails its
        point; on another rank it ends the process, and torchrun ends the rest."""
        say("load", group[0], 0)
        import torch.distributed as dist

        from llmbench.measure.env import package_version
        from llmbench.roofline import annotate as attach_roofline
        from llmbench.kinds.training.loop import dist_env, run
        from llmbench.kinds.training.record import fill

        rank, world, _ = dist_env()
        torch_version = package_version("torch")
        for p in group:
            rec = self.base_record(p, run_id)
            say("start", p, 0)
            try:
                if before_point:
                    before_point(p)
                r = run(p)
                say("measured", p, 0)
                fill(rec, p, r, torch_version)
                attach_roofline(rec)
            except Exception as e:
                if rank != 0:
                    raise
                rec.status, rec.error = "failed", describe(e)
            finally:
                gc.collect()
                release_memory()
            if rank == 0:
                yield p, rec
            if world > 1 and rec.status != "ok":
                sys.exit(1)  # the other ranks may wait in a collective: torchrun ends them
        if dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()

    def finish(self, store: Store, records: list[Record]) -> list[Record]:
        from llmbench.kinds.training.baselines import annotate_store

        return annotate_store(store, records)
