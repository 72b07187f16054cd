"""What a record's derived figures mean, versioned: the roofline's bounds and efficiencies
(ROOFLINE_VERSION) and the flags derived from its measurements (DEFINITIONS_VERSION). Light:
imports nothing heavy (the store and the CLI read it).

Versions. A record the roofline annotates carries `roofline.version`; every record the store
writes carries `definitions_version` (`stamp`, called by the store's one write path). Records
stored before versioning have neither: they are version "1" (UNVERSIONED). Whoever changes
what a bound or an efficiency means (roofline/model.py's accounting, a catalog peak or
bandwidth, roofline/__init__.py's conventions) bumps ROOFLINE_VERSION and says what changed in
ROOFLINE_HISTORY; whoever changes a flag here bumps DEFINITIONS_VERSION. `llmbench annotate`
brings stored records to today's versions, keeping what it replaced in `annotations`; it
never touches a measured metric.

Energy window (definitions version 2; 4: by the method the energy used): an energy figure read
over a window shorter than measure/power.py's min_reliable_window_s (2 s for NVML's counter;
10 sample spacings, 0.2 s on an H200, where every window integrated the driver's power samples)
is unreliable: the counter updates every 100 ms (three ~0.8 s batches of near-identical
latency read 397-450 J on an H200). The record then says so: `power.short_window` true, `power.energy_window_s` (the
shortest window behind its energy metrics), `power.energy_window_source` (where that length
comes from) and a note. The window is the measured `energy_window_s` metric when the record
has it; older records did not store it, and their window is known from how they measured:
an offline repeat metered exactly its batch (`batch_latency_s`), a training run its timed
steps (the sum of `step_time_s`), a serving point its whole run (`all_duration_s`).

Statistics (definitions version 5): a metric's figures (mean, percentiles, std, ci95) are
measure/stats.py's `summarize` of the samples it keeps, so `llmbench annotate` recomputes them
from those samples and rewrites the ones that differ (records of 2026-11-30 and 12-01 carried
version 3's replaced bootstrap interval under a later stamp). A metric of n > 1 whose record
kept no samples, or fewer than n (before version 5 only the first 10,000 were kept), cannot be
recomputed: it is flagged `recomputable: false` and its figures are left as measured. Metrics
that are not a summary of samples (a server's histogram, `source`; an imported tool's
figures) are not llmbench's statistics and are left alone.
"""

from __future__ import annotations

from typing import Any

UNVERSIONED = "1"
ROOFLINE_VERSION = "3"
ROOFLINE_HISTORY = {
    "1": "before versioning (records of 2026-11-30 and earlier): a decode step read every "
         "stored weight, an untied input embedding whole (LLaMA-3-8B on an H200 at batch 1: "
         "298.9 tok/s); a training record's TFLOP/s bound was the datasheet peak, so its "
         "`tflops` efficiency was MFU (full attention over the peak) while its tokens/s "
         "efficiency used the causal step time: two numbers for one run",
    "2": "a step reads lookup tables (untied input embedding, learned positions) by row, not "
         "whole (LLaMA-3-8B, H200, batch 1: 319.8 tok/s); a training record's TFLOP/s bound "
         "is the tokens/s bound x the record's own flops_per_token, so the tflops and "
         "tokens/s efficiencies agree; serving throughput bound at the requests in flight",
    "3": "the compute roof follows the arithmetic that runs (docs/roofline.md): a llama.cpp "
         "F16/BF16 GGUF gets the 16-bit tensor peak on a GPU (was the int8 peak: LLaMA-3-8B "
         "batch 64, in 128, H200 prefill bound 62.3 -> 124.5 ms), quantised types the int8 peak "
         "of llama.cpp's MMQ kernels, F16 on a CPU the fp32 peak",
}
DEFINITIONS_VERSION = "5"
DEFINITIONS_HISTORY = {
    "1": "before versioning (records of 2026-11-30 and earlier): energy over a window of any "
         "length, unflagged",
    "2": "energy read over a window under 2 s flagged (power.short_window, "
         "power.energy_window_s, power.energy_window_source, a note)",
    "3": "ci95 of a summary is the Student-t interval of the mean (was a percentile bootstrap, "
         "which covered the mean 54% of the time at n=2); compare's intervals are Welch's at "
         "the exact Welch-Satterthwaite df (scipy.stats)",
    "4": "a record whose every energy window integrated the driver's power samples (NVML's "
         "buffer, ~20 ms apart) is flagged short under 10 sample spacings (power.sample_gap_s; "
         "0.2 s when not stored), not under the counter's 2 s",
    "5": "a metric's statistics are summarize() of its kept samples, recomputed by annotate "
         "where they differ (records of 2026-11-30/12-01 kept the bootstrap ci95 under stamp "
         "4); every sample is kept (was the first 10,000); a metric of n > 1 without all its "
         "samples is flagged recomputable: false",
}

# The figures a metric's samples determine (measure/stats.py summarize), in record order.
STATISTICS = ("mean", "median", "p50", "p90", "p95", "p99", "min", "max", "std",
              "ci95_low", "ci95_high")

# Notes the workloads themselves write about a short energy window: the flag's note is not
# repeated beside one of them.
_OWN_NOTES = ("energy unreliable:", "energy measured over")


def _metric(rec, name: str, stat: str) -> float | None:
    m = rec.metrics.get(name)
    return None if m is None else getattr(m, stat, None)


def energy_window(rec) -> tuple[float, str] | None:
    """(seconds of the shortest window behind the record's energy, where that comes from), or
    None when the record has no energy or its window cannot be known."""
    if "energy_j" not in rec.metrics and "all_energy_j" not in rec.metrics:
        return None
    if (w := _metric(rec, "energy_window_s", "min")) is not None:
        return float(w), "energy_window_s"
    if rec.kind == "training":
        st = rec.metrics.get("step_time_s")
        if st is not None and st.samples and len(st.samples) == st.n:
            return float(sum(st.samples)), "sum of the timed steps (step_time_s samples)"
        if st is not None and st.mean is not None:
            return float(st.mean * st.n), "timed steps (step_time_s mean x n)"
        return None
    if rec.kind == "serving":
        for name in ("all_duration_s", "duration_s"):
            if (w := _metric(rec, name, "mean")) is not None:
                return float(w), f"the serving run ({name})"
        return None
    if rec.kind == "inference" and (w := _metric(rec, "batch_latency_s", "min")) is not None:
        return float(w), "batch_latency_s (one batch per energy window)"
    return None


def flag_energy_window(rec) -> bool:
    """Set the record's energy-window fields (power.*); True when its window is short."""
    from llmbench.measure.power import MIN_RELIABLE_WINDOW_S, reliable_window_s

    got = energy_window(rec)
    if got is None:
        return False
    w, src = got
    limit = reliable_window_s(rec.power or {})
    short = w < limit
    rec.power = {**rec.power, "energy_window_s": w, "energy_window_source": src,
                 "short_window": short}
    if short and not any(n.startswith(_OWN_NOTES) for n in rec.notes):
        coarse = "NVML's energy counter is too coarse" if limit == MIN_RELIABLE_WINDOW_S else \
            "too few of the driver's power samples"
        note = (f"energy window {w:.2f} s ({src}), under {limit:g} s: {coarse} for that, the "
                "energy figures are unreliable (flagged power.short_window)")
        if note not in rec.notes:
            rec.notes.append(note)
    return short


def is_sample_summary(rec, m) -> bool:
    """Whether a metric's figures are llmbench's summary of samples (not a server's histogram
    nor an imported tool's own figures)."""
    return rec.kind != "reference" and getattr(m, "source", None) is None and m.n > 1


def recomputable(m) -> bool:
    """A sample summary is recomputable when the record kept every one of its n samples."""
    return m.samples is not None and len(m.samples) == m.n


def restated(m):
    """The metric's statistics recomputed from its kept samples by today's summarize, its other
    fields (unit, flags) as stored; None when it kept too few samples to say."""
    from llmbench.measure.stats import summarize

    if not recomputable(m):
        return None
    fresh = summarize(m.samples, m.unit)
    return m.model_copy(update={k: getattr(fresh, k) for k in STATISTICS})


def flag_unrecomputable(rec) -> list[str]:
    """Flag (`recomputable: false`) each sample summary whose record lacks its samples, with a
    note naming them; the names flagged. Its figures are left as measured."""
    names = []
    for name, m in rec.metrics.items():
        if is_sample_summary(rec, m) and not recomputable(m):
            m.recomputable = False
            kept = "no samples" if not m.samples else f"the first {len(m.samples)} samples"
            names.append(f"{name} ({kept} of {m.n})")
    # the same set of names, in any order, is the same note: a record read back from Parquet
    # or another store lists its metrics in another order and must not gain a second note
    said = {frozenset(n[len(_UNRECOMPUTABLE):].split(", ")) for n in rec.notes
            if n.startswith(_UNRECOMPUTABLE)}
    if names and frozenset(names) not in said:
        rec.notes.append(_UNRECOMPUTABLE + ", ".join(sorted(names)))
    return names


_UNRECOMPUTABLE = ("statistics not recomputable (the record kept too few samples; left as "
                   "measured, flagged recomputable: false): ")


def stamp(rec) -> None:
    """Apply today's definitions to a record (idempotent); its measurements are not touched."""
    flag_energy_window(rec)
    flag_unrecomputable(rec)
    rec.definitions_version = DEFINITIONS_VERSION


def roofline_version_of(roofline: dict[str, Any] | None) -> str | None:
    """The version a stored roofline's figures come from; None when it holds no bound."""
    if not isinstance(roofline, dict) or not roofline.get("bound"):
        return None
    return str(roofline.get("version") or UNVERSIONED)


def definitions_version_of(doc: dict[str, Any]) -> str:
    return str(doc.get("definitions_version") or UNVERSIONED)
