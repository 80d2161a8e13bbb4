"""Elementwise compressor kernels: numba (and cupy where present) against the numpy reference on shared keys,
and the casts against numpy's own float16 / a bit-level bfloat16 oracle."""

import numpy as np
import pytest

from simcomm.backends import available_backends, get_backend

OTHERS = [b for b in available_backends() if b != "numpy"]


def _x(dtype, rows=5, d=96, seed=0):
    g = np.random.default_rng(seed)
    x = g.standard_normal((rows, d)) * np.exp(3 * g.standard_normal((rows, 1)))
    x[0, :4] = 0.0  # zeros and a constant bucket
    x[1, :12] = 1.5
    return np.ascontiguousarray(x.astype(dtype))


@pytest.mark.parametrize("backend", OTHERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_kernels_equal_numpy(backend, dtype):
    npb, be = get_backend("numpy"), get_backend(backend)
    x = _x(dtype)
    for name, args in [("natural_quantize", (123,)), ("minmax_quantize", (12, True, 77)),
                       ("minmax_quantize", (12, False, 0)), ("int8_block_quantize", (24,))]:
        ref, got = np.empty_like(x), np.empty_like(x)
        getattr(npb, name)(x, *args, ref)
        getattr(be, name)(x, *args, got)  # writes into got (minmax_quantize returns whether x is finite)
        np.testing.assert_array_equal(np.asarray(got), ref, err_msg=name)
    for mode in (0, 1, 2):  # the scale is a row reduction: within rounding; the signs exactly
        ref, got = np.empty_like(x), np.empty_like(x)
        a_ref = npb.sign_quantize(x, mode, ref)
        a = be.sign_quantize(x, mode, got)
        np.testing.assert_allclose(np.asarray(a), a_ref, rtol=1e-12)
        np.testing.assert_array_equal(np.sign(got), np.sign(ref))


@pytest.mark.parametrize("backend", ["numpy", *OTHERS])
def test_bf16_round_is_nearest_even_with_overflow(backend):
    be = get_backend(backend)
    x = np.array([[1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 3.3895e38, np.finfo(np.float32).max, 1e-40]],
                 dtype=np.float32)
    out = np.empty_like(x)
    be.bf16_round(x, out)
    # oracle in float64: the two bfloat16 neighbours of |x| are multiples of ulp = 2^(e - 7) (7 stored
    # mantissa bits; e = floor(log2|x|), at least -126 for subnormals); nearest, ties to an even multiple;
    # a neighbour of 2^128 or more is infinity (IEEE overflow)
    m = np.abs(x.astype(np.float64))
    _, ex = np.frexp(m)
    ulp = np.ldexp(1.0, np.maximum(ex - 1, -126) - 7)
    down = np.floor(m / ulp) * ulp
    up = down + ulp
    tie_up = (m - down == up - m) & (np.floor(m / ulp) % 2 == 1)
    r = np.where((up - m < m - down) | tie_up, up, down)
    want = np.where(r >= 2.0**128, np.inf, r).astype(np.float32) * np.sign(x)
    np.testing.assert_array_equal(out, want)
    assert np.isinf(out[0, 5]) and not np.isinf(out[0, 4])  # float32 max rounds up past bfloat16's max


def test_fp16_cast_overflows_to_inf_at_65520():
    from simcomm.compress import FP16

    got = FP16().apply(np.array([65504.0, 65519.0, 65520.0, -1e5, 2.0**-25, 2.0**-24 * 1.5]), rng=0)
    assert got.tolist()[:4] == [65504.0, 65504.0, np.inf, -np.inf]
    assert got[4] == 0.0 and got[5] == 2.0**-23  # ties to even: 2^-25 -> 0, 1.5 * 2^-24 -> 2^-23
