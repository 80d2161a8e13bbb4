r"""Quantizer kernels on the GPU: the numpy reference's counter-based uniforms and arithmetic.

The SplitMix64 counter stream (see :mod:`simcomm.backends._numpy.quant`) is evaluated elementwise
on the device from the host-drawn ``key``, so no uniform array crosses the bus and the values equal
numpy's bit for bit.
"""

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import like_input, to_device

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


def counter_uniforms(key: int, n: int, dtype=np.float64, start: int = 0):
    """Device uniforms ``u_start .. u_{start+n-1}`` of the counter stream ``key`` (numpy's values)."""
    idx = cp.arange(start, start + n, dtype=cp.uint64)
    bits = 24 if np.dtype(dtype) == np.float32 else 53
    u = _SPLITMIX(idx, cp.uint64(key), cp.int32(bits))
    return u.astype(cp.float32) if bits == 24 else u


def _u(key: int, x):
    return counter_uniforms(key, x.size, x.dtype).reshape(x.shape).astype(cp.float64)


def row_norms(x):
    """Euclidean norm of each row, accumulated in float64."""
    (xd,) = to_device(x)
    x64 = xd.astype(cp.float64)
    return like_input(cp.sqrt((x64 * x64).sum(axis=1)), x)


def row_absmax(x):
    """Infinity norm of each row as float64 (exact)."""
    (xd,) = to_device(x)
    res = cp.abs(xd).max(axis=1).astype(cp.float64) if xd.shape[1] else cp.zeros(xd.shape[0])
    return like_input(res, x)


def _finish(q, out):
    if isinstance(out, np.ndarray):
        out[...] = cp.asnumpy(q)
        return out
    out[...] = q
    return out


def qsgd_quantize(x, norms, s: int, key: int, out):
    """QSGD with ``s`` levels (see the numpy reference for the formula)."""
    xd, nd = to_device(x, norms)
    x64 = xd.astype(cp.float64)
    nrm = nd[:, None]
    safe = cp.where(nrm > 0, nrm, 1.0)
    r = cp.abs(x64) * (float(s) / safe)
    lo = cp.floor(r)
    level = lo + (_u(key, xd) < (r - lo))
    q = cp.sign(x64) * level * (safe / float(s))
    return _finish(cp.where(nrm > 0, q, 0.0), out)


def ternary_quantize(x, scales, key: int, out):
    """Ternary quantizer with scale ``||x||_inf`` per row."""
    xd, sd = to_device(x, scales)
    x64 = xd.astype(cp.float64)
    m = sd[:, None]
    safe = cp.where(m > 0, m, 1.0)
    keep = _u(key, xd) < cp.abs(x64) / safe
    return _finish(cp.where(keep, cp.sign(x64) * safe, 0.0), out)


def stochastic_round_quantize(x, delta: float, key: int, out):
    """Unbiased rounding to the grid delta*Z."""
    (xd,) = to_device(x)
    t = xd.astype(cp.float64) / float(delta)
    lo = cp.floor(t)
    return _finish((lo + (_u(key, xd) < (t - lo))) * float(delta), out)


def bernoulli_quantize(x, p: float, key: int, out):
    """Bernoulli sparsification scaled by 1/p."""
    (xd,) = to_device(x)
    x64 = xd.astype(cp.float64)
    return _finish(cp.where(_u(key, xd) < float(p), x64 / float(p), 0.0), out)
