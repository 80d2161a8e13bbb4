"""Fixtures: backends available here, a seeded generator, shared tolerances."""

import numpy as np
import pytest

from simcomm.backends import available_backends

RTOL_F64 = 1e-12
RTOL_F32 = 1e-5
N_SIGMA = 5  # known-variance (z) tests: a true hypothesis fails with probability < 6e-7 per comparison;
# with a standard error estimated from m replicates use scipy.stats.t.ppf(1 - 3e-7, m - 1) instead


@pytest.fixture(params=["numpy", "numba", "cupy"])
def backend(request):
    """Every backend that can run here; the others skip with the reason."""
    if request.param not in available_backends():
        pytest.skip(f"backend {request.param} is not available on this machine (needs its package/device)")
    from simcomm.backends import get_backend

    return get_backend(request.param)


@pytest.fixture
def rng():
    """A generator with a fixed literal seed, so failures reproduce."""
    return np.random.default_rng(20261130)
