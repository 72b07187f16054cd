"""A finding's verdict, from the outcomes of the parts of its claim.

A published claim is taken apart into the parts a measurement can test ("FP8 faster than FP16
at batch 1", "... at batch 64", "block 16 is 1.27x block 8"). Each part gets one outcome from
the two numbers it shows (own, study), never from words:

- holds: a magnitude within TOLERANCE of the study's figure (own / study in [1/1.25, 1.25]); a
  direction ("faster") beyond 1 by more than MARGIN; a likeness ("16 and above are alike") with
  the largest over the smallest at most ALIKE;
- contradicted: a magnitude outside TOLERANCE, a direction not beyond 1 by MARGIN, a likeness
  whose spread exceeds ALIKE;
- untested: no own number (why: the engine refused, too few GPUs, no records, no pair from one
  campaign), or nothing to test (the study publishes no figure).

The finding's verdict follows from its parts by one rule (`overall`), so it can never be kinder
than the numbers it shows: holds when every part holds; untested when no part was tested;
contradicted when parts were tested and none holds; otherwise partly holds (the parts that hold
are named).
"""

from __future__ import annotations

from dataclasses import dataclass

HOLDS, PARTLY, CONTRADICTED, UNTESTED = "holds", "partly holds", "contradicted", "untested"
VERDICTS = (HOLDS, PARTLY, CONTRADICTED, UNTESTED)
TOLERANCE = 1.25    # a magnitude holds when own / study is within [1/1.25, 1.25]
MARGIN = 0.02       # "faster" holds when the ratio exceeds 1.02: closer is run-to-run noise
ALIKE = 1.05        # configurations are alike when the largest is at most 1.05x the smallest


@dataclass
class Part:
    """One testable part of a claim: its words, its outcome, and the numbers it came from."""
    claim: str
    outcome: str                        # holds | contradicted | untested
    why: str                            # the numbers, or why it is untested
    own: float | None = None
    study: float | None = None
    test: str = "none"                  # magnitude | faster | alike | none


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def untested(claim: str, why: str) -> Part:
    return Part(claim, UNTESTED, why)


def magnitude(claim: str, own: float | None, study: float | None, untested_why: str,
              differs_why: str = "") -> Part:
    """The own ratio against the study's at the same configuration, within TOLERANCE."""
    if own is None:
        return Part(claim, UNTESTED, untested_why, own, study, "magnitude")
    if study is None:
        return Part(claim, UNTESTED, f"{_x(own)} here; the study's data has no such point", own, None,
                    "magnitude")
    q = own / study
    if 1 / TOLERANCE <= q <= TOLERANCE:
        return Part(claim, HOLDS, f"{_x(own)} here vs {_x(study)} in the study ({q:.2f} of it)", own, study,
                    "magnitude")
    return Part(claim, CONTRADICTED, f"{_x(own)} here vs {_x(study)} in the study ({(q - 1) * 100:+.0f}%)"
                + (f": {differs_why}" if differs_why else ""), own, study, "magnitude")


def faster(claim: str, own: float | None, study: float | None, untested_why: str,
           differs_why: str = "") -> Part:
    """A direction: the own ratio (new over old) beyond 1 + MARGIN."""
    if own is None:
        return Part(claim, UNTESTED, untested_why, own, study, "faster")
    word = "faster" if own > 1 + MARGIN else "slower" if own < 1 - MARGIN else f"no faster (within {MARGIN:.0%})"
    text = f"{_x(own)} here ({word}); the study {_x(study)}"
    if own > 1 + MARGIN:
        return Part(claim, HOLDS, text, own, study, "faster")
    return Part(claim, CONTRADICTED, text + (f": {differs_why}" if differs_why else ""), own, study, "faster")


def within(claim: str, own: float | None, study: float | None, untested_why: str) -> Part:
    """A likeness: the own largest-over-smallest ratio at most ALIKE (the study's beside it)."""
    if own is None:
        return Part(claim, UNTESTED, untested_why, own, study, "alike")
    text = f"largest over smallest {_x(own)} here, {_x(study)} in the study"
    return Part(claim, HOLDS if own <= ALIKE else CONTRADICTED,
                text + ("" if own <= ALIKE else f": beyond {_x(ALIKE)}"), own, study, "alike")


def outcome_of(p: Part) -> str:
    """A part's outcome recomputed from its numbers alone (what `magnitude` and `faster` decide);
    a test checks every shown part against it."""
    if p.test == "none" or p.own is None or (p.test == "magnitude" and p.study is None):
        return UNTESTED
    if p.test == "magnitude":
        return HOLDS if 1 / TOLERANCE <= p.own / p.study <= TOLERANCE else CONTRADICTED
    if p.test == "alike":
        return HOLDS if p.own <= ALIKE else CONTRADICTED
    return HOLDS if p.own > 1 + MARGIN else CONTRADICTED


def overall(parts: list[Part]) -> str:
    tested = [p for p in parts if p.outcome != UNTESTED]
    if not tested:
        return UNTESTED
    if all(p.outcome == HOLDS for p in parts):
        return HOLDS
    if not any(p.outcome == HOLDS for p in tested):
        return CONTRADICTED
    return PARTLY


def summary(parts: list[Part]) -> str:
    """The verdict in words: which parts hold, which are contradicted, which untested and why."""
    out = []
    for word in (HOLDS, CONTRADICTED, UNTESTED):
        ps = [p for p in parts if p.outcome == word]
        if ps:
            out.append(f"{word}: " + "; ".join(f"{p.claim} ({p.why})" for p in ps))
    return ". ".join(out)
