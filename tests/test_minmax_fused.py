"""The faster numba min-max uint8 kernel (issue 40) gives exactly the old kernel's bits.

The kernel now reads each bucket through 1-D slices, finds the bucket's min and max four lanes at a
time (falling back to the serial order when an extreme is zero, where the order decides the sign of the
zero) and advances the counter stream by one addition per coordinate. :func:`_old_minmax` below is the
kernel as it was before (commit 7cb20c0), kept here as the reference: the outputs must be the same bytes,
on finite data and on NaN / inf / signed-zero data alike (the kernel's contract, whatever the caller checks).
(The sign of a zero min or max does not reach the output as far as these cases show: ``lo + code * step``
and ``x - lo`` add zeros of opposite sign to +0.0; the kernel keeps the serial order's zero regardless.)
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from numba import njit

from simcomm.backends import get_backend
from simcomm.backends._numba.quant import _bits, _uniform
from simcomm.compress import MinMaxUint8

NB = get_backend("numba")


@njit(cache=True)
def _old_minmax(x, bucket, stochastic, key, shift, scale, out):
    rows, d = x.shape
    nb = d // bucket
    for rb in range(rows * nb):
        r = rb // nb
        j0 = (rb % nb) * bucket
        lo = np.float64(x[r, j0])
        hi = lo
        for j in range(j0, j0 + bucket):
            v = np.float64(x[r, j])
            lo = min(lo, v)
            hi = max(hi, v)
        step = (hi - lo) / 255.0
        if not step > 0:
            for j in range(j0, j0 + bucket):
                out[r, j] = x[r, j]
            continue
        for j in range(j0, j0 + bucket):
            t = (np.float64(x[r, j]) - lo) / step
            if stochastic:
                f = math.floor(t)
                code = f + (1.0 if _uniform(key, r * d + j, shift, scale) < (t - f) else 0.0)
            else:
                code = math.floor(t + 0.5)
            out[r, j] = lo + min(code, 255.0) * step


def _old(x, bucket, stochastic, key):
    out = np.empty_like(x)
    shift, scale = _bits(x.dtype)
    _old_minmax(x, bucket, stochastic, np.uint64(key), shift, scale, out)
    return out


def _data(dtype, rows, d, seed, kind):
    g = np.random.default_rng(seed)
    x = g.standard_normal((rows, d)) * np.exp(3 * g.standard_normal((rows, 1)))
    if kind == "zeros":  # buckets whose min or max is a zero of either sign, in every order
        x = np.where(g.random(x.shape) < 0.5, np.abs(x), -np.abs(x))
        x[g.random(x.shape) < 0.3] = 0.0
        x[g.random(x.shape) < 0.3] = -0.0
    elif kind == "signed_zeros":  # min (rows 0-2) or max (rows 3-5) is a zero, +0.0 and -0.0 both present
        x = np.abs(x)
        x[3:] *= -1.0
        z = g.random(x.shape)
        x[z < 0.2] = 0.0
        x[z > 0.8] = -0.0
    elif kind == "constant":
        x[:, : d // 2] = 1.25
        x[0, :] = -0.0
    elif kind == "nonfinite":
        for v, p in ((np.nan, 0.01), (np.inf, 0.01), (-np.inf, 0.01)):
            x[g.random(x.shape) < p] = v
        x[0, 0] = np.nan  # a NaN first in its bucket
    return np.ascontiguousarray(x.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["normal", "zeros", "signed_zeros", "constant", "nonfinite"])
@pytest.mark.parametrize("bucket", [1, 3, 4, 5, 12, 60, 240])
@pytest.mark.parametrize("stochastic", [True, False])
def test_minmax_kernel_is_bitwise_the_old_one(dtype, kind, bucket, stochastic):
    if kind == "nonfinite" and numba.config.DISABLE_JIT:
        pytest.skip("as Python, math.floor(nan) raises in both kernels (compiled, it is the float the test compares)")
    x = _data(dtype, 6, 240, bucket * 7 + len(kind), kind)
    key = 0xDEADBEEF12345 if stochastic else 0
    ref = _old(x, bucket, stochastic, key)
    got = np.empty_like(x)
    with np.errstate(invalid="ignore"):
        NB.minmax_quantize(x, bucket, stochastic, key, got)
    assert got.tobytes() == ref.tobytes()


def test_minmax_kernel_large_batch_and_compressor():
    x = np.random.default_rng(3).standard_normal((64, 10_000), dtype=np.float32)
    for stochastic in (True, False):
        ref = _old(x, 1000, stochastic, 99)
        got = np.empty_like(x)
        NB.minmax_quantize(x, 1000, stochastic, 99, got)
        assert got.tobytes() == ref.tobytes()
    # through the compressor: the key drawn from rng=5 as before
    from simcomm.compress._quantize import _key

    y = MinMaxUint8(1000).apply(x, rng=5)
    assert y.tobytes() == _old(x, 1000, True, _key(5, "minmax_uint8")).tobytes()
