"""One lookup for every registry of named parts (engines, kinds, load patterns, request
shapes): each maps a name to "module:Class", so listing or validating names imports none of
them, and a part's module is imported on first use."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

from llmbench.errors import SpecError, did_you_mean


def load(entries: Mapping[str, str | type], name: str, field: str, what: str) -> type:
    """The class registered as `name` (a "module:Class" line, or the class itself); an unknown
    name is bad input on `field`, with the nearest names and the registered ones."""
    if name not in entries:
        raise SpecError([(field, f"unknown {what} {name!r}{did_you_mean(name, entries)}; "
                                 f"registered: {', '.join(entries)}")])
    entry = entries[name]
    if not isinstance(entry, str):
        return entry
    module, _, cls = entry.partition(":")
    return getattr(import_module(module), cls)
