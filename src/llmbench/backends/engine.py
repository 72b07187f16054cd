"""An engine's contract, everything engine-specific in one class: its package, its
OpenAI-compatible server (command line, readiness, version), its Prometheus names, its roofline
rules and what a worker must load first. `Backend` (base.py) adds running points in process;
an engine llmbench only launches or scrapes (TGI) is an `Engine` alone.

Everything here is class-level and imports nothing heavy: the launcher (launch/servers.py),
the scraper (loadgen/server_metrics.py), the roofline and the worker ask the registry
(backends/__init__.py) by name and never name an engine themselves.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from llmbench.errors import EngineNotInstalled, SpecError

if TYPE_CHECKING:
    from llmbench.backends.speculation import Speculation
    from llmbench.backends.options import EngineOptions
    from llmbench.hardware import Hardware
    from llmbench.models.catalog import ModelArch


@dataclass(frozen=True)
class ServerCommand:
    """How to start an engine's server: argv, extra environment, and the route that answers
    HTTP 200 once it is ready."""
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    health_path: str = "/health"


@dataclass(frozen=True)
class AdapterLabels:
    """An engine's LoRA state metric: a gauge whose labels name the running and waiting
    adapters (comma-separated) and the most active at once; its value is when it was set."""
    metric: str
    running: str
    waiting: str
    max_loras: str


@dataclass(frozen=True)
class PrometheusNames:
    """An engine's `/metrics` names for llmbench's server metrics (loadgen/server_metrics.py
    holds the vocabulary): llmbench's name -> the engine's names, the first present wins."""
    prefix: str                                           # every name of this engine starts so
    counters: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gauges: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    histograms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    adapters: AdapterLabels | None = None                 # LoRA adapters' state, where reported


@dataclass(frozen=True)
class RooflineAsk:
    """What the roofline knows of a record when it asks the engine about its weights."""
    weight_dtype: str | None          # the record's (weight_quant wins); None: the engine's choice
    kv_dtype: str | None              # the record's KV-cache dtype; None: the engine's default
    workload: Mapping[str, Any]       # the record's workload fields
    backend_options: Mapping[str, Any]  # the options the engine ran with
    weight_bytes: float | None        # the model's weight bytes when the record carries them
    synthetic_weights: bool
    arch: ModelArch
    hardware: Hardware


@dataclass
class WeightRule:
    """The engine's answer: the weights' dtype and bytes, the dtype its matmuls run in, its
    KV-cache dtype, and the assumptions made (notes)."""
    weight_dtype: str
    weight_bytes: float | None = None
    compute_dtype: str | None = None
    kv_dtype: str | None = None
    notes: list[str] = field(default_factory=list)


class Engine:
    name: ClassVar[str]
    #: Module that must be importable, the distribution that ships it, and llmbench's extra.
    package: ClassVar[str]
    distribution: ClassVar[str]
    extra: ClassVar[str]
    #: How to install it when `pip install 'llmbench[EXTRA]'` is not the way (None: it is).
    install_hint: ClassVar[str | None] = None
    #: Distributions whose installed version is the engine's (the first installed wins).
    versions_from: ClassVar[tuple[str, ...]] = ()
    #: Its server's Prometheus names (None: it has no /metrics llmbench reads).
    prometheus: ClassVar[PrometheusNames | None] = None
    #: Modules a worker imports before anything else (e.g. before numpy: see llamacpp.py).
    preload: ClassVar[tuple[str, ...]] = ()
    #: Whether `llmbench serve --launch NAME` can start its server.
    launches: ClassVar[bool] = False
    #: How its server takes a grammar (loadgen/shapes/structured.py's dialects): OpenAI's
    #: `response_format` json_schema and vLLM's `structured_outputs` ("standard"), or
    #: llama-cpp-python's `response_format` json_object and GBNF `grammar` ("json-object").
    #: `serve --launch NAME --structured` sends this one unless --shape-opt dialect= is given.
    structured_dialect: ClassVar[str] = "standard"

    # -- its package ----------------------------------------------------------------------------
    @classmethod
    def installed(cls) -> bool:
        return importlib.util.find_spec(cls.package) is not None

    @classmethod
    def require_installed(cls) -> None:
        if not cls.installed():
            raise EngineNotInstalled(cls.name, cls.distribution, cls.extra, cls.install_hint)

    @classmethod
    def installed_version(cls) -> str | None:
        from llmbench.measure.env import package_version

        for dist in cls.versions_from or (cls.distribution,):
            if (v := package_version(dist)):
                return v
        return None

    # -- its server -----------------------------------------------------------------------------
    @classmethod
    def server_command(cls, model: str, port: int, device: str,
                       options: EngineOptions | None = None) -> ServerCommand:
        """The command that serves `model` on 127.0.0.1:`port`, computing on `device`, in the
        mode `options` asks (`embedding`: the pooling endpoints); an engine refuses a mode it
        cannot serve (SpecError)."""
        raise SpecError([("--launch", f"llmbench cannot start a {cls.name} server; start it "
                                      "yourself and give its URL")])

    @classmethod
    def check_request_shape(cls, shape: str, options: Mapping[str, Any]) -> None:
        """Refuse a request shape (and options) its launched server cannot answer, with the
        reason, before it starts (SpecError naming the flag); by default every one is sent."""

    @classmethod
    def speculation_args(cls, spec: Speculation) -> list[str]:
        """The server arguments that turn `spec` on (`--speculative`); an engine that cannot
        speculate that way refuses, naming the flag."""
        raise SpecError([("--speculative", f"llmbench does not know how to turn on speculative "
                                           f"decoding in a {cls.name} server")])

    # -- its roofline ---------------------------------------------------------------------------
    @classmethod
    def roofline_weights(cls, ask: RooflineAsk) -> WeightRule | None:
        """How the engine stores and multiplies the record's weights, when it differs from the
        general rule (the record's dtype, else the HF copy's bf16); None: the general rule."""
        return None
