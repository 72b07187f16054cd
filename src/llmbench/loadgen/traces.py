"""Timestamped request traces in the public formats serving papers replay.

- Mooncake (JSONL): `{"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [..]}`;
  each hash id names one block of `MOONCAKE_BLOCK_TOKENS` prompt tokens, and requests that share
  leading hash ids share that prefix (the trace's prefix-cache structure).
- Azure LLM inference trace (CSV): `TIMESTAMP` (a date-time), `ContextTokens`, `GeneratedTokens`.
- BurstGPT (CSV): `Timestamp` (seconds), `Model`, `Request tokens`, `Response tokens`, ...;
  rows whose response has 0 tokens (failed requests in the log) are left out.

Arrival times become offsets from the trace's first request; `prepare` scales time (a speed-up
of 2 replays the trace twice as fast), caps lengths and keeps the first N requests.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from llmbench.errors import SpecError

FORMATS = ("mooncake", "azure", "burstgpt")
MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class TraceRequest:
    t_s: float                         # arrival, seconds after the trace's first request
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...] = ()     # Mooncake: one id per prompt block


@dataclass
class Trace:
    format: str
    requests: list[TraceRequest]
    block_tokens: int | None = None    # tokens per hash id (Mooncake)
    notes: list[str] | None = None


def _bad(path: Path, msg: str) -> SpecError:
    return SpecError([("--trace", f"{path}: {msg}")])


def detect_format(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.readline().strip()
    except OSError as e:
        raise _bad(path, f"cannot read: {e.strerror}") from None
    if head.startswith("{"):
        return "mooncake"
    cols = {c.strip() for c in head.split(",")}
    if {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} <= cols:
        return "azure"
    if {"Timestamp", "Request tokens", "Response tokens"} <= cols:
        return "burstgpt"
    raise _bad(path, "not a trace llmbench knows: Mooncake JSONL (timestamp, input_length, "
                     "output_length, hash_ids), Azure CSV (TIMESTAMP, ContextTokens, "
                     "GeneratedTokens) or BurstGPT CSV (Timestamp, Request tokens, Response tokens)")


def read_trace(path: Path | str, fmt: str = "auto") -> Trace:
    path = Path(path)
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise SpecError([("--trace-format", f"{fmt!r} is not one of auto, {', '.join(FORMATS)}")])
    try:
        rows = {"mooncake": _mooncake, "azure": _azure, "burstgpt": _burstgpt}[fmt](path)
    except OSError as e:
        raise _bad(path, f"cannot read: {e.strerror}") from None
    if not rows:
        raise _bad(path, f"no usable request in this {fmt} trace")
    rows.sort(key=lambda r: r.t_s)
    t0 = rows[0].t_s
    reqs = [TraceRequest(r.t_s - t0, r.input_len, r.output_len, r.hash_ids) for r in rows]
    return Trace(fmt, reqs, MOONCAKE_BLOCK_TOKENS if fmt == "mooncake" else None)


def _int(path: Path, where: str, v) -> int:
    try:
        n = int(float(v))
    except (TypeError, ValueError):
        raise _bad(path, f"{where}: {v!r} is not a number") from None
    return n


def _mooncake(path: Path) -> list[TraceRequest]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                t_ms, n_in, n_out = d["timestamp"], d["input_length"], d["output_length"]
            except (ValueError, KeyError, TypeError):
                raise _bad(path, f"line {i} is not a Mooncake record (timestamp, input_length, "
                                 "output_length)") from None
            hashes = tuple(int(h) for h in d.get("hash_ids") or ())
            out.append(TraceRequest(float(t_ms) / 1e3, _int(path, f"line {i}", n_in),
                                    _int(path, f"line {i}", n_out), hashes))
    return [r for r in out if r.input_len > 0 and r.output_len > 0]


def _azure_time(path: Path, where: str, text: str) -> float:
    # "2023-11-16 18:15:46.6805900": 7 fractional digits, more than fromisoformat reads.
    s = text.strip()
    main, _, frac = s.partition(".")
    try:
        t = datetime.fromisoformat(main).timestamp()
        return t + (float(f"0.{frac}") if frac else 0.0)
    except ValueError:
        raise _bad(path, f"{where}: TIMESTAMP {text!r} is not a date-time") from None


def _azure(path: Path) -> list[TraceRequest]:
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.DictReader(f), 2):
            out.append(TraceRequest(_azure_time(path, f"row {i}", row["TIMESTAMP"]),
                                    _int(path, f"row {i}", row["ContextTokens"]),
                                    _int(path, f"row {i}", row["GeneratedTokens"])))
    return [r for r in out if r.input_len > 0 and r.output_len > 0]


def _burstgpt(path: Path) -> list[TraceRequest]:
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.DictReader(f), 2):
            try:
                t = float(row["Timestamp"])
            except (TypeError, ValueError):
                raise _bad(path, f"row {i}: Timestamp {row.get('Timestamp')!r} is not seconds") from None
            out.append(TraceRequest(t, _int(path, f"row {i}", row["Request tokens"]),
                                    _int(path, f"row {i}", row["Response tokens"])))
    return [r for r in out if r.input_len > 0 and r.output_len > 0]


def prepare(trace: Trace, *, speedup: float = 1.0, max_input_len: int | None = None,
            max_output_len: int | None = None, limit: int | None = None) -> tuple[list[TraceRequest], list[str]]:
    """The requests to replay and notes on what was changed. Capping an input keeps its leading
    hash ids (the shared prefix), dropping the blocks past the cap."""
    if not speedup > 0:
        raise SpecError([("--trace-speedup", f"{speedup} must be > 0")])
    reqs = trace.requests[:limit] if limit else list(trace.requests)
    capped_in = capped_out = 0
    out = []
    for r in reqs:
        n_in, n_out, hashes = r.input_len, r.output_len, r.hash_ids
        if max_input_len and n_in > max_input_len:
            n_in, capped_in = max_input_len, capped_in + 1
            if trace.block_tokens:
                hashes = hashes[:-(-n_in // trace.block_tokens)]
        if max_output_len and n_out > max_output_len:
            n_out, capped_out = max_output_len, capped_out + 1
        out.append(TraceRequest(r.t_s / speedup, n_in, n_out, hashes))
    notes = []
    if capped_in or capped_out:
        notes.append(f"trace lengths capped: {capped_in} input(s) at {max_input_len}, "
                     f"{capped_out} output(s) at {max_output_len} tokens")
    return out, notes
