r"""Quantizer kernels on the GPU: one fused pass each, the numpy reference's values bit for bit.

The SplitMix64 counter stream (see :mod:`simcomm.backends._numpy.quant`) is evaluated in registers
from each element's flat index and the host-drawn ``key``; the float64 arithmetic repeats the
reference's operations in order with no fused multiply-add (:mod:`._src`), so the quantized arrays
equal numpy's bit for bit. Row norms are reductions and agree within rounding.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import as_rows, grid_1d, like_input
from simcomm.backends._cupy._src import kernel

__all__ = [
    "counter_uniforms",
    "row_norms",
    "row_absmax",
    "qsgd_quantize",
    "ternary_quantize",
    "stochastic_round_quantize",
    "bernoulli_quantize",
]

_SPLITMIX = cp.ElementwiseKernel(
    "uint64 idx, uint64 key, int32 bits", "float64 u",
    """
    unsigned long long z = key + (idx + 1ULL) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    u = (bits == 24) ? (double)(z >> 40) * 5.9604644775390625e-08 : (double)(z >> 11) * 1.1102230246251565e-16;
    """,
    "simcomm_splitmix_uniform",
)

_SUMSQ = cp.ReductionKernel("T x", "float64 y", "(double)x * (double)x", "a + b", "y = sqrt(a)", "0",
                            "simcomm_row_norm")
# max of |x| that propagates NaN (fmax would drop it); inf and NaN rows become NaN as in the reference
_ABSMAX = cp.ReductionKernel("T x", "float64 y", "fabs((double)x)", "(a != a || a > b) ? a : b",
                             "y = isfinite(a) ? a : __longlong_as_double(0x7ff8000000000000LL)", "0",
                             "simcomm_row_absmax")


def counter_uniforms(key: int, n: int, dtype=np.float64, start: int = 0):
    """Device uniforms ``u_start .. u_{start+n-1}`` of the counter stream ``key`` (numpy's values)."""
    idx = cp.arange(start, start + n, dtype=cp.uint64)
    bits = 24 if np.dtype(dtype) == np.float32 else 53
    u = _SPLITMIX(idx, cp.uint64(key), cp.int32(bits))
    return u.astype(cp.float32) if bits == 24 else u


def row_norms(x):
    """Euclidean norm of each row, accumulated in float64 (one read of ``x``)."""
    xd = as_rows(x)
    res = _SUMSQ(xd, axis=1) if xd.shape[1] else cp.zeros(xd.shape[0])
    return like_input(res, x)


def row_absmax(x):
    """Infinity norm of each row as float64 (exact); NaN for a row holding NaN or inf."""
    xd = as_rows(x)
    res = _ABSMAX(xd, axis=1) if xd.shape[1] else cp.zeros(xd.shape[0])
    return like_input(res, x)


def _run(name, x, out, args):
    """Launch quantizer ``name`` on ``x`` into ``out``; ``args(xd)`` gives the arguments between ``x`` and ``out``."""
    xd = as_rows(x)
    res = out if isinstance(out, cp.ndarray) and out.flags.c_contiguous and out.dtype == xd.dtype else cp.empty_like(xd)
    if xd.size:
        kernel(name, xd.dtype)(*grid_1d(xd.size), (xd, *args(xd), res))
    if res is not out:
        if isinstance(out, cp.ndarray):
            out[...] = res.reshape(out.shape)
        else:
            out[...] = cp.asnumpy(res).reshape(out.shape)
    return out


def _row_vec(v):
    return cp.ascontiguousarray(cp.asarray(v, dtype=cp.float64))


def qsgd_quantize(x, norms, s: int, key: int, out):
    """QSGD with ``s`` levels (see the numpy reference for the formula); writes ``out`` and returns it."""
    return _run("qsgd", x, out, lambda xd: (_row_vec(norms), np.int64(xd.shape[1]), np.int64(xd.size),
                                            np.float64(s), np.uint64(key)))


def ternary_quantize(x, scales, key: int, out):
    """Ternary quantizer with scale ``||x||_inf`` per row."""
    return _run("ternary", x, out, lambda xd: (_row_vec(scales), np.int64(xd.shape[1]), np.int64(xd.size),
                                               np.uint64(key)))


def stochastic_round_quantize(x, delta: float, key: int, out):
    """Unbiased rounding to the grid delta*Z."""
    return _run("sround", x, out, lambda xd: (np.int64(xd.size), np.float64(delta), np.uint64(key)))


def bernoulli_quantize(x, p: float, key: int, out):
    """Bernoulli sparsification scaled by 1/p."""
    return _run("bernoulli", x, out, lambda xd: (np.int64(xd.size), np.float64(p), np.uint64(key)))
