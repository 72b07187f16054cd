"""Head padding leaves attention's result unchanged (against the unpadded math, in float64)."""

import math

import pytest

torch = pytest.importorskip("torch")

from llmbench.kinds.training.attention import causal_attention, padded_width  # noqa: E402


def reference(q, k, v):
    """softmax(q k^T / sqrt(d) + causal mask) v, written out."""
    d, s = q.size(-1), q.size(-2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


def test_padded_width():
    assert padded_width(115, True) == 120      # GenSLM-250M: 1840 / 16
    assert padded_width(115, False) == 115
    assert padded_width(128, True) == 128
    assert padded_width(64, True) == 64


@pytest.mark.parametrize("pad", [True, False])
def test_padding_gives_the_unpadded_result(pad):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 10, 115, dtype=torch.double) for _ in range(3))
    got = causal_attention(q, k, v, pad=pad)
    assert got.shape == q.shape
    torch.testing.assert_close(got, reference(q, k, v), rtol=1e-10, atol=1e-12)
