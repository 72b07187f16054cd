"""benchmarks/harness_overhead.py's ratio statistics against values computed here."""

import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import harness_overhead  # noqa: E402


def test_constant_ratio_has_no_spread():
    b = [0.5, 0.6, 0.55, 0.7]
    gm, lo, hi, med, mlo, mhi = harness_overhead.ratio_stats([x * 1.02 for x in b], b,
                                                             np.random.default_rng(0))
    for v in (gm, lo, hi, med, mlo, mhi):
        assert math.isclose(v, 1.02, rel_tol=1e-12)


def test_t_interval_on_log_ratios():
    # ratios e^0.01, e^0.03, e^0.02, e^0.00: mean log 0.015, sample sd sqrt(1.6667e-4),
    # t(0.975, 3) = 3.182446305284263
    logs = [0.01, 0.03, 0.02, 0.00]
    b = [1.0, 2.0, 3.0, 4.0]
    a = [x * math.exp(l) for x, l in zip(b, logs)]
    gm, lo, hi, med, mlo, mhi = harness_overhead.ratio_stats(a, b, np.random.default_rng(0))
    sd = statistics.stdev(logs)
    assert math.isclose(sd, math.sqrt(0.0005 / 3))
    half = 3.182446305284263 * sd / 2
    assert math.isclose(gm, math.exp(0.015))
    assert math.isclose(lo, math.exp(0.015 - half)) and math.isclose(hi, math.exp(0.015 + half))
    assert math.isclose(med, math.exp(0.015))  # median of the four logs
    assert math.exp(0.0) <= mlo <= med <= mhi <= math.exp(0.03)  # bootstrap within the data


def test_sampler_variant_prices_the_thread_with_a_free_reading_on_the_cpu():
    from llmbench.measure.power import SAMPLED

    m = harness_overhead.sampler_meter("cpu", 0.005)  # no RAPL power reading: the stand-in
    assert m.source.startswith("probe") and m.sampling == "dense"
    with m.window() as w:
        import time

        time.sleep(0.05)
    assert m.sampled == {0.005: 1} and w.power_samples_w and set(w.power_samples_w) == {0.0}
    assert w.method == SAMPLED and w.energy_j == 0.0
