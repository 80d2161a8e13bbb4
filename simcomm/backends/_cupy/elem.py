r"""Elementwise compressor kernels on the GPU: the numpy reference's operations on device arrays.

See :mod:`simcomm.backends._numpy.elem`. Each kernel is the reference written with CuPy array
operations (CuPy fuses none of them; every line is one pass), with the counter-based uniforms of
:mod:`simcomm.backends._cupy.quant`; results come back where the input was (host or device).
"""

from __future__ import annotations

import cupy as cp

from simcomm.backends._cupy._host import as_rows, like_input
from simcomm.backends._cupy.quant import counter_uniforms

__all__ = ["sign_quantize", "bf16_round", "fp16_round", "natural_quantize", "minmax_quantize", "int8_block_quantize",
           "dither_quantize"]


def _write(out, res):
    out[...] = like_input(res.astype(out.dtype), out)
    return out


def sign_quantize(x, mode: int, out):
    """Scaled sign (see the numpy backend); returns the per-row scales (where ``x`` was)."""
    xd = as_rows(x).astype(cp.float64)
    rows, d = xd.shape
    if mode == 0:
        a = cp.ones(rows)
    elif mode == 1:
        a = cp.abs(xd).sum(axis=1) / d
    else:
        a = cp.sqrt((xd * xd).sum(axis=1)) / cp.sqrt(float(d))
    _write(out, cp.where(xd >= 0, a[:, None], -a[:, None]))
    return like_input(a, x)


def bf16_round(x, out):
    """Round float32 ``x`` to bfloat16 (nearest even; overflow to inf), held as float32."""
    u = as_rows(x).view(cp.uint32).astype(cp.uint64)
    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(cp.uint32).view(cp.float32)
    return _write(out, r)


def fp16_round(x, out):
    """Round ``x`` to IEEE half precision (nearest even; overflow to inf), held in x's dtype; True if x is finite."""
    xd = as_rows(x)
    finite = bool(cp.isfinite(xd).all())
    _write(out, xd.astype(cp.float16).astype(xd.dtype))
    return finite


def natural_quantize(x, key: int, out):
    """Natural compression (see the numpy backend)."""
    xd = as_rows(x)
    x64 = xd.astype(cp.float64)
    a = cp.abs(x64)
    _, ex = cp.frexp(a)
    low = cp.ldexp(cp.ones_like(a), ex - 1)
    safe = cp.where(a > 0, low, 1.0)
    p = a / safe - 1.0
    u = counter_uniforms(key, xd.size, xd.dtype).reshape(xd.shape).astype(cp.float64)
    q = cp.where(u < p, 2.0 * safe, safe)
    return _write(out, cp.where(a > 0, cp.copysign(q, x64), 0.0))


def minmax_quantize(x, bucket: int, stochastic: bool, key: int, out):
    """Min-max uint8 per bucket (see the numpy backend); True if x is finite."""
    xd = as_rows(x)
    finite = bool(cp.isfinite(xd).all())
    rows, d = xd.shape
    x3 = xd.astype(cp.float64).reshape(rows, d // bucket, bucket)
    lo = x3.min(axis=2, keepdims=True)
    step = (x3.max(axis=2, keepdims=True) - lo) / 255.0
    safe = cp.where(step > 0, step, 1.0)
    t = (x3 - lo) / safe
    if stochastic:
        u = counter_uniforms(key, xd.size, xd.dtype).reshape(x3.shape).astype(cp.float64)
        f = cp.floor(t)
        code = f + (u < (t - f))
    else:
        code = cp.floor(t + 0.5)
    res = cp.where(step > 0, lo + cp.minimum(code, 255.0) * step, x3)
    _write(out, res.reshape(rows, d))
    return finite


def int8_block_quantize(x, block: int, out):
    """Block-wise absmax int8 (see the numpy backend)."""
    xd = as_rows(x)
    rows, d = xd.shape
    x3 = xd.astype(cp.float64).reshape(rows, d // block, block)
    s = cp.abs(x3).max(axis=2, keepdims=True) / 127.0
    safe = cp.where(s > 0, s, 1.0)
    return _write(out, cp.where(s > 0, cp.rint(x3 / safe) * safe, 0.0).reshape(rows, d))


def dither_quantize(x, s: int, key: int, out):
    """Natural dithering (see the numpy backend)."""
    xd = as_rows(x)
    x64 = xd.astype(cp.float64)
    norm = cp.sqrt((x64 * x64).sum(axis=1, keepdims=True))
    t = cp.abs(x64) / cp.where(norm > 0, norm, 1.0)
    _, ex = cp.frexp(t)
    j = cp.clip(cp.where(t > 0, ex - 1 + s, 0), 0, s)
    one = cp.ones_like(t)
    lo = cp.where(j > 0, cp.ldexp(one, j - s), 0.0)
    hi = cp.where(j < s, cp.ldexp(one, cp.minimum(j, s - 1) + 1 - s), 1.0)
    u = counter_uniforms(key, xd.size, xd.dtype).reshape(xd.shape).astype(cp.float64)
    val = cp.where(u * (hi - lo) < t - lo, hi, lo)
    return _write(out, cp.where(t > 0, cp.copysign(norm * val, x64), 0.0))
