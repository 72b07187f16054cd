"""Flag text to values, for every command: comma lists, scalars, KEY=VALUE assignments. Each
refusal names the flag (or the bad item); ranges are the configs' to check."""

from __future__ import annotations

from typing import Any

from llmbench.errors import SpecError


def parse_list(text: str, typ: type = str) -> list[Any]:
    """'1,4,16' -> [1, 4, 16]; names the bad item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    out = []
    for t in items:
        out.append(parse_scalar(t) if typ is Any else _convert(t, typ))
    return out


def _convert(t: str, typ: type) -> Any:
    if typ is int:
        try:
            return int(t)
        except ValueError:
            raise SpecError([("", f"{t!r} is not an integer")]) from None
    return typ(t)


def parse_scalar(t: str) -> Any:
    low = t.lower()
    if low in ("true", "on", "yes"):
        return True
    if low in ("false", "off", "no"):
        return False
    if low in ("none", "null"):
        return None
    for typ in (int, float):
        try:
            return typ(t)
        except ValueError:
            pass
    return t


def parse_assignments(items: list[str], flag: str) -> dict[str, Any]:
    """['compile=true,false', 'kv_cache=static'] -> {'compile': [True, False], 'kv_cache': 'static'}"""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SpecError([(flag, f"{item!r} is not KEY=VALUE[,VALUE...]")])
        k, v = item.split("=", 1)
        vals = parse_list(v, Any)
        out[k.strip()] = vals if len(vals) != 1 else vals[0]
    return out


def int_list(text: str, flag: str, at_least_one: bool = False) -> list[int]:
    """'1,4,16' -> [1, 4, 16] for `flag`; ranges are the config's to check."""
    try:
        vals = parse_list(text, int)
    except SpecError:
        raise SpecError([(flag, f"{text!r} must be a comma-separated list of integers")]) from None
    if at_least_one and not vals:
        raise SpecError([(flag, f"{text!r} holds no value")])
    return vals
