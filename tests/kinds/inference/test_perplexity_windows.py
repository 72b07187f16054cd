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
