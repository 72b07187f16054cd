"""The one small interface every engine llmbench runs in process sits behind.

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

from llmbench.backends.call import EngineCall
from llmbench.backends.engine import Engine
from llmbench.backends.options import EngineOptions
from llmbench.errors import SpecError
from llmbench.measure.timeline import RequestTimeline
from llmbench.models.sources import ModelRef


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Backend(Engine, ABC):
    """An engine llmbench runs in process (its package, server, metrics ...: Engine)."""

    #: The backend's own options (validated before anything runs).
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Which EngineOptions fields this backend honours; others must stay at their defaults.
    supports: ClassVar[frozenset[str]] = frozenset()
    #: Whether `loglikelihood` is implemented (perplexity workload).
    scores_text: ClassVar[bool] = False
    #: What `next_token_logprobs` returns (fidelity): "full" rows over the vocabulary, "top-k"
    #: mappings of the k most likely tokens, or None when it is not implemented.
    next_token_logprobs_kind: ClassVar[str | None] = None

    def __init__(self, call: EngineCall, model: ModelRef):
        self.model = model
        self.options = self.Options(**call.backend_options)
        self.use(call)

    def use(self, call: EngineCall) -> None:
        """The call the next point makes of the loaded engine (same load, its own shape)."""
        self.call = call
        self.engine_options: EngineOptions = call.options

    # -- validation before anything runs ----------------------------------------------------
    @classmethod
    def check(cls, call: EngineCall, model: ModelRef) -> list[tuple[str, str]]:
        """Problems with running `call` on this backend (empty when fine)."""
        problems = []
        defaults = EngineOptions()
        for field in EngineOptions.model_fields:
            if field not in cls.supports and getattr(call.options, field) != getattr(defaults, field):
                problems.append((f"options.{field}",
                                 f"backend {cls.name!r} does not support it (supported: "
                                 f"{', '.join(sorted(cls.supports)) or 'none'})"))
        if call.workload == "perplexity" and not cls.scores_text:
            problems.append(("workload", f"backend {cls.name!r} cannot compute perplexity"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    @abstractmethod
    def load(self) -> None:
        """Load the model (timed by the caller as load_time_s)."""

    def prepare(self, call: EngineCall) -> None:  # noqa: B027 - optional
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
        sliding-window scheme of backends/windows.py."""
        raise SpecError([("workload", f"backend {self.name!r} cannot compute perplexity")])

    def next_token_logprobs(self, sequence: list[int], start: int, top_k: int):
        """Teacher-forced next-token log-probabilities (natural log) after each position
        start - 1 .. len(sequence) - 2, i.e. the distributions the tokens sequence[start:] were
        drawn from: an array (positions x vocab) when next_token_logprobs_kind is "full", a
        list of {token: log-prob} of the top_k (and the actual token) when "top-k"."""
        raise SpecError([("fidelity", f"backend {self.name!r} returns no log-probabilities")])

    def memory_peak_gib(self) -> float | None:
        return None

    def device_count(self) -> int:
        return self.call.devices
