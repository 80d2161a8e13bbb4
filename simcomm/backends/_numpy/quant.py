r"""Unbiased random quantizer kernels, numpy reference (readable specification).

Every kernel works on a C-contiguous 2-D array ``x`` of shape ``(rows, d)`` (one message per row) and
takes the randomness as a 64-bit ``key`` drawn by the caller from its ``numpy.random.Generator``.
Coordinate ``i`` of the flattened array gets the uniform

.. math::  u_i = \operatorname{top}_b\bigl(\mathrm{mix}(\mathrm{key} + (i + 1)\,\gamma)\bigr)\,2^{-b},

where ``mix`` is the SplitMix64 finaliser, :math:`\gamma` = 0x9E3779B97F4A7C15 and ``b`` = 24 bits
for float32 data, 53 bits for float64 (so ``u`` is exactly representable in the data's dtype). This is
the SplitMix64 output stream started at ``key`` (a counter-based generator): the noise does not depend
on ``x``, the numpy and numba backends produce the same uniforms bit for bit, and a kernel never
materialises a uniform array (the memory traffic of a quantizer is then ``x`` in and ``Q(x)`` out).
:func:`counter_uniforms` materialises them for tests and oracles.

The arithmetic of each kernel is written out in float64 in a fixed order, and the numba kernels repeat
it operation for operation, so given the same ``key`` and the same per-row scales both backends return
identical arrays. Row norms (a reduction) are computed by :func:`row_norms` / :func:`row_absmax`; they
agree across backends within rounding (``row_absmax`` exactly).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "counter_uniforms",
    "row_norms",
    "row_absmax",
    "qsgd_quantize",
    "ternary_quantize",
    "stochastic_round_quantize",
    "bernoulli_quantize",
]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def counter_uniforms(key: int, n: int, dtype=np.float64, start: int = 0) -> np.ndarray:
    """Uniforms ``u_start, ..., u_{start+n-1}`` of the counter stream ``key`` (see module docstring).

    Examples
    --------
    >>> u = counter_uniforms(7, 5, np.float32)
    >>> bool(((u >= 0) & (u < 1)).all()), u.dtype
    (True, dtype('float32'))
    """
    idx = np.arange(start + 1, start + n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(key) + idx * _GAMMA  # uint64 arithmetic wraps modulo 2**64 by design
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    if np.dtype(dtype) == np.float32:
        return ((z >> np.uint64(40)).astype(np.float64) * 2.0**-24).astype(np.float32)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _u(key: int, x: np.ndarray) -> np.ndarray:
    return counter_uniforms(key, x.size, x.dtype).reshape(x.shape).astype(np.float64)


def row_norms(x: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row, accumulated in float64; returns float64 of shape ``(rows,)``."""
    x64 = np.asarray(x, dtype=np.float64)
    return np.sqrt(np.einsum("ij,ij->i", x64, x64))


def row_absmax(x: np.ndarray) -> np.ndarray:
    """Infinity norm of each row as float64, shape ``(rows,)``.

    Exact, so backends agree bitwise; ``nan`` for a row holding NaN or inf.
    """
    if not x.shape[1]:
        return np.zeros(x.shape[0])
    m = np.abs(x).max(axis=1).astype(np.float64)
    return np.where(np.isfinite(m), m, np.nan)


def qsgd_quantize(x: np.ndarray, norms: np.ndarray, s: int, key: int, out: np.ndarray) -> np.ndarray:
    r"""QSGD with ``s`` levels.

    :math:`Q_i = \|x\|\,\mathrm{sign}(x_i)\,\ell_i/s`, :math:`\ell_i` = floor or ceil of :math:`s|x_i|/\|x\|`.

    ``norms`` are the row 2-norms (float64). Rows with norm 0 map to 0. Writes into ``out`` and returns it.
    """
    x64 = np.asarray(x, dtype=np.float64)
    nrm = norms[:, None]
    safe = np.where(nrm > 0, nrm, 1.0)
    r = np.abs(x64) * (float(s) / safe)
    lo = np.floor(r)
    level = lo + (_u(key, x) < (r - lo))  # P(ceil) = fractional part: unbiased
    q = np.sign(x64) * level * (safe / float(s))
    out[...] = np.where(nrm > 0, q, 0.0)
    return out


def ternary_quantize(x: np.ndarray, scales: np.ndarray, key: int, out: np.ndarray) -> np.ndarray:
    r"""Ternary (TernGrad-type) quantization.

    :math:`Q_i = m\,\mathrm{sign}(x_i)\,\xi_i`, :math:`\xi_i\sim\mathrm{Bern}(|x_i|/m)`, :math:`m=\|x\|_\infty`.
    """
    x64 = np.asarray(x, dtype=np.float64)
    m = scales[:, None]
    safe = np.where(m > 0, m, 1.0)
    keep = _u(key, x) < np.abs(x64) / safe
    out[...] = np.where(keep, np.sign(x64) * safe, 0.0)
    return out


def stochastic_round_quantize(x: np.ndarray, delta: float, key: int, out: np.ndarray) -> np.ndarray:
    r"""Unbiased rounding to the grid :math:`\delta\mathbb{Z}`: up with probability equal to the fractional part."""
    t = np.asarray(x, dtype=np.float64) / float(delta)
    lo = np.floor(t)
    out[...] = (lo + (_u(key, x) < (t - lo))) * float(delta)
    return out


def bernoulli_quantize(x: np.ndarray, p: float, key: int, out: np.ndarray) -> np.ndarray:
    r"""Bernoulli sparsification: keep :math:`x_i/p` with probability ``p``, else 0."""
    x64 = np.asarray(x, dtype=np.float64)
    out[...] = np.where(_u(key, x) < float(p), x64 / float(p), 0.0)
    return out
