"""A record's `observers`: what ran beside the engine while its point was measured, and how
(issue 24). An observer that did nothing in or around the measured windows is left out, so
an empty entry never stands for "not recorded"."""

from __future__ import annotations

PROGRESS = "told after each repeat, once its window had closed; nothing inside a window"
RECORD_SYNC = ("the record's fsyncs (its file, then its directory) on a thread of their own once it "
               "was in place, waiting in the kernel while the next point began (launch.pipeline."
               "run_group); the previous record's did the same beside this point's start")
TIMELINES = ("a perf_counter stamp per token event, taken by the backend inside its decoding "
             "loop (the measurement itself)")


def observers(meter=None, watch=None, counters=None, **more: str | None) -> dict[str, str]:
    """name -> what it did, for the energy meter, the contention watch, the hardware counters
    and any others given by name (None: did not run)."""
    found = {"energy": meter.observer() if meter is not None else None,
             "contention": watch.observer() if watch is not None else None,
             "hardware_counters": counters.observer() if counters is not None else None, **more}
    return {name: what for name, what in found.items() if what}


def observed(meter, watch, counters):
    """`meter` whose every window is also watched for contention (outermost: its CPU-time
    reads bracket everything) and read for hardware counters (inside it, around the energy
    window). On the aside thread the GPU list is then taken inside the window, after the energy
    counter's opening read, and the closing GPM samples come before the counter's closing read
    (~4 ms): the record waits for the counter alone, and only when it takes the energy."""
    from llmbench.measure.contention import WatchedMeter
    from llmbench.measure.gpm import CountedMeter

    return WatchedMeter(CountedMeter(meter, counters), watch)
