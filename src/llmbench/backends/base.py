"""The one small interface every engine sits behind.

A backend loads a model once (`load`), then runs offline batches (`generate`) and, where it
can, scores text (`loglikelihood`). It reports its engine version and the options it actually
used. The workload owns the timing loop: `generate` is handed the reference time and fills
per-token arrival times, so there is exactly one timing path.

Heavy imports (torch, vllm, llama_cpp) happen inside methods, never at module level.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from llmbench.errors import SpecError
from llmbench.measure.timeline import RequestTimeline
from llmbench.models.sources import ModelRef
from llmbench.kinds.inference.spec import EngineOptions, Point


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Backend(ABC):
    name: ClassVar[str]
    #: Python package that must be importable, and the extra that installs it.
    package: ClassVar[str]
    extra: ClassVar[str]
    #: The backend's own options (validated before anything runs).
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Which EngineOptions fields this backend honours; others must stay at their defaults.
    supports: ClassVar[frozenset[str]] = frozenset()
    #: Whether `loglikelihood` is implemented (perplexity workload).
    scores_text: ClassVar[bool] = False

    def __init__(self, point: Point, model: ModelRef):
        self.point = point
        self.model = model
        self.options = self.Options(**point.backend_options)
        self.engine_options: EngineOptions = point.options

    # -- validation before anything runs ----------------------------------------------------
    @classmethod
    def check(cls, point: Point, model: ModelRef) -> list[tuple[str, str]]:
        """Problems with running `point` on this backend (empty when fine)."""
        problems = []
        defaults = EngineOptions()
        for field in EngineOptions.model_fields:
            if field not in cls.supports and getattr(point.options, field) != getattr(defaults, field):
                problems.append((f"options.{field}",
                                 f"backend {cls.name!r} does not support it (supported: "
                                 f"{', '.join(sorted(cls.supports)) or 'none'})"))
        if point.workload == "perplexity" and not cls.scores_text:
            problems.append(("workload", f"backend {cls.name!r} cannot compute perplexity"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    @abstractmethod
    def load(self) -> None:
        """Load the model (timed by the caller as load_time_s)."""

    def prepare(self, point: Point) -> None:  # noqa: B027 - optional
        """Set up per-point state (contexts, caches, compiled graphs sized for this point)
        outside any timed window; called before the warm-ups of every point."""

    def close(self) -> None:  # noqa: B027 - optional
        """Free the engine's memory."""

    def engine_timings(self) -> dict[str, float]:
        """The engine's own timing report for the last generate() call, for cross-checking
        llmbench's clock against the engine's (empty when it reports none)."""
        return {}

    @abstractmethod
    def version(self) -> str | None: ...

    def model_facts(self) -> dict[str, Any]:
        """What the loaded model turned out to be, for the record's `model` (e.g. weight_bytes
        of a GGUF: the roofline reads them)."""
        return {}

    def workload_facts(self) -> dict[str, Any]:
        """Facts of the point only known once loaded (e.g. a GGUF's weight type), added to the
        record's `workload` so that tables and filters can tell such points apart."""
        return {}

    def effective_options(self) -> dict[str, Any]:
        """Every option in force, including the engine's defaults that matter."""
        return {**self.engine_options.model_dump(), **self.options.model_dump()}

    # -- token space ------------------------------------------------------------------------
    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` without BOS."""

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @property
    def context_len(self) -> int | None:
        return None

    # -- work -------------------------------------------------------------------------------
    @abstractmethod
    def generate(self, prompts: list[list[int]], output_len: int, t_ref: float) -> list[RequestTimeline]:
        """Generate exactly output_len tokens for every prompt, all in one batch (batch size =
        len(prompts) concurrent sequences). Timelines use t_ref as reference and carry one
        event per token arrival (perf_counter). Returns only when the work is complete."""

    def loglikelihood(self, tokens: list[int], context_len: int, stride: int) -> tuple[float, int]:
        """Sum of negative log-likelihoods (nats) and number of scored tokens, with the
        sliding-window scheme described in kinds/inference/perplexity.py."""
        raise SpecError([("workload", f"backend {self.name!r} cannot compute perplexity")])

    def memory_peak_gib(self) -> float | None:
        return None

    def device_count(self) -> int:
        return self.engine_options.tensor_parallel * self.engine_options.pipeline_parallel
