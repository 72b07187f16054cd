import pytest
from hypothesis import given, strategies as st

from llmbench.errors import SpecError
from llmbench.backends.windows import windows


@given(n=st.integers(2, 3000), ctx=st.integers(2, 512), data=st.data())
def test_every_token_after_the_first_scored_exactly_once(n, ctx, data):
    stride = data.draw(st.integers(1, ctx - 1))
    scored = []
    for begin, end, score_from in windows(n, ctx, stride):
        assert end - begin <= ctx and begin < score_from <= end
        scored.extend(range(score_from, end))
    assert scored == list(range(1, n))


def test_stride_not_below_context_refused():
    with pytest.raises(SpecError):
        list(windows(100, 8, 8))


def documented_windows(n, ctx, stride):
    """The transformers perplexity guide's loop, written out: window k runs
    [k * stride, min(k * stride + ctx, n)) and scores from the previous window's end (1 for the
    first); it stops at the first window that reaches the end."""
    out, k = [], 0
    while True:
        begin, end = k * stride, min(k * stride + ctx, n)
        out.append((begin, end, 1 if k == 0 else min((k - 1) * stride + ctx, n)))
        if end == n:
            return out
        k += 1


@pytest.mark.parametrize("n,ctx,stride", [(495, 256, 128), (300, 256, 128), (256, 256, 128),
                                          (100, 256, 128), (1000, 256, 100), (1001, 10, 3)])
def test_windows_are_the_documented_scheme(n, ctx, stride):
    assert list(windows(n, ctx, stride)) == documented_windows(n, ctx, stride)


def test_last_window_is_shorter_not_a_full_context():
    # 495 tokens at 256/128: the last window begins at 256 (a multiple of the stride) and keeps
    # 239 tokens; it scores the 111 tokens after 384
    assert list(windows(495, 256, 128)) == [(0, 256, 1), (128, 384, 256), (256, 495, 384)]


def test_perplexity_record_says_it_was_computed_once():
    from llmbench.kinds.inference.spec import PerplexityConfig, Point

    p = Point(workload="perplexity", backend="llamacpp", model="smollm2-135m",
              perplexity=PerplexityConfig(), repeats=3, warmups=1)
    w = p.workload_fields()
    assert (w["repeats"], w["warmups"]) == (1, 0)        # what was done, not the sweep's 3 / 1
    assert (w["context_len"], w["stride"]) == (256, 128)
    off = Point(backend="llamacpp", model="smollm2-135m", repeats=3, warmups=1).workload_fields()
    assert (off["repeats"], off["warmups"]) == (3, 1)
