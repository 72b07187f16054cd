"""The chunked LM-head loss against cross-entropy computed the plain way in float64."""

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from llmbench.kinds.training import head_loss  # noqa: E402
from llmbench.kinds.training.head_loss import LMHead, block_rows  # noqa: E402


def plain(x, norm, w, t):
    """The definition: mean over tokens of -log softmax(norm(x) W^T)[target], in float64."""
    logits = norm(x) @ w.t()
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), t.reshape(-1))


@pytest.mark.parametrize("budget", [64 * 7, 64 * 60, 2**28])  # many blocks, a few, one
def test_chunked_loss_and_gradients_match_the_definition(monkeypatch, budget):
    monkeypatch.setattr(head_loss, "LOGIT_BLOCK_ELEMENTS", budget)
    torch.manual_seed(0)
    V, h, B, S = 64, 16, 3, 20
    head = LMHead(h, V, torch.nn.LayerNorm(h), loss="chunked").double()
    with torch.no_grad():
        head.norm.weight.uniform_(0.5, 1.5)
        head.norm.bias.uniform_(-0.1, 0.1)
    x = torch.randn(B, S, h, dtype=torch.double, requires_grad=True)
    t = torch.randint(0, V, (B, S))
    got = head(x, t)
    got.backward()
    gx, gw, gn = x.grad.clone(), head.proj.weight.grad.clone(), head.norm.weight.grad.clone()

    x.grad = None
    w = head.proj.weight.detach().clone().requires_grad_(True)
    norm = torch.nn.LayerNorm(h).double()
    norm.load_state_dict(head.norm.state_dict())
    want = plain(x, norm, w, t)
    want.backward()
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    torch.testing.assert_close(gx, x.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gw, w.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gn, norm.weight.grad, rtol=1e-10, atol=1e-12)


def test_chunked_scales_by_the_incoming_gradient():
    torch.manual_seed(1)
    head = LMHead(8, 32, torch.nn.LayerNorm(8), loss="chunked").double()
    x = torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True)
    t = torch.randint(0, 32, (2, 5))
    (3.0 * head(x, t)).backward()
    g3 = x.grad.clone()
    x.grad = None
    head(x, t).backward()
    torch.testing.assert_close(g3, 3.0 * x.grad)


def test_block_rows_split_evenly_within_the_budget():
    # 16,384 tokens x 50,304 logits: 2**28 / 50,304 = 5,336 rows at most -> 4 blocks of 4,096
    assert block_rows(16384, 50304) == 4096
    assert block_rows(16384, 128) == 16384          # a codon vocabulary: one block
    assert block_rows(7, 2**28) == 1                 # one row at a time, never zero
    n = 3 * 1000 + 1                                # a prime-ish count still divides evenly
    r = block_rows(n, 2**28 // 1000)
    assert n % r == 0 and r <= 1000


def test_unknown_loss_is_refused():
    with pytest.raises(ValueError, match="full' or 'chunked"):
        LMHead(8, 32, torch.nn.LayerNorm(8), loss="fused")
