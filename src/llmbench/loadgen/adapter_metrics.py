"""What a server reports of its LoRA adapters while a point runs, from its `/metrics`.

The engine names the metric and its labels (backends/, `prometheus.adapters`). vLLM's is a gauge
whose labels ARE the state (the running and the waiting adapters, comma-separated, and the most
active at once) and whose value is the time that state was set; every state ever seen stays on
the page as its own series, so one scrape's state is its newest series. No engine here reports
a count of adapter swaps (loads into the active set): the record says so rather than guess one
from the states, which are sampled once a scrape and miss the swaps in between.
"""

from __future__ import annotations

from llmbench.backends.engine import AdapterLabels
from llmbench.loadgen.prometheus import Sample

NO_SWAP_COUNT = "the server reports no count of adapter swaps"


def adapter_state(samples: list[Sample], names: AdapterLabels) -> dict | None:
    """One scrape's adapter state: {running: [...], waiting: [...], max_loras}, or None when
    the page has no such series (no adapters served, or no request seen yet)."""
    series = [(labels, v) for name, labels, v in samples if name == names.metric]
    if not series:
        return None
    newest, _ = max(series, key=lambda lv: lv[1])

    def listed(key: str) -> list[str]:
        return [n for n in newest.get(key, "").split(",") if n]

    cap = newest.get(names.max_loras)
    return {"running": listed(names.running), "waiting": listed(names.waiting),
            "max_loras": int(float(cap)) if cap else None}


def adapter_view(states: list[dict]) -> dict:
    """A point's adapter states summed up: the server's limit, the most adapters seen running
    at once, every adapter seen running, how many scrapes saw requests of adapters waiting (for
    a slot in the active set, or for the batch), and that no swap count is reported."""
    running = [len(s["running"]) for s in states]
    caps = {s["max_loras"] for s in states if s["max_loras"] is not None}
    return {"scrapes": len(states), "max_loras": max(caps) if caps else None,
            "running_max": max(running, default=0),
            "seen_running": sorted({n for s in states for n in s["running"]}),
            "scrapes_with_waiting": sum(1 for s in states if s["waiting"]),
            "swaps": None, "swaps_reason": NO_SWAP_COUNT + " (the running and waiting "
            "adapters above are sampled once a scrape and miss the swaps in between)"}
