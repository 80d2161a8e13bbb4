r"""Quantizer kernels on the GPU: one fused pass each, the numpy reference's values bit for bit.

The SplitMix64 counter stream (see :mod:`simcomm.backends._numpy.quant`) is evaluated in registers
from each element's flat index and the host-drawn ``key``; the float64 arithmetic repeats the
reference's operations in order with no fused multiply-add (:mod:`._src`), so the quantized arrays
equal numpy's bit for bit. Row norms are reductions and agree within rounding.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import ROWS_PER_LAUNCH, as_rows, col_blocks, grid_1d, like_input
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

# the two per-row quotients of QSGD, s / safe and safe / s, as the reference computes them
_QSGD_FACTORS = cp.ElementwiseKernel("float64 nrm, float64 s", "float64 a, float64 b",
                                     "double safe = nrm > 0.0 ? nrm : 1.0; a = s / safe; b = safe / s;",
                                     "simcomm_qsgd_factors", options=("--fmad=false",))


def counter_uniforms(key: int, n: int, dtype=np.float64, start: int = 0):
    """Device uniforms ``u_start .. u_{start+n-1}`` of the counter stream ``key`` (numpy's values)."""
    idx = cp.arange(start, start + n, dtype=cp.uint64)
    bits = 24 if np.dtype(dtype) == np.float32 else 53
    u = _SPLITMIX(idx, cp.uint64(key), cp.int32(bits))
    return u.astype(cp.float32) if bits == 24 else u


def _row_reduce(xd, op: int):
    """Per-row reduction in two deterministic passes: fixed-order block partials, then each row's partials."""
    rows, d = xd.shape
    out = cp.zeros(rows, dtype=cp.float64)
    if not (rows and d):
        return out
    nb = col_blocks(d, rows)
    chunk = -(-d // nb)
    part = cp.empty((rows, nb), dtype=cp.float64)
    k = kernel("row_partial", xd.dtype)
    for r0 in range(0, rows, ROWS_PER_LAUNCH):
        r1 = min(rows, r0 + ROWS_PER_LAUNCH)
        k((nb, r1 - r0), (256,), (xd[r0:r1], np.int64(d), np.int64(chunk), np.int32(op), part[r0:r1]))
    kernel("row_final")((-(-rows // 256),), (256,), (part, np.int64(nb), np.int32(op), np.int64(rows), out))
    return out


def row_norms(x):
    """Euclidean norm of each row, accumulated in float64 (one read of ``x``; the same bits on every call)."""
    return like_input(_row_reduce(as_rows(x), 0), x)


def row_absmax(x):
    """Infinity norm of each row as float64 (exact); NaN for a row holding NaN or inf."""
    return like_input(_row_reduce(as_rows(x), 1), x)


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


def _dims(xd):
    d = max(1, xd.shape[1])
    return np.int64(d), np.float64(1.0 / d), np.int64(xd.size)


def qsgd_quantize(x, norms, s: int, key: int, out):
    """QSGD with ``s`` levels (see the numpy reference for the formula); writes ``out`` and returns it."""
    nrm = _row_vec(norms)
    fa, fb = _QSGD_FACTORS(nrm, float(s))
    return _run("qsgd", x, out, lambda xd: (nrm, fa, fb, *_dims(xd), np.uint64(key)))


def ternary_quantize(x, scales, key: int, out):
    """Ternary quantizer with scale ``||x||_inf`` per row."""
    return _run("ternary", x, out, lambda xd: (_row_vec(scales), *_dims(xd), np.uint64(key)))


def stochastic_round_quantize(x, delta: float, key: int, out):
    """Unbiased rounding to the grid delta*Z."""
    return _run("sround", x, out, lambda xd: (np.int64(xd.size), np.float64(delta), np.uint64(key)))


def bernoulli_quantize(x, p: float, key: int, out):
    """Bernoulli sparsification scaled by 1/p."""
    return _run("bernoulli", x, out, lambda xd: (np.int64(xd.size), np.float64(p), np.uint64(key)))
