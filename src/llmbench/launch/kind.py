"""What a kind of point supplies to the shared pipeline (launch/pipeline.py).

The pipeline owns everything that is the same for every point: validation before anything
runs, resume by point key, grouping, isolation, time limits, failure records, Ray tasks,
job-array indexing, progress. A kind owns what differs: how its points are checked, which
points share a loaded model (one load per group), the skeleton of a point's record, how a
group runs (yielding each point's finished record), and what process a group needs.

Each kind lives in its own folder under llmbench/kinds/ and imports this contract; the
pipeline imports no kind. A worker process or a Ray task rebuilds a kind from its `name` in a
job file through the kinds registry (kinds/registry.py), so a new kind touches no file here.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from llmbench.store import Record, Store

Progress = Callable[[str, Any, int], None]


class PointKind(ABC):
    name = ""

    @abstractmethod
    def parse_point(self, doc: dict) -> Any:
        """A point from its JSON form (job files, Ray task arguments)."""

    @abstractmethod
    def prepare(self, points: list, *, local_devices: bool = True) -> Any:
        """Check every point before anything runs (raise SpecError naming every problem) and
        return the context the points need (e.g. resolved models). local_devices=False: the
        devices that count are a cluster's (checked by device_problems)."""

    def context(self, points: list) -> Any:
        """The context of `prepare`, rebuilt in a worker without the checks."""
        return None

    def device_problems(self, points: list, count: Callable[[], int], where: str = "") -> list:
        """Points needing more CUDA devices than `count()` (one host's, a Ray node's)."""
        return []

    def devices(self, point) -> int:
        """CUDA devices one point (one unit of the launcher) needs; 0 on the CPU."""
        return 0

    @abstractmethod
    def load_key(self, point) -> Hashable:
        """Points with equal keys run in one worker, in sweep order, sharing one load."""

    def command(self, group: list) -> tuple[list[str], dict[str, str]]:
        """The argv prefix that starts the group's worker process (before `-m module`) and
        extra environment: a plain interpreter by default; torchrun for N-process points."""
        return [sys.executable], {}

    def in_process_ok(self, group: list) -> bool:
        """Whether `--in-process` may run the group inside the llmbench process."""
        return True

    @abstractmethod
    def base_record(self, point, run_id: str, ctx: Any) -> Record:
        """The record every outcome of the point starts from (ok or failed)."""

    @abstractmethod
    def run_group(self, group: list, ctx: Any, run_id: str, say: Progress,
                  before_point: Callable[[Any], None] | None = None) -> Iterator[tuple[Any, Record]]:
        """Run the points in order and yield (point, record) as each is finished; a Python
        error costs its point (a failed record), never the group. Events for `say`: load,
        start, repeat, measured (the timed part is over: bookkeeping follows)."""

    def finish(self, store: Store, records: list[Record]) -> list[Record]:
        """After the sweep (every executor, also when nothing was left to run): annotations
        that need other points' records. Returns `records`, updated."""
        return records

