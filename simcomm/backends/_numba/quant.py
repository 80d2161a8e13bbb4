r"""Unbiased random quantizer kernels, numba (same names, signatures and results as the numpy backend).

See :mod:`simcomm.backends._numpy.quant` for the definitions. The uniforms come from the same
counter-based SplitMix64 stream keyed by the caller's ``key``, generated inside the loop (no uniform
array is materialised), and every kernel repeats the numpy arithmetic in float64 in the same order,
so the outputs are bit-identical given the same ``key`` and per-row scales. The loop runs over fixed
blocks of the flattened array in parallel, so a single long vector and a batch of rows both use every
core.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

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
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_BLOCK = 1 << 15  # elements per parallel chunk: large enough to amortise scheduling, fits in L2
_SERIAL_MAX = 1 << 17  # below this many elements the kernels run on one thread


@njit(inline="always")
def _mixed(z):
    # SplitMix64's output for the state z = key + (i + 1) * GAMMA (wrapping uint64 arithmetic)
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always")
def _uniform_at(z, shift, scale):
    # The uniform of the state z: SplitMix64's output keeping its top 64 - shift bits, shift 40 / scale
    # 2**-24 for float32 data, 11 / 2**-53 for float64. shift and scale are loop invariants (no branch in
    # the loop, so it vectorises). Loops advance z by GAMMA per element (a vector induction) rather than
    # multiplying: one 64-bit multiply fewer.
    return np.float64(_mixed(z) >> shift) * scale


@njit(inline="always")
def _state(key, i):
    # the SplitMix64 state just before output number i + 1 of the stream started at key
    return key + np.uint64(i) * _GAMMA


@njit(inline="always")
def _uniform(key, i, shift, scale):
    return _uniform_at(_state(key, i) + _GAMMA, shift, scale)


def _bits(dtype):
    """(shift, scale) of the uniforms for data of this dtype."""
    if np.dtype(dtype) == np.float32:
        return np.uint64(40), 5.9604644775390625e-08  # 2**-24
    return np.uint64(11), 1.1102230246251565e-16  # 2**-53


@njit(cache=True)
def _counter_uniforms(key, n, start, shift, scale):
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = _uniform(key, start + i, shift, scale)
    return out


def counter_uniforms(key: int, n: int, dtype=np.float64, start: int = 0) -> np.ndarray:
    """Uniforms of the counter stream ``key``; identical to the numpy backend's."""
    shift, scale = _bits(dtype)
    return _counter_uniforms(np.uint64(key), n, start, shift, scale).astype(dtype)


@njit(fastmath={"reassoc"})
def _sumsq(v):
    # Sum of squares of the 1-D contiguous v in float64. Only re-association is allowed ("reassoc", not the
    # full fastmath: NaN and inf still propagate), so the loop vectorises at memory speed; the order
    # of a reduction is not part of the backend contract (norms agree with numpy within rtol).
    acc = 0.0
    for j in range(v.size):
        w = np.float64(v[j])
        acc += w * w
    return acc


@njit(cache=True)
def _row_norms_serial(x):
    rows, d = x.shape
    out = np.empty(rows, np.float64)
    for r in range(rows):
        acc = 0.0
        for lo in range(0, d, _BLOCK):  # same blocking and order as the parallel kernel
            acc += _sumsq(x[r, lo : min(lo + _BLOCK, d)])
        out[r] = np.sqrt(acc)
    return out


def row_norms(x: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row, accumulated in float64 (agrees with numpy within rounding).

    One thread: the vectorised loop already runs at memory bandwidth, and on a loaded machine a
    parallel reduction measured 10-400x slower (threads waiting for a descheduled peer).
    """
    return _row_norms_serial(x)


@njit(cache=True)
def _row_max_keys(keys, mask):
    # The largest magnitude key (bits & mask, an unsigned integer monotone in |x|) of each row: one
    # vectorised integer max per row, one pass over x. A NaN or inf has a key >= the exponent mask.
    rows, d = keys.shape
    out = np.empty(rows, np.uint64)
    for r in range(rows):
        row = keys[r]
        top = row[0] & mask
        for j in range(d):
            top = max(top, row[j] & mask)
        out[r] = top
    return out


def row_absmax(x: np.ndarray) -> np.ndarray:
    """Infinity norm of each row as float64 (exact); ``nan`` for a row holding NaN or inf.

    One pass over ``x`` (one thread, like :func:`row_norms`): the largest key ``bits & ~sign`` of each row,
    read back as the float it is; a key at or above the exponent mask (NaN or inf) gives ``nan``.
    """
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    if x.dtype == np.float32:
        top = _row_max_keys(np.ascontiguousarray(x).view(np.uint32), np.uint32(0x7FFFFFFF))
        m = top.astype(np.uint32).view(np.float32).astype(np.float64)
        return np.where(top < 0x7F800000, m, np.nan)
    if x.dtype == np.float64:
        top = _row_max_keys(np.ascontiguousarray(x).view(np.uint64), np.uint64(0x7FFFFFFFFFFFFFFF))
        return np.where(top < np.uint64(0x7FF0000000000000), top.view(np.float64), np.nan)
    m = np.abs(x).max(axis=1).astype(np.float64)
    return np.where(np.isfinite(m), m, np.nan)


@njit(inline="always")
def _segment(xf, of, lo, hi, m, a, key, kind, shift, scale):
    # One row segment [lo, hi) of the flattened array with per-row scale m; branch-free inner loops
    # (kind, shift and scale are loop invariants, so each loop below vectorises). Elements are indexed
    # with the unsigned j: for a signed index numba adds a negative-index wraparound, and LLVM then
    # vectorised the loads and stores as gathers and scatters (the kernel ran 1.4x slower). z is the
    # counter stream's state for element i (see _uniform_at).
    safe = m if m > 0 else 1.0
    z = _state(key, lo)
    if kind == 0:
        inv = a / safe
        step = safe / a
        if m > 0:
            for i in range(lo, hi):
                j = np.uint64(i)
                z += _GAMMA
                v = np.float64(xf[j])
                t = abs(v) * inv
                fl = np.floor(t)
                q = (fl + np.float64(_uniform_at(z, shift, scale) < (t - fl))) * step
                of[j] = q if v >= 0 else -q  # = sign(v) * level * scale, as a select
        else:
            for i in range(lo, hi):
                of[np.uint64(i)] = 0.0
    elif kind == 1:
        for i in range(lo, hi):
            j = np.uint64(i)
            z += _GAMMA
            v = np.float64(xf[j])
            w = safe * np.float64(_uniform_at(z, shift, scale) < abs(v) / safe)
            of[j] = w if v >= 0 else 0.0 - w  # "0.0 - w": a dropped entry is +0.0, as in numpy
    elif kind == 4:
        # ternary on float32 data with a float32 scale: u = n 2^-24 (n < 2^24) and m have 24-bit significands,
        # so u m = n (m 2^-24) is exact in float64 and u < fl(|v| / m) holds exactly when u m < |v| (|v| is a
        # float32 too: a nonzero |v| - u m is at least 2^-29 u m, more than the rounding of |v| / m can hide).
        # The same draws as kind 1, without a division per element.
        ms = safe * scale
        for i in range(lo, hi):
            j = np.uint64(i)
            z += _GAMMA
            v = np.float64(xf[j])
            w = safe * np.float64(np.float64(_mixed(z) >> shift) * ms < abs(v))
            of[j] = w if v >= 0 else 0.0 - w
    elif kind == 2:
        for i in range(lo, hi):
            j = np.uint64(i)
            z += _GAMMA
            t = np.float64(xf[j]) / a
            fl = np.floor(t)
            of[j] = (fl + np.float64(_uniform_at(z, shift, scale) < (t - fl))) * a
    else:
        for i in range(lo, hi):
            j = np.uint64(i)
            z += _GAMMA
            v = np.float64(xf[j])
            of[j] = v / a if _uniform_at(z, shift, scale) < a else 0.0  # dropped: +0.0, as in numpy


@njit(inline="always")
def _block(xf, of, scales, a, key, kind, shift, scale, b, d, n):
    lo = b * _BLOCK
    hi = min(lo + _BLOCK, n)
    while lo < hi:  # split the block at row boundaries
        r = lo // d
        seg = min(hi, (r + 1) * d)
        _segment(xf, of, lo, seg, scales[r], a, key, kind, shift, scale)
        lo = seg


# kind: 0 qsgd (a = s), 1 ternary (4: its float32 form), 2 stochastic rounding (a = delta), 3 bernoulli (a = p)
@njit(cache=True, parallel=True)
def _quantize_parallel(x, scales, a, key, kind, shift, scale, out):
    rows, d = x.shape
    n = rows * d
    xf = x.reshape(n)
    of = out.reshape(n)
    for b in prange((n + _BLOCK - 1) // _BLOCK):
        _block(xf, of, scales, a, key, kind, shift, scale, b, d, n)
    return out


@njit(cache=True)
def _quantize_serial(x, scales, a, key, kind, shift, scale, out):
    rows, d = x.shape
    n = rows * d
    xf = x.reshape(n)
    of = out.reshape(n)
    for b in range((n + _BLOCK - 1) // _BLOCK):
        _block(xf, of, scales, a, key, kind, shift, scale, b, d, n)
    return out


def _quantize(x, scales, a, key, kind, shift, scale, out):
    # small batches (one optimiser step) run serially: a parallel launch costs more than the work
    if x.size <= _SERIAL_MAX:
        return _quantize_serial(x, scales, a, key, kind, shift, scale, out)
    return _quantize_parallel(x, scales, a, key, kind, shift, scale, out)






def qsgd_quantize(x, norms, s, key, out):
    """QSGD with ``s`` levels (see the numpy backend)."""
    return _quantize(x, norms, float(s), np.uint64(key), 0, *_bits(x.dtype), out)


def ternary_quantize(x, scales, key, out):
    """Ternary, inf-norm scaled (see the numpy backend).

    Float32 data with float32 scales (the row maxima :func:`row_absmax` returns) compare ``u m < |x|``
    instead of ``u < |x| / m``: exact there, so the same result without a division per element.
    """
    exact = x.dtype == np.float32 and bool(np.all(scales.astype(np.float32) == scales))
    return _quantize(x, scales, 1.0, np.uint64(key), 4 if exact else 1, *_bits(x.dtype), out)


def stochastic_round_quantize(x, delta, key, out):
    """Unbiased rounding to the grid delta*Z (see the numpy backend)."""
    return _quantize(x, np.ones(x.shape[0]), float(delta), np.uint64(key), 2, *_bits(x.dtype), out)


def bernoulli_quantize(x, p, key, out):
    """Bernoulli sparsification scaled by 1/p (see the numpy backend)."""
    return _quantize(x, np.ones(x.shape[0]), float(p), np.uint64(key), 3, *_bits(x.dtype), out)
