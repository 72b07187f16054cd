"""The load patterns, by name: one module each (base.py says what a pattern owns), one line
here. Without `--pattern`, the first whose `implied_by` holds is used (so the order matters:
a trace, then a rate, else the closed loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmbench.errors import SpecError
from llmbench.registry import load

if TYPE_CHECKING:
    from llmbench.loadgen.patterns.base import LoadPattern

PATTERNS: dict[str, str | type[LoadPattern]] = {   # name -> "module:class" (or the class)
    "trace": "llmbench.loadgen.patterns.trace:TraceReplay",
    "poisson": "llmbench.loadgen.patterns.poisson:Poisson",
    "gamma": "llmbench.loadgen.patterns.gamma:Gamma",
    "closed": "llmbench.loadgen.patterns.closed:ClosedLoop",
    "stages": "llmbench.loadgen.patterns.stages:Stages",
}


def pattern_class(name: str) -> type[LoadPattern]:
    return load(PATTERNS, name, "--pattern", "load pattern")


def pattern_for(cfg) -> LoadPattern:
    """The pattern `cfg` names (`--pattern`), or the one its flags imply."""
    if cfg.pattern is not None:
        return pattern_class(cfg.pattern)(cfg)
    for name in PATTERNS:
        cls = pattern_class(name)
        if cls.implied_by(cfg):
            return cls(cfg)
    raise SpecError([("--pattern", "no load pattern fits these flags: give --pattern NAME")])
