r"""Elementwise compressor kernels, numba (same names, signatures and results as the numpy backend).

See :mod:`simcomm.backends._numpy.elem` for the definitions. One pass over each row (two where a row
or bucket statistic is needed first), rows in parallel (``prange``); the uniforms of the counter stream
are generated in the loop, never materialised. Elementwise arithmetic repeats the reference's float64
operations, so the outputs equal numpy's given the same per-row scales; the row sums behind the l1/l2
sign scales are reductions and agree within rounding.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from simcomm.backends._numba.quant import _GAMMA, _SERIAL_MAX, _bits, _state, _uniform, _uniform_at

__all__ = ["sign_quantize", "bf16_round", "fp16_round", "natural_quantize", "minmax_quantize", "int8_block_quantize",
           "dither_quantize"]


@njit(parallel=True, cache=True)
def _sign(x, mode, out, a):
    rows, d = x.shape
    for r in prange(rows):
        if mode == 0:
            s = 1.0
        elif mode == 1:
            acc = 0.0
            for j in range(d):
                acc += abs(np.float64(x[r, j]))
            s = acc / d
        else:
            acc = 0.0
            for j in range(d):
                w = np.float64(x[r, j])
                acc += w * w
            s = math.sqrt(acc) / math.sqrt(d)
        a[r] = s
        for j in range(d):
            out[r, j] = s if x[r, j] >= 0 else -s


def sign_quantize(x, mode: int, out):
    """Scaled sign (see the numpy backend); returns the per-row scales."""
    a = np.empty(x.shape[0])
    _sign(x, int(mode), out, a)
    return a


@njit(parallel=True, cache=True)
def _bf16(u, o):
    rows, d = u.shape
    for r in prange(rows):
        for j in range(d):
            v = np.uint64(u[r, j])
            o[r, j] = np.uint32(((v + np.uint64(0x7FFF) + ((v >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16))
                                << np.uint64(16))


def bf16_round(x, out):
    """Round float32 ``x`` to bfloat16 (nearest even; overflow to inf), held as float32."""
    _bf16(x.view(np.uint32), out.view(np.uint32))
    return out


# IEEE half precision held in float32 / float64: round the magnitude's bits to 10 mantissa bits (nearest,
# ties to even: add half an ulp minus one plus the kept lowest bit, then clear the dropped bits; a carry
# moves into the exponent as it should), overflow to inf at 65520 and above; below 2^-14 (half subnormals)
# the value is rint(|x| 2^24) 2^-24, exact in the input's precision. Both results are computed for every
# entry and one is selected (no branch, so the loop vectorises over the bit patterns); the one pass that
# reads every entry also returns the largest magnitude's bits: the finiteness check, at no extra pass.
@njit(cache=True)
def _fp16_f32(xu, ou):
    top = np.uint32(0)
    for i in range(xu.shape[0]):
        b = xu[i]
        ab = np.uint32(b & np.uint32(0x7FFFFFFF))
        top = max(top, ab)
        af = np.uint32(ab).view(np.float32)
        sub = np.float32(np.rint(af * np.float32(16777216.0)) * np.float32(5.9604644775390625e-08)).view(np.uint32)
        r = np.uint32((ab + np.uint32(0xFFF) + ((ab >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000))
        r = np.uint32(0x7F800000) if r >= np.uint32(0x47800000) else r  # 65536 or more: inf
        r = sub if ab < np.uint32(0x38800000) else r  # |x| < 2^-14
        ou[i] = np.uint32(r | (b & np.uint32(0x80000000)))  # (inf and NaN input are reported by the caller)
    return top


@njit(cache=True)
def _fp16_f64(xu, ou):
    top = np.uint64(0)
    for i in range(xu.shape[0]):
        b = xu[i]
        ab = np.uint64(b & np.uint64(0x7FFFFFFFFFFFFFFF))
        top = max(top, ab)
        af = np.uint64(ab).view(np.float64)
        sub = np.float64(np.rint(af * 16777216.0) * 5.9604644775390625e-08).view(np.uint64)
        r = np.uint64((ab + np.uint64(0x1FFFFFFFFFF) + ((ab >> np.uint64(42)) & np.uint64(1)))
                      & np.uint64(0xFFFFFC0000000000))
        r = np.uint64(0x7FF0000000000000) if r >= np.uint64(0x40F0000000000000) else r  # 65536 or more: inf
        r = sub if ab < np.uint64(0x3F10000000000000) else r  # |x| < 2^-14
        ou[i] = np.uint64(r | (b & np.uint64(0x8000000000000000)))
    return top


def fp16_round(x, out):
    """Round ``x`` to IEEE half precision (nearest even; overflow to inf), held in x's dtype; True if x is finite."""
    xf, of = x.reshape(-1), out.reshape(-1)
    if x.dtype == np.float32:
        return bool(_fp16_f32(xf.view(np.uint32), of.view(np.uint32)) < np.uint32(0x7F800000))
    return bool(_fp16_f64(xf.view(np.uint64), of.view(np.uint64)) < np.uint64(0x7FF0000000000000))


@njit(parallel=True, cache=True)
def _natural(x, key, shift, scale, out):
    rows, d = x.shape
    for r in prange(rows):
        for j in range(d):
            v = np.float64(x[r, j])
            a = abs(v)
            if a == 0.0:
                out[r, j] = 0.0
                continue
            _, ex = math.frexp(a)
            low = math.ldexp(1.0, ex - 1)
            p = a / low - 1.0
            q = 2.0 * low if _uniform(key, r * d + j, shift, scale) < p else low
            out[r, j] = math.copysign(q, v)


def natural_quantize(x, key: int, out):
    """Natural compression (see the numpy backend)."""
    shift, scale = _bits(x.dtype)
    _natural(x, np.uint64(key), shift, scale, out)
    return out


@njit(cache=True)
def _lohi_serial(xs):
    lo = np.float64(xs[0])
    hi = lo
    for j in range(xs.shape[0]):
        v = np.float64(xs[j])
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


def _as_float(bits, like):
    """The float64 value of the bit pattern ``bits`` read in ``like``'s float dtype (compiled: the overload)."""
    it = np.int32 if like.dtype == np.float32 else np.int64
    return float(np.array(bits, dtype=it).view(like.dtype)[()])


@overload(_as_float)
def _as_float_compiled(bits, like):
    if like.dtype == types.float32:
        return lambda bits, like: np.float64(np.int32(bits).view(np.float32))
    return lambda bits, like: np.int64(bits).view(np.float64)


@njit(cache=True, inline="never")
def _lohi(xs, xi, sh, mask, inf):
    """The bucket's (min, max) as float64, exactly :func:`_lohi_serial`'s bits, and whether it is finite.

    ``xi`` is ``xs`` viewed as signed integers of its width (``sh`` = width - 1, ``mask`` = all bits but the
    sign, ``inf`` = the bits of +inf). The key ``s ^ ((s >> sh) & mask)`` orders the bit patterns as their
    floats are ordered (negative ones with their magnitude bits flipped), so the integer min and max of the
    keys, a loop that vectorises, find the extremes; +inf has key ``inf``, -inf ``-inf - 1`` and NaNs lie
    beyond them, so the same keys tell whether the bucket is finite. A non-finite bucket, and an extreme
    equal to zero (whose sign the serial order decides), are redone in the serial order.
    """
    s = np.int64(xi[0])
    kmin = kmax = s ^ ((s >> sh) & mask)
    for i in range(xi.shape[0]):
        s = np.int64(xi[np.uint64(i)])
        k = s ^ ((s >> sh) & mask)
        kmin = min(kmin, k)
        kmax = max(kmax, k)
    if kmax >= inf or kmin < -inf:
        lo, hi = _lohi_serial(xs)
        return lo, hi, False
    lo = _as_float(kmin if kmin >= 0 else kmin ^ mask, xs)
    hi = _as_float(kmax if kmax >= 0 else kmax ^ mask, xs)
    if lo == 0.0 or hi == 0.0:
        lo, hi = _lohi_serial(xs)
    return lo, hi, True


@njit(cache=True, inline="never")
def _minmax_nearest(xs, os, lo, step):
    for j in range(xs.shape[0]):
        t = (np.float64(xs[j]) - lo) / step
        code = math.floor(t + 0.5)
        os[j] = lo + min(code, 255.0) * step


# One task per bucket, on 1-D slices (contiguous loads; the min/max and rounding loops run out of line so
# that each compiles on its own). Same float64 operations in the same order as before per element.
# Returns 1 for a bucket holding NaN or inf (its output is whatever the arithmetic gives; callers raise).
@njit(inline="always")
def _minmax_bucket(x, xi, sh, mask, inf, bucket, stochastic, key, shift, scale, out, rb, nb, d):
    r = rb // nb
    j0 = (rb % nb) * bucket
    xs = x[r, j0 : j0 + bucket]
    os = out[r, j0 : j0 + bucket]
    lo, hi, finite = _lohi(xs, xi[r, j0 : j0 + bucket], sh, mask, inf)
    step = (hi - lo) / 255.0
    if not step > 0:
        for j in range(bucket):
            os[j] = xs[j]
    elif stochastic:
        z = _state(key, r * d + j0)  # the counter stream's state before this bucket's first uniform
        for j in range(bucket):
            z += _GAMMA
            t = (np.float64(xs[j]) - lo) / step
            f = math.floor(t)
            code = f + (1.0 if _uniform_at(z, shift, scale) < (t - f) else 0.0)
            os[j] = lo + min(code, 255.0) * step
    else:
        _minmax_nearest(xs, os, lo, step)
    return 0 if finite else 1


@njit(parallel=True, cache=True)
def _minmax(x, xi, sh, mask, inf, bucket, stochastic, key, shift, scale, out):
    rows, d = x.shape
    nb = d // bucket
    bad = 0
    for rb in prange(rows * nb):
        bad += _minmax_bucket(x, xi, sh, mask, inf, bucket, stochastic, key, shift, scale, out, rb, nb, d)
    return bad


@njit(cache=True)
def _minmax_serial(x, xi, sh, mask, inf, bucket, stochastic, key, shift, scale, out):
    rows, d = x.shape
    nb = d // bucket
    bad = 0
    for rb in range(rows * nb):
        bad += _minmax_bucket(x, xi, sh, mask, inf, bucket, stochastic, key, shift, scale, out, rb, nb, d)
    return bad


def minmax_quantize(x, bucket: int, stochastic: bool, key: int, out):
    """Min-max uint8 per bucket (see the numpy backend); True if x is finite."""
    shift, scale = _bits(x.dtype)
    if x.dtype == np.float32:
        xi, sh, mask, inf = x.view(np.int32), 31, 0x7FFFFFFF, 0x7F800000
    else:
        xi, sh, mask, inf = x.view(np.int64), 63, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000
    # a small batch (one optimiser step) runs on one thread: a parallel launch costs more than the work
    kernel = _minmax_serial if x.size <= _SERIAL_MAX else _minmax
    return kernel(x, xi, sh, mask, inf, int(bucket), bool(stochastic), np.uint64(key), shift, scale, out) == 0


@njit(parallel=True, cache=True)
def _int8(x, block, out):
    rows, d = x.shape
    nb = d // block
    for rb in prange(rows * nb):
        r = rb // nb
        j0 = (rb % nb) * block
        m = 0.0
        for j in range(j0, j0 + block):
            m = max(m, abs(np.float64(x[r, j])))
        s = m / 127.0
        for j in range(j0, j0 + block):
            out[r, j] = np.rint(np.float64(x[r, j]) / s) * s if s > 0 else 0.0


def int8_block_quantize(x, block: int, out):
    """Block-wise absmax int8 (see the numpy backend)."""
    _int8(x, int(block), out)
    return out


@njit(parallel=True, cache=True)
def _dither(x, s, key, shift, scale, out):
    rows, d = x.shape
    for r in prange(rows):
        acc = 0.0
        for j in range(d):
            w = np.float64(x[r, j])
            acc += w * w
        norm = math.sqrt(acc)
        inv = norm if norm > 0 else 1.0
        for j in range(d):
            v = np.float64(x[r, j])
            t = abs(v) / inv
            if t == 0.0:
                out[r, j] = 0.0
                continue
            _, ex = math.frexp(t)
            lev = min(max(ex - 1 + s, 0), s)
            lo = math.ldexp(1.0, lev - s) if lev > 0 else 0.0
            hi = math.ldexp(1.0, lev + 1 - s) if lev < s else 1.0
            val = hi if _uniform(key, r * d + j, shift, scale) * (hi - lo) < t - lo else lo
            out[r, j] = math.copysign(norm * val, v)


def dither_quantize(x, s: int, key: int, out):
    """Natural dithering (see the numpy backend)."""
    shift, scale = _bits(x.dtype)
    _dither(x, int(s), np.uint64(key), shift, scale, out)
    return out
