"""Accelerator catalog: peak FLOP/s per dtype, memory bandwidth and capacity, interconnect.

The numbers live in `catalog.yaml` (one cited datasheet per entry). `find(name)` maps a device
name as NVML, ROCm, /proc/cpuinfo or the LLM-Inference-Bench data spell it onto an entry; this
machine's CPU is measured on the fly (see `cpu.py`) rather than looked up.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from llmbench.hardware.entry import Hardware

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@functools.cache
def catalog() -> tuple[Hardware, ...]:
    import yaml

    text = resources.files("llmbench.hardware").joinpath("catalog.yaml").read_text()
    return tuple(Hardware(**{**e, "aliases": tuple(e.get("aliases") or ())})
                 for e in yaml.safe_load(text))


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip().lower())


def find(name: str | None) -> Hardware | None:
    """The catalog entry for a device name, or None. The local CPU's name gives its measurement."""
    if not name:
        return None
    if (hw := _catalog_entry(_norm(name))) is not None:
        return hw
    from llmbench.hardware import cpu

    if cpu.is_local_cpu(name):
        return cpu.local_cpu()
    return None


@functools.lru_cache(maxsize=1024)
def _catalog_entry(n: str) -> Hardware | None:
    """The entry a normalised name finds in the catalog, by id, then by alias. Cached: the
    catalog never changes in a process, and the alias scan costs ~0.3 ms a name that finds
    none (a CPU's), paid once a point by the roofline (issue 24)."""
    for hw in catalog():
        if n == hw.id.lower():
            return hw
    for hw in catalog():
        if any(_whole_number_match(a, n) for a in hw.aliases):
            return hw
    return None


def _whole_number_match(alias: str, name: str) -> bool:
    """An alias matches only where it does not cut a number short: 'h100' is in 'nvidia h100
    80gb' but not in 'h1000' (a fuzzy hit must never pick a device silently)."""
    for m in re.finditer(alias, name):
        s, e = m.span()
        cut_start = s > 0 and name[s - 1].isdigit() and name[s:s + 1].isdigit()
        cut_end = e < len(name) and name[e].isdigit() and name[e - 1:e].isdigit()
        if not (cut_start or cut_end):
            return True
    return False


def suggestions(name: str, n: int = 3) -> list[str]:
    """Catalog ids nearest to a mistyped device name (for "did you mean")."""
    import difflib

    forms: dict[str, str] = {}
    for hw in catalog():
        forms[_norm(hw.id)] = forms[_norm(hw.name)] = hw.id
    for hw in catalog():  # a short form ('h100') stands for the entry it finds
        short = hw.id.split("-")[0]
        forms.setdefault(_norm(short), (find(short) or hw).id)
    close = difflib.get_close_matches(_norm(name), list(forms), n=2 * n, cutoff=0.5)
    return list(dict.fromkeys(forms[c] for c in close))[:n]


def get(name: str) -> Hardware:
    """Like `find`, raising a SpecError that suggests the nearest ids and lists the catalog."""
    hw = find(name)
    if hw is None:
        from llmbench.errors import SpecError

        ids = ", ".join(h.id for h in catalog())
        near = suggestions(name)
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise SpecError([("hardware", f"unknown hardware {name!r}; {hint}known: {ids}, "
                                      "cpu (this machine)")])
    return hw


def dense_peak_flops(device_name: str, precision: str) -> float | None:
    """Dense datasheet peak FLOP/s of `precision` exactly as the datasheet gives it (fp32 is
    fp32, not TF32), falling back to the wider compute type where the device lacks it. For the
    training study's MFU (llmbench.kinds.training.peaks looks this up)."""
    hw = find(device_name)
    if hw is None:
        return None
    v = hw.peak_tflops.get(precision)
    return v * 1e12 if v else hw.peak_flops(precision)
