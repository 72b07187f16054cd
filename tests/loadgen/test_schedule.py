import math

import numpy as np
import pytest
from pydantic import ValidationError

from llmbench.loadgen.schedule import Schedule


def gaps(s):
    return np.diff(s.arrivals())


def test_poisson_rate_and_gamma_burstiness():
    p = Schedule(rate=50, num_prompts=20000, seed=1)
    g = gaps(p)
    assert g.mean() == pytest.approx(1 / 50, rel=0.05)
    assert g.std() / g.mean() == pytest.approx(1.0, rel=0.05)       # exponential: CV 1
    b = Schedule(rate=50, burstiness=0.25, num_prompts=20000, seed=1)
    gb = gaps(b)
    assert gb.mean() == pytest.approx(1 / 50, rel=0.08)             # same mean rate
    assert gb.std() / gb.mean() == pytest.approx(2.0, rel=0.1)      # CV = 1/sqrt(shape)


def test_inf_rate_sends_all_at_once_and_first_arrival_is_zero():
    assert Schedule(rate=math.inf, num_prompts=5).arrivals() == [0.0] * 5
    assert Schedule(rate=3, num_prompts=4).arrivals()[0] == 0.0


def test_duration_bounds_arrivals():
    a = Schedule(rate=100, duration_s=2.0, seed=3).arrivals()
    assert max(a) < 2.0 and 150 < len(a) < 250


def test_seeded_and_validated():
    assert Schedule(rate=5, num_prompts=10, seed=7).arrivals() == Schedule(rate=5, num_prompts=10, seed=7).arrivals()
    with pytest.raises(ValidationError):
        Schedule(num_prompts=3)                       # closed loop needs a concurrency
    with pytest.raises(ValidationError):
        Schedule(concurrency=1)                       # neither count nor duration
    with pytest.raises(ValidationError):
        Schedule(concurrency=1, num_prompts=3, duration_s=1)
