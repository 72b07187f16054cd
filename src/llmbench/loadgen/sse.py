"""Server-sent events, parsed incrementally from bytes as they arrive.

Correct whatever the network does to the stream: several events merged into one read, one event
split across reads (even inside a CRLF pair or a multi-byte UTF-8 character), CR, LF or CRLF
line ends, comment lines (": ping") and multi-line `data:` fields (joined with "\\n", per the
WHATWG spec). Each complete event is returned with the arrival time of the read that completed
it, which is when a client could first have acted on it.
"""

from __future__ import annotations


class SSEParser:
    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes, t: float = 0.0) -> list[tuple[float, bytes]]:
        """Bytes in; (t, data payload) out for every event completed by them. Events without a
        data field (comments, bare `event:` lines) yield nothing."""
        if not self._buf and data.startswith(b"data: ") and data.endswith(b"\n\n") \
                and data.count(b"\n") == 2 and b"\r" not in data:
            return [(t, data[6:-2])]   # the common case: one whole single-line event per read
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            # A trailing CR may be the first half of a CRLF split across reads: keep it back.
            held = b"\r" if buf.endswith(b"\r") else b""
            if held:
                buf = buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + held
        blocks = buf.split(b"\n\n")
        self._buf = blocks.pop()
        out = []
        for block in blocks:
            payload = _data_of(block)
            if payload is not None:
                out.append((t, payload))
        return out

    def close(self, t: float = 0.0) -> list[tuple[float, bytes]]:
        """End of stream: an unterminated last event is dispatched only if it is a complete
        `data:` line (some servers omit the final blank line)."""
        rest, self._buf = self._buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), b""
        if rest.endswith(b"\n"):
            payload = _data_of(rest.strip(b"\n"))
            if payload is not None:
                return [(t, payload)]
        return []

    @property
    def pending(self) -> bytes:
        return self._buf


def _data_of(block: bytes) -> bytes | None:
    data = None
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            v = line[5:]
            if v.startswith(b" "):
                v = v[1:]
            data = v if data is None else data + b"\n" + v
        # Comments (":...") and other fields (event, id, retry) carry no tokens.
    return data


def parse_all(pieces: list[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
    """Every event of a whole recorded body, given as (arrival time, bytes) pieces in order."""
    p = SSEParser()
    out: list[tuple[float, bytes]] = []
    for t, data in pieces:
        out.extend(p.feed(data, t))
    if pieces:
        out.extend(p.close(pieces[-1][0]))
    return out
