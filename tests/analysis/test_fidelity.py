"""Fidelity arithmetic against answers computed independently (by hand, scipy.stats.entropy)."""

import math

import numpy as np
import pytest
from scipy.stats import entropy

from llmbench.analysis.fidelity import (first_divergence, kl_full, kl_topk, log_softmax,
                                        match_fraction, top1_agreement)


def test_first_divergence_and_match_fraction_on_hand_made_lists():
    ref = [5, 6, 7, 8, 9]
    assert first_divergence(ref, ref) == 5 and match_fraction(ref, ref) == 1.0
    assert first_divergence([5, 6, 0, 8, 9], ref) == 2       # one token off: 4 of 5 still match
    assert match_fraction([5, 6, 0, 8, 9], ref) == pytest.approx(4 / 5)
    assert first_divergence([1, 6, 7, 8, 9], ref) == 0
    assert match_fraction([6, 7, 8, 9, 10], ref) == 0.0     # a shift by one matches nowhere
    assert first_divergence([5, 6], ref) == 2                # a short output ends where it stops
    assert match_fraction([5, 6], ref) == pytest.approx(2 / 5)
    with pytest.raises(ValueError):
        match_fraction([1], [])


def test_kl_of_a_distribution_with_itself_is_zero():
    lp = log_softmax(np.random.default_rng(0).normal(size=(4, 50)))
    assert kl_full(lp, lp) == pytest.approx(np.zeros(4), abs=1e-15)
    assert kl_topk(lp[0], {i: lp[0, i] for i in range(10)}) == pytest.approx(0, abs=1e-12)


def test_kl_matches_scipy_on_small_known_distributions():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    # by hand: 0.5 ln 2 + 0 + 2 * 0.125 ln 0.5 = 0.25 ln 2
    assert kl_full(np.log(p), np.log(q)) == pytest.approx(0.25 * math.log(2))
    assert kl_full(np.log(p), np.log(q)) == pytest.approx(entropy(p, q))
    rng = np.random.default_rng(1)
    P, Q = rng.dirichlet(np.ones(30), size=5), rng.dirichlet(np.ones(30), size=5)
    got = kl_full(np.log(P), np.log(Q))
    assert got == pytest.approx([entropy(a, b) for a, b in zip(P, Q)], rel=1e-12)
    # a zero of P contributes nothing (scipy's convention too)
    p0 = np.array([0.0, 0.5, 0.5])
    with np.errstate(divide="ignore"):
        assert kl_full(np.log(p0), np.log(np.full(3, 1 / 3))) == pytest.approx(
            entropy(p0, np.full(3, 1 / 3)))


def test_top_k_kl_is_the_kl_of_the_merged_buckets_and_a_lower_bound():
    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40))
    top = np.argsort(q)[::-1][:5]
    rest = np.setdiff1d(np.arange(40), top)
    # the truth, by scipy: KL over the 5 returned tokens and one bucket of the rest
    buckets_p = np.append(p[top], p[rest].sum())
    buckets_q = np.append(q[top], q[rest].sum())
    got = kl_topk(np.log(p), {int(t): float(np.log(q[t])) for t in top})
    assert got == pytest.approx(entropy(buckets_p, buckets_q), rel=1e-9)
    assert got <= entropy(p, q)
    # every token returned: exact
    assert kl_topk(np.log(p), {i: float(np.log(q[i])) for i in range(40)}) == pytest.approx(
        entropy(p, q), rel=1e-9)


def test_top1_agreement():
    assert top1_agreement([1, 2, 3, 4], [1, 2, 0, 4]) == pytest.approx(3 / 4)


def test_log_softmax_rows_are_distributions():
    lp = log_softmax(np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 0.0]]))
    assert np.exp(lp).sum(axis=1) == pytest.approx([1, 1])
    assert np.exp(lp[1]) == pytest.approx([0.5, 0.5, 0.0])
