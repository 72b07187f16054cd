"""Engine registry: a new engine is one module plus one line here.

Values are "module:Class" strings so that listing and validating engines imports no engine
(an engine's module imports its engine inside methods only). A class is an `Engine`
(backends/engine.py: package, server, Prometheus names, roofline rules, preload); a `Backend`
(base.py) also runs points in process.
"""

from __future__ import annotations

import importlib

from llmbench.backends.base import Backend
from llmbench.backends.engine import Engine, PrometheusNames
from llmbench.errors import SpecError, did_you_mean
from llmbench.registry import load

REGISTRY: dict[str, str] = {
    "llamacpp": "llmbench.backends.llamacpp:LlamaCppBackend",
    "sglang": "llmbench.backends.sglang:SglangBackend",
    "tgi": "llmbench.backends.tgi:TgiEngine",
    "transformers": "llmbench.backends.transformers:TransformersBackend",
    "vllm": "llmbench.backends.vllm:VllmBackend",
}
# The numerical reference that fidelity compares every engine with (kinds/inference/fidelity.py):
# the one engine here that runs a model in fp32 on any CPU, one prompt at a time.
REFERENCE = "transformers"


def engine_class(name: str, field: str = "backend") -> type[Engine]:
    return load(REGISTRY, name, field, "engine")


def backend_class(name: str) -> type[Backend]:
    """The backend that runs `name` in process."""
    try:
        cls = engine_class(name)
    except SpecError:
        raise SpecError([("backend", f"unknown backend {name!r}{did_you_mean(name, in_process())}; "
                                     f"known: {', '.join(in_process())}")]) from None
    if not issubclass(cls, Backend):
        raise SpecError([("backend", f"llmbench does not run {name} in process; benchmark its "
                                     "server with `llmbench serve`")])
    return cls


def in_process() -> list[str]:
    return [n for n in REGISTRY if issubclass(engine_class(n), Backend)]


def installed(name: str) -> bool:
    return engine_class(name).installed()


def require_installed(name: str) -> None:
    engine_class(name).require_installed()


def available_backends() -> list[str]:
    return [n for n in in_process() if installed(n)]


def launchable() -> list[str]:
    """The engines whose server `llmbench serve --launch` starts."""
    return [n for n in REGISTRY if engine_class(n).launches]


def prometheus_names() -> dict[str, PrometheusNames]:
    """Every engine's /metrics names, by engine (for telling a server apart and reading it)."""
    return {n: cls.prometheus for n in REGISTRY if (cls := engine_class(n)).prometheus is not None}


def preload(name: str) -> None:
    """Import what `name`'s engine needs loaded before anything else (a worker's first act)."""
    if name not in REGISTRY:
        return
    for module in engine_class(name).preload:
        try:
            importlib.import_module(module)
        except ImportError:
            pass  # the backend reports the missing engine itself
