"""FP16 and min-max uint8 (issue 40): one fused pass, ``out=`` buffers, the same one-line error on NaN/inf.

The references here are straightforward numpy written out in the test (numpy's own float16 cast; the
min-max formula on the counter uniforms of :mod:`simcomm.backends._numpy.quant`), independent of the
backends' kernels. Finiteness is reported by the kernel's own pass (the cast's magnitude maximum, the
bucket min/max pass), so the error tests put the bad value first, inside and last in a bucket.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import use
from simcomm.backends._numpy.quant import counter_uniforms
from simcomm.compress import FP16, MinMaxUint8
from simcomm.compress._quantize import _key

BACKENDS = ["numpy", "numba"]


def _x(dtype, shape=(6, 240), seed=0):
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape) * np.exp(3 * g.standard_normal(shape[:-1] + (1,)))
    x[0, :12] = 0.75  # a constant bucket
    return np.ascontiguousarray(x.astype(dtype))


def naive_minmax(x, bucket, key, stochastic=True):
    """min + code * step per bucket, code = floor(t) + [u < frac(t)] (or floor(t + 1/2)); t = (x - min)/step."""
    rows, d = x.shape
    x3 = x.astype(np.float64).reshape(rows, d // bucket, bucket)
    out = np.empty_like(x3)
    u = counter_uniforms(key, x.size, x.dtype).reshape(x3.shape).astype(np.float64)
    for r in range(rows):
        for b in range(d // bucket):
            v = x3[r, b]
            lo, hi = v.min(), v.max()
            step = (hi - lo) / 255.0
            if step == 0:
                out[r, b] = v
                continue
            t = (v - lo) / step
            code = np.floor(t) + (u[r, b] < t - np.floor(t)) if stochastic else np.floor(t + 0.5)
            out[r, b] = lo + np.minimum(code, 255.0) * step
    return out.reshape(rows, d).astype(x.dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fp16_matches_numpy_cast_with_and_without_out(backend, dtype):
    x = _x(dtype)
    x[1, :3] = [65519.0, 65520.0, 1e-7]  # below / at the overflow threshold, a half subnormal
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(dtype)
    buf = np.full_like(x, np.nan)
    with use(backend):
        got = FP16().apply(x)
        got_out = FP16().apply(x, out=buf)
        inplace = x.copy()
        got_in = FP16().apply(inplace, out=inplace)
    assert got.tobytes() == want.tobytes()
    assert got_out is buf and buf.tobytes() == want.tobytes()
    assert got_in is inplace and inplace.tobytes() == want.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stochastic", [True, False])
def test_minmax_matches_naive_with_and_without_out(backend, dtype, stochastic):
    x = _x(dtype)
    c = MinMaxUint8(12, stochastic=stochastic)
    want = naive_minmax(x, 12, _key(3, "minmax_uint8") if stochastic else 0, stochastic)
    buf = np.empty_like(x)
    with use(backend):
        got = c.apply(x, rng=3)
        got_out = c.apply(x, rng=3, out=buf)
        inplace = x.copy()
        got_in = c.apply(inplace, rng=3, out=inplace)
    np.testing.assert_array_equal(got, want)
    assert got_out is buf and buf.tobytes() == got.tobytes()
    assert got_in is inplace and inplace.tobytes() == got.tobytes()
    assert c.apply(x[0], rng=3, out=np.empty(240, dtype)).shape == (240,)  # one vector


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0), (2, 17), (5, 239)])  # first, inside and last of a bucket
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_minmax_nonfinite_same_one_line_error(backend, bad, where, dtype):
    x = _x(dtype)
    x[where] = bad
    with use(backend), pytest.raises(UserError) as err:
        MinMaxUint8(12).apply(x, rng=0, out=np.empty_like(x))
    assert str(err.value) == "minmax_uint8: x contains NaN or inf; quantize finite vectors only"
    with use(backend), pytest.raises(UserError, match="^minmax_uint8: x contains NaN or inf"):
        MinMaxUint8(0, stochastic=False).apply(x, rng=0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", [lambda: FP16(), lambda: MinMaxUint8(12)])
def test_out_refused_wrong_shape_dtype_layout_or_offset_overlap(backend, make):
    c = make()
    x = _x(np.float32)
    bad_bufs = [np.empty((6, 239), np.float32), np.empty((6, 240), np.float64),
                np.empty((240, 6), np.float32).T]
    with use(backend):
        for buf in bad_bufs:
            with pytest.raises(UserError, match="^out must be a C-contiguous float32 array of shape"):
                c.apply(x, rng=0, out=buf)
        big = np.zeros(6 * 240 + 4, np.float32)
        big[:6 * 240] = x.reshape(-1)
        xv, shifted = big[:6 * 240].reshape(6, 240), big[4:].reshape(6, 240)
        with pytest.raises(UserError, match="^out overlaps x at an offset"):
            c.apply(xv, rng=0, out=shifted)


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_minmax_nonfinite_on_the_parallel_path(bad):
    """Batches above the serial threshold run one bucket per task; the count of bad buckets is a reduction."""
    x = np.random.default_rng(4).standard_normal((64, 4096), dtype=np.float32)  # 262,144 > 2**17 entries
    assert np.array_equal(MinMaxUint8(256).apply(x, rng=1), naive_minmax(x, 256, _key(1, "minmax_uint8")))
    x[63, 4095] = bad
    with pytest.raises(UserError, match="^minmax_uint8: x contains NaN or inf; quantize finite vectors only$"):
        MinMaxUint8(256).apply(x, rng=1)
