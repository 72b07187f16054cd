"""Shared importer helpers: numbers, and statistics of very large sample pools."""

import math
import random

import pytest

from llmbench.importers.common import BOOTSTRAP_MAX_N, from_samples, num, numbers
from llmbench.measure.stats import summarize


def test_num_accepts_only_finite_numbers():
    assert [num(x) for x in (1, 2.5, True, "3", None, float("nan"), float("inf"))] == \
        [1.0, 2.5, None, None, None, None, None]
    assert numbers([1, 2]) == [1.0, 2.0] and numbers([1, "2"]) is None and numbers("12") is None


def test_large_pool_uses_the_normal_interval_and_agrees_with_the_bootstrap():
    rnd = random.Random(1)
    xs = [rnd.expovariate(10.0) for _ in range(BOOTSTRAP_MAX_N + 1000)]
    big = from_samples(xs, "s")
    boot = summarize(xs, "s")
    assert big.n == len(xs) and big.samples == xs     # every sample kept
    assert big.mean == pytest.approx(boot.mean) and big.p99 == pytest.approx(boot.p99)
    half = 1.959964 * big.std / math.sqrt(big.n)
    assert big.ci95_high - big.ci95_low == pytest.approx(2 * half)
    # the bootstrap interval at this n is the same to a few percent of its width
    assert big.ci95_low == pytest.approx(boot.ci95_low, abs=0.1 * half)
    assert big.ci95_high == pytest.approx(boot.ci95_high, abs=0.1 * half)


def test_overflowing_values_are_unreadable_not_infinite():
    assert from_samples([1e308, -1e308, 1e308], "s") is None
    assert from_samples([], "s") is None
