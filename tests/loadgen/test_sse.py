import json

from hypothesis import given, settings, strategies as st

from llmbench.loadgen.sse import SSEParser, parse_all


def stream(payloads, eol=b"\n"):
    out = b": ping" + eol + eol
    for p in payloads:
        out += b"data: " + p + eol + eol
    return out


def test_merged_events_in_one_read():
    body = stream([b'{"a":1}', b'{"a":2}', b"[DONE]"])
    assert [d for _, d in SSEParser().feed(body, 1.0)] == [b'{"a":1}', b'{"a":2}', b"[DONE]"]


def test_event_split_inside_crlf_and_utf8_is_dispatched_once_at_the_completing_read():
    ev = 'data: {"t":"é"}\r\n\r\n'.encode()
    p = SSEParser()
    cut = ev.index(b"\xc3") + 1
    assert p.feed(ev[:cut], 1.0) == []
    assert p.feed(ev[cut:-3], 2.0) == []          # ends between CR and LF
    got = p.feed(ev[-3:], 3.0)
    assert got == [(3.0, '{"t":"é"}'.encode())]
    assert json.loads(got[0][1])["t"] == "é"


def test_multiline_data_comments_and_other_fields():
    body = b"event: message\nid: 7\ndata: line1\ndata: line2\n\n: comment only\n\nretry: 5\n\n"
    assert [d for _, d in SSEParser().feed(body)] == [b"line1\nline2"]


def test_cr_only_line_ends():
    p = SSEParser()
    # The last CR could be half of a CRLF still in flight: held back until more bytes or the end.
    assert [d for _, d in p.feed(b"data: x\r\rdata: y\r\r")] == [b"x"]
    assert [d for _, d in p.feed(b"data: z\r\r")] == [b"y"]
    assert [d for _, d in p.close()] == [b"z"]


def test_unterminated_last_event_at_close():
    p = SSEParser()
    assert p.feed(b"data: a\n\ndata: b\n") == [(0.0, b"a")]
    assert p.close(5.0) == [(5.0, b"b")]


@settings(max_examples=200, deadline=None)
@given(payloads=st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n",
                                                       blacklist_categories=("Cs",)),
                                 min_size=1, max_size=20), min_size=1, max_size=12),
       eol=st.sampled_from([b"\n", b"\r\n", b"\r"]), data=st.data())
def test_any_split_gives_the_same_events(payloads, eol, data):
    body = stream([p.encode() for p in payloads], eol)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=10)))
    pieces, prev = [], 0
    for i, c in enumerate(cuts + [len(body)]):
        pieces.append((float(i), body[prev:c]))
        prev = c
    want = [p.encode() for p in payloads]   # only the one space after "data:" is dropped
    got = parse_all(pieces)
    assert [d for _, d in got] == want
    # Every event is stamped with the time of the read that completed it, never earlier.
    assert [t for t, _ in got] == sorted(t for t, _ in got)
