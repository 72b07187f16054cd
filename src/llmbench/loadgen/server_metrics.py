"""The server's own view of a load point: its Prometheus `/metrics`, scraped while the point runs.

Engines name the same things differently; each engine's module (backends/, its `prometheus`)
maps its names onto llmbench's one vocabulary below. Per point the record keeps
- counters as deltas over the point (first scrape just before the first request, last after
  the last answer, repeated until the token counters stop moving),
- gauges as time series (seconds from the point's start) with their mean and max,
- histograms (server-side TTFT, ITL, E2E, queue time) as deltas: count, mean and quantiles
  interpolated inside the buckets (coarse: bucket edges are the server's).
Label sets (model, engine index, finish reason) are summed.

Scraping runs in its own thread with its own blocking HTTP connection, never on the client's
event loop, so a slow `/metrics` never delays a token's timestamp; the thread's CPU time is
measured (`scrape_cpu_s`) so its cost is known. A server without `/metrics` gives
`available: false` and the reason.
"""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from llmbench.backends import prometheus_names
from llmbench.backends.engine import PrometheusNames
from llmbench.loadgen.adapter_metrics import adapter_state, adapter_view
from llmbench.loadgen.prometheus import Sample, parse_small

# llmbench's server metrics; each engine's names for them are its own (backends/, `prometheus`)
COUNTERS = ("prompt_tokens", "generation_tokens", "preemptions", "prefix_cache_queries",
            "prefix_cache_hits", "requests_finished",
            # speculative decoding: steps with a draft, tokens proposed, tokens accepted
            "spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")
GAUGES = ("requests_running", "requests_waiting", "kv_cache_usage")   # kv_cache_usage: 0..1
HISTOGRAMS = ("ttft_s", "itl_s", "e2e_s", "queue_s")


def _names(server: str) -> PrometheusNames:
    return prometheus_names()[server]


def wanted(server: str) -> tuple[str, ...]:
    """The metric names (as prefixes: histograms add _bucket/_sum/_count) read for a server."""
    n = _names(server)
    return tuple(m for table in (n.counters, n.gauges, n.histograms) for names in table.values()
                 for m in names) + ((n.adapters.metric,) if n.adapters else ())


def detect_server(samples: list[Sample]) -> str | None:
    names = [s[0] for s in samples]
    for server, known in prometheus_names().items():
        if any(n.startswith(known.prefix) for n in names):
            return server
    return None


@dataclass
class Scrape:
    t: float                                                # perf_counter when the answer came
    values: dict[str, float]                                # counters and gauges, canonical names
    hist: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {le|sum|count: v}
    adapters: dict | None = None                            # LoRA state (loadgen/adapter_metrics.py)


def extract(samples: list[Sample], server: str) -> Scrape:
    """One scrape's canonical values (label sets summed)."""
    totals: dict[str, float] = {}
    buckets: dict[tuple[str, str], float] = {}
    for name, labels, v in samples:
        totals[name] = totals.get(name, 0.0) + v
        if name.endswith("_bucket") and "le" in labels:
            key = (name[:-7], labels["le"])
            buckets[key] = buckets.get(key, 0.0) + v
    names = _names(server)
    values = {}
    for table in (names.counters, names.gauges):
        for canon, metrics in table.items():
            for metric in metrics:
                if metric in totals:
                    values[canon] = totals[metric]
                    break
    hist = {}
    for canon, metrics in names.histograms.items():
        for metric in metrics:
            if f"{metric}_count" in totals:
                h = {le: v for (m, le), v in buckets.items() if m == metric}
                h["sum"], h["count"] = totals.get(f"{metric}_sum", 0.0), totals[f"{metric}_count"]
                hist[canon] = h
                break
    adapters = adapter_state(samples, names.adapters) if names.adapters else None
    return Scrape(time.perf_counter(), values, hist, adapters)


def histogram_delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float | None]:
    """count, mean and p50/p90/p99 of the observations made between two scrapes."""
    count = b["count"] - a.get("count", 0.0)
    out: dict[str, float | None] = {"count": count,
                                    "mean_s": (b["sum"] - a.get("sum", 0.0)) / count if count else None}
    edges = sorted((float(le), b[le] - a.get(le, 0.0)) for le in b if le not in ("sum", "count"))
    for q in (0.5, 0.9, 0.99):
        out[f"p{round(q * 100)}_s"] = _quantile(edges, count, q) if count else None
    return out


def _quantile(edges: list[tuple[float, float]], count: float, q: float) -> float | None:
    # Prometheus' histogram_quantile: linear inside the bucket; the +Inf bucket gives its lower edge.
    rank, lo, below = q * count, 0.0, 0.0
    for hi, cum in edges:
        if cum >= rank:
            if hi == float("inf"):
                return lo
            inside = cum - below
            return lo + (hi - lo) * ((rank - below) / inside if inside else 1.0)
        lo, below = hi, cum
    return None


class Scraper:
    """Scrape `url/metrics` every `interval_s` in a thread between `start()` and `stop()`."""

    def __init__(self, url: str, interval_s: float = 1.0, api_key: str | None = None,
                 timeout_s: float = 5.0):
        self.url, self.interval_s, self.timeout_s = f"{url}/metrics", interval_s, timeout_s
        u = urlsplit(self.url)
        self._tls, self._host, self._port, self._path = u.scheme == "https", u.hostname, u.port, u.path
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._conn: http.client.HTTPConnection | None = None   # kept alive between scrapes
        self._keep: tuple[str, ...] | None = None
        self.server: str | None = None
        self.reason: str | None = None
        self.scrapes: list[Scrape] = []
        self.cpu_s = 0.0
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _get(self) -> tuple[int, bytes]:
        # One kept-alive connection: a new one per scrape (urllib) cost several ms of CPU.
        for attempt in (0, 1):
            if self._conn is None:
                cls = http.client.HTTPSConnection if self._tls else http.client.HTTPConnection
                self._conn = cls(self._host, self._port, timeout=self.timeout_s)
            try:
                self._conn.request("GET", self._path, headers=self._headers)
                r = self._conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _fetch(self) -> list[Sample] | None:
        c0 = time.thread_time()
        try:
            status, body = self._get()
            if status != 200:
                self.reason = f"GET /metrics answered HTTP {status} (this server exposes no Prometheus metrics)"
                return None
            return parse_small(body.decode("utf-8", "replace"), self._keep)
        except (OSError, ValueError, http.client.HTTPException) as e:
            self.reason = f"GET /metrics failed: {e}"
        finally:
            self.cpu_s += time.thread_time() - c0
        return None

    def _scrape(self) -> Scrape | None:
        samples = self._fetch()
        if samples is None:
            self.failures += 1
            return None
        c0 = time.thread_time()
        s = extract(samples, self.server) if self.server else None
        if s is not None:
            self.scrapes.append(s)
        self.cpu_s += time.thread_time() - c0
        return s

    @property
    def available(self) -> bool:
        return self.server is not None

    def start(self) -> None:
        """One scrape now (the baseline, and whether there is anything to read), then the thread."""
        samples = self._fetch()
        if samples is None:
            return
        self.server = detect_server(samples)
        if self.server is None:
            self.reason = "GET /metrics answered, but with no metric names llmbench knows " \
                          f"(those of {', '.join(prometheus_names())})"
            return
        self._keep = wanted(self.server)
        self.scrapes.append(extract(samples, self.server))
        self._thread = threading.Thread(target=self._loop, name="llmbench-metrics", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._scrape()

    def stop(self, settle_s: float = 2.0) -> None:
        """End the thread; scrape until the token counters stop moving (servers update them a
        moment after the last byte is sent), at most `settle_s`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout_s + 1)
        try:
            if self.available:
                self._settle(settle_s)
        finally:
            if self._conn is not None:
                self._conn.close()

    def _settle(self, settle_s: float) -> None:
        deadline = time.perf_counter() + settle_s
        last = self._scrape()
        while last is not None and time.perf_counter() < deadline:
            time.sleep(0.1)
            nxt = self._scrape()
            if nxt is None or _tokens(nxt) == _tokens(last):
                break
            last = nxt

    def summary(self, t_ref: float) -> dict:
        if not self.available or len(self.scrapes) < 2:
            return {"available": False, "endpoint": "/metrics",
                    "reason": self.reason or "fewer than two scrapes succeeded"}
        first, last = self.scrapes[0], self.scrapes[-1]
        counters = {k: last.values[k] - first.values.get(k, 0.0)
                    for k in COUNTERS if k in last.values}
        gauges = {}
        for k in GAUGES:
            pts = [(s.t - t_ref, s.values[k]) for s in self.scrapes if k in s.values]
            if pts:
                vals = [v for _, v in pts]
                gauges[k] = {"t_s": [round(t, 4) for t, _ in pts], "value": vals,
                             "mean": sum(vals) / len(vals), "max": max(vals)}
        hists = {k: histogram_delta(first.hist.get(k, {}), last.hist[k]) for k in last.hist}
        q, h = counters.get("prefix_cache_queries"), counters.get("prefix_cache_hits")
        states = [s.adapters for s in self.scrapes if s.adapters is not None]
        return {**({"adapters": adapter_view(states)} if states else {}),"available": True, "endpoint": "/metrics", "server": self.server,
                "interval_s": self.interval_s, "scrapes": len(self.scrapes),
                "failed_scrapes": self.failures, "scrape_cpu_s": self.cpu_s,
                "window_s": [round(first.t - t_ref, 4), round(last.t - t_ref, 4)],
                "counters": counters,
                "prefix_cache_hit_rate": h / q if q and h is not None else None,
                "gauges": gauges, "histograms": hists}


def _tokens(s: Scrape) -> tuple:
    return s.values.get("generation_tokens"), s.values.get("prompt_tokens"), \
        s.values.get("requests_finished")
