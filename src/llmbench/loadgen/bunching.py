"""Is a point's ITL the server's, or the client's? A client that falls behind (its loop busy
or starved of a core, too many streams for one core) reads several of the server's writes in
one read; they all get that read's time, and the gaps between them -- split evenly from the gap
before the read (measure/timeline.py), or near zero where reads crowd -- are the client's
reading rhythm, not the server's token rhythm. Three signs, each measured over the point:

- events per read: SSE events carrying tokens / reads carrying them. A server writes each event
  on its own (one or several tokens in it: that is the server's chunking and stays 1 here); a
  client that keeps up reads each write on its own. Above EVENTS_PER_READ_LIMIT, writes piled
  up in the socket before the client read them.
- near-zero gaps: the share of ITL gaps (after the first event) below NEAR_ZERO_GAP_S (no engine decodes a token in
  100 us per sequence); above NEAR_ZERO_SHARE_LIMIT, reads came back to back from a backlog.
- loop lag: the event loop's p99 lag (loadgen/selfcheck.py) above the ITL p50 it measures.

Any one marks the ITL client-limited: the record, the summary and `llmbench results` say so.
"""

from __future__ import annotations

NEAR_ZERO_GAP_S = 1e-4
NEAR_ZERO_SHARE_LIMIT = 0.10
EVENTS_PER_READ_LIMIT = 1.5


def itl_fidelity(outcomes, loop_lag_p99_s: float | None) -> dict | None:
    """{events_per_read, reads_per_token, near_zero_gap_share, loop_lag_p99_s, itl_p50_s,
    client_limited, reasons} over the successful outcomes; None when no gap was measured."""
    ok = [o for o in outcomes if o.ok and o.timeline.output_tokens > 1]
    # (the zero gaps of the first event's extra tokens are the ITL convention's, not a sign)
    gaps = sorted(g for o in ok for g in o.timeline.itl_s()[o.timeline.events[0][1] - 1:])
    if not gaps:
        return None
    events = sum(o.n_events for o in ok)
    reads = sum(o.n_reads for o in ok)
    tokens = sum(o.timeline.output_tokens for o in ok)
    share = sum(1 for g in gaps if g < NEAR_ZERO_GAP_S) / len(gaps)
    p50 = gaps[len(gaps) // 2]
    epr = events / reads if reads else None
    reasons = []
    if epr is not None and epr > EVENTS_PER_READ_LIMIT:
        reasons.append(f"{epr:.2f} server events per client read (limit {EVENTS_PER_READ_LIMIT:g}): "
                       "writes piled up before the client read them")
    if share > NEAR_ZERO_SHARE_LIMIT:
        reasons.append(f"{share:.0%} of gaps under {NEAR_ZERO_GAP_S * 1e6:.0f} us "
                       f"(limit {NEAR_ZERO_SHARE_LIMIT:.0%}): reads came back to back")
    if loop_lag_p99_s is not None and loop_lag_p99_s > p50:
        reasons.append(f"event-loop lag p99 {loop_lag_p99_s * 1e3:.2f} ms exceeds the ITL p50 "
                       f"{p50 * 1e3:.2f} ms it measures")
    return {"events_per_read": epr, "reads_per_token": reads / tokens if tokens else None,
            "near_zero_gap_share": share, "loop_lag_p99_s": loop_lag_p99_s, "itl_p50_s": p50,
            "client_limited": bool(reasons), "reasons": reasons}
