"""Feistel / RevNet round trips (spec T43, T44) and backprop without stored activations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from roofline import reversible as R

sq = lambda x: x**2


def test_t43_feistel():
    fwd = R.feistel_forward(3, 5, sq)
    assert tuple(int(v) for v in fwd) == (3, 14)
    assert tuple(int(v) for v in R.feistel_inverse(*fwd, sq)) == (3, 5)


def test_t44_revnet():
    fwd = R.revnet_forward(3, 5, sq)
    assert tuple(int(v) for v in fwd) == (14, 3)
    assert tuple(int(v) for v in R.revnet_inverse(*fwd, sq)) == (3, 5)


@settings(max_examples=50, deadline=None)
@given(arrays(np.int64, (3, 4), elements=st.integers(-1000, 1000)),
       arrays(np.int64, (3, 4), elements=st.integers(-1000, 1000)))
def test_integer_round_trips_are_exact(x, y):
    f = lambda v: v**2 - 3 * v  # not invertible: the construction does not need it
    for fwd, inv in ((R.feistel_forward, R.feistel_inverse), (R.revnet_forward, R.revnet_inverse)):
        a, b = inv(*fwd(x, y, f), f)
        assert np.array_equal(a, x) and np.array_equal(b, y)
    g = lambda v: 2 * v + 1
    a, b = R.gomez_inverse(*R.gomez_forward(x, y, f, g), f, g)
    assert np.array_equal(a, x) and np.array_equal(b, y)
    fs = [f, g, f, g, f]
    a, b = R.stack_inverse(*R.stack_forward(x, y, fs), fs)
    assert np.array_equal(a, x) and np.array_equal(b, y)


def test_float_stack_round_trip_within_rounding():
    rng = np.random.default_rng(1)
    blocks = R.random_blocks(24, 16, seed=2)
    x, y = rng.normal(size=(5, 16)), rng.normal(size=(5, 16))
    a, b = R.stack_inverse(*R.stack_forward(x, y, blocks), blocks)
    assert np.max(np.abs(a - x)) < 1e-12 and np.max(np.abs(b - y)) < 1e-12


def test_reversible_backward_equals_stored_backward():
    """Gomez et al. Algorithm 1: same gradients, O(1) stored activations, one extra f per layer."""
    rng = np.random.default_rng(3)
    L, w = 12, 8
    blocks = R.random_blocks(L, w, seed=4)
    x, y = rng.normal(size=(4, w)), rng.normal(size=(4, w))
    gx, gy = rng.normal(size=(4, w)), rng.normal(size=(4, w))
    ref = R.backward_stored(x, y, blocks, gx, gy)
    out = R.stack_forward(x, y, blocks)
    rev = R.backward_reversible(*out, blocks, gx, gy)
    assert np.allclose(rev.grad_x, ref.grad_x, rtol=1e-10, atol=1e-12)
    assert np.allclose(rev.grad_y, ref.grad_y, rtol=1e-10, atol=1e-12)
    for a, b in zip(rev.grad_W, ref.grad_W):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-12)
    assert (ref.peak_stored_arrays, rev.peak_stored_arrays) == (2 * L, 2)
    assert rev.extra_forward_calls == L  # ≈ one extra forward pass: 8ND instead of 6ND


def test_gradient_matches_finite_difference():
    rng = np.random.default_rng(5)
    blocks = R.random_blocks(3, 4, seed=6)
    x, y = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    gx, gy = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    loss = lambda x_: float(np.sum(np.stack(R.stack_forward(x_, y, blocks)) * np.stack([gx, gy])))
    rev = R.backward_reversible(*R.stack_forward(x, y, blocks), blocks, gx, gy)
    eps = 1e-6
    e = np.zeros_like(x)
    e[1, 2] = eps
    fd = (loss(x + e) - loss(x - e)) / (2 * eps)
    assert rev.grad_x[1, 2] == pytest.approx(fd, rel=1e-6)
