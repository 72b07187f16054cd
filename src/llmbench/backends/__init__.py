"""Backend registry: a new engine is one module plus one line here.

Values are "module:Class" strings so that listing and validating backends imports no engine.
"""

from __future__ import annotations

import importlib
import importlib.util

from llmbench.errors import EngineNotInstalled, SpecError, did_you_mean

REGISTRY: dict[str, str] = {
    "llamacpp": "llmbench.backends.llamacpp:LlamaCppBackend",
    "transformers": "llmbench.backends.transformers:TransformersBackend",
    "vllm": "llmbench.backends.vllm:VllmBackend",
}


def backend_class(name: str):
    try:
        target = REGISTRY[name]
    except KeyError:
        raise SpecError([("backend", f"unknown backend {name!r}{did_you_mean(name, REGISTRY)}; "
                                     f"known: {', '.join(REGISTRY)}")]) from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def installed(name: str) -> bool:
    cls = backend_class(name)
    return importlib.util.find_spec(cls.package) is not None


def require_installed(name: str) -> None:
    cls = backend_class(name)
    if importlib.util.find_spec(cls.package) is None:
        raise EngineNotInstalled(name, cls.package, cls.extra)


def available_backends() -> list[str]:
    return [n for n in REGISTRY if installed(n)]
