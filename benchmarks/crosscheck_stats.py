"""What the cross-checks (llamacpp_crosscheck.py, vllm_crosscheck.py, vllm_serve_crosscheck.py)
share: one statistic on both sides (the median of per-repeat samples), one direction (a
throughput ratio llmbench / tool: above 1 = llmbench faster; a time is inverted to say the
same), and the A/B order alternating over rounds so that drift on a shared machine hits both.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

DIRECTION = "ratio = llmbench / tool as a throughput: > 1 = llmbench faster"


def speed_ratio(ours: Sequence[float], theirs: Sequence[float], *, time: bool = False) -> float:
    """median(ours) / median(theirs) for throughput samples; median(theirs) / median(ours) for
    time samples (so that > 1 always means llmbench is faster)."""
    o, t = statistics.median(ours), statistics.median(theirs)
    return t / o if time else o / t


def order(round_index: int) -> tuple[str, str]:
    """Who goes first in a round: llmbench in even rounds, the tool in odd ones."""
    return ("llmbench", "tool") if round_index % 2 == 0 else ("tool", "llmbench")
