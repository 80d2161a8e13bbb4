"""Compressed IAG against an explicit-table oracle; convergence; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from simcomm import UserError
from simcomm.compress import QSGD, Identity, Ternary
from simcomm.models import quadratic
from simcomm.optim import compressed_iag
from tests.naive_quantize import iag_naive


@pytest.mark.parametrize("order", ["cyclic", "random"])
def test_matches_oracle(order):
    p = quadratic(4, 6, L=1.0, mu=0.3, sigma2=2.0, rotate=True, rng=12345)
    q = QSGD(3)
    tr = compressed_iag(p, q, lr=0.1, steps=40, order=order, rng=np.random.default_rng(12345), backend="numpy")
    hist = iag_naive(p, q, 0.1, 40, order, np.random.default_rng(12345))
    np.testing.assert_allclose(tr.dist2[0], ((hist - p.x_star) ** 2).sum(axis=1), rtol=1e-10, atol=1e-14)


def test_exact_gradients_converge_linearly_despite_heterogeneity():
    # IAG with exact gradients converges to x* itself (no floor): aggregated gradient is exact at x*
    p = quadratic(5, 10, L=1.0, mu=0.5, sigma2=5.0, rng=12345)
    tr = compressed_iag(p, Identity(), lr=0.1, steps=2000, order="cyclic", record_every=100)
    assert tr.dist2[0, -1] < 1e-20 + 1e-12 * tr.dist2[0, 0]


def test_bits_count_one_message_per_step():
    p = quadratic(3, 10, rng=12345)
    q = Ternary()
    tr = compressed_iag(p, q, lr=0.1, steps=7, rng=0)
    np.testing.assert_array_equal(tr.bits, (3 + np.arange(8)) * q.bits(10))


def test_bad_order():
    with pytest.raises(UserError, match="cyclic"):
        compressed_iag(quadratic(2, 3, rng=0), Identity(), lr=0.1, steps=5, order="shuffled")
