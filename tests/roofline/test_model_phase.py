"""roofline.model._phase: one step given as plain numbers takes a float path; it must give
exactly what the array path gives for the same step as a one-element array."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from llmbench.roofline.model import _phase

times = st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=1e3, allow_nan=False))


@given(times, times, times)
def test_one_step_as_numbers_equals_the_array_path(mem, comp, comm):
    scalar = _phase(np.float64(mem), np.float64(comp), np.float64(comm))
    array = _phase(np.array([mem]), np.array([comp]), np.array([comm]))
    assert scalar == array


def test_binding_resource_of_hand_made_steps():
    assert _phase(2.0, 1.0, 0.0).binding == "memory"
    assert _phase(1.0, 2.0, 0.0).binding == "compute"
    assert _phase(1.0, 1.0, 3.0).binding == "interconnect"
    assert _phase(1.0, 1.0, 1.0).binding == "memory"  # ties go to memory, as in the array path
    assert _phase(0.5, 2.0, 1.0).time_s == 2.0
