"""Captured SSE streams as the client reads them (a Response of timed pieces), for the judged
shapes' tests."""

import json

from llmbench.loadgen.http import Response


def chat_stream(deltas: list[dict], finish: str | None = "stop", t0: float = 1.0, gap_s: float = 0.01,
                usage: int | None = None) -> Response:
    """A chat stream: one event per delta at t0, t0 + gap, ...; the finish reason on the last
    choice; a usage event when given; then [DONE]."""
    pieces = []
    for i, d in enumerate(deltas):
        ch = {"index": 0, "delta": d}
        if i == len(deltas) - 1 and finish:
            ch["finish_reason"] = finish
        pieces.append((t0 + i * gap_s, f"data: {json.dumps({'choices': [ch]})}\n\n".encode()))
    t_end = t0 + len(deltas) * gap_s
    if usage is not None:
        pieces.append((t_end, f"data: {json.dumps({'choices': [], 'usage': {'prompt_tokens': 4, 'completion_tokens': usage}})}\n\n".encode()))
    pieces.append((t_end, b"data: [DONE]\n\n"))
    return Response(status=200, t_send=t0 - 0.5, pieces=pieces, complete=True)


def text_answer(text: str, finish: str = "stop") -> Response:
    """An answer streamed as one content event per character."""
    return chat_stream([{"content": c} for c in text] or [{"content": ""}], finish)
