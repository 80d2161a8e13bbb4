r"""Elementwise compressor kernels, numpy reference (sign, bf16, natural, min-max uint8, block int8).

Every kernel works on a C-contiguous 2-D array ``x`` of shape ``(rows, d)`` (one message per row),
writes into ``out`` (same shape and dtype) and returns it. Randomness (natural compression, stochastic
uint8 rounding) is the counter-based stream of :mod:`simcomm.backends._numpy.quant`, keyed by one
64-bit ``key``: coordinate ``i`` of the flattened array uses uniform ``u_i``, so the numba backend
gives the same codes. The arithmetic is float64 in a fixed order, repeated by the numba kernels.
"""

from __future__ import annotations

import numpy as np

from simcomm.backends._numpy.quant import counter_uniforms

__all__ = ["sign_quantize", "bf16_round", "fp16_round", "natural_quantize", "minmax_quantize", "int8_block_quantize",
           "dither_quantize"]

SIGN_MODES = {"none": 0, "l1": 1, "l2": 2}


def sign_quantize(x: np.ndarray, mode: int, out: np.ndarray) -> np.ndarray:
    r"""Scaled sign: :math:`C(x)_i = a\,\mathrm{sgn}(x_i)` with :math:`\mathrm{sgn}(0) = +1`.

    ``mode`` 0: :math:`a = 1`; 1: :math:`a = \|x\|_1/d`; 2: :math:`a = \|x\|_2/\sqrt d` (per row).
    Returns the per-row scales ``a`` (float64).
    """
    rows, d = x.shape
    x64 = np.asarray(x, dtype=np.float64)
    if mode == 0:
        a = np.ones(rows)
    elif mode == 1:
        a = np.abs(x64).sum(axis=1) / d
    else:
        a = np.sqrt(np.einsum("ij,ij->i", x64, x64)) / np.sqrt(d)
    out[...] = np.where(x64 >= 0, a[:, None], -a[:, None])
    return a


def bf16_round(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Round float32 ``x`` to bfloat16 (nearest, ties to even; overflow to inf), held as float32."""
    u = x.view(np.uint32).astype(np.uint64)
    out.view(np.uint32)[...] = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32)
    return out


def fp16_round(x: np.ndarray, out: np.ndarray) -> bool:
    """Round ``x`` to IEEE half precision (nearest, ties to even; overflow to inf), held in ``x``'s dtype.

    Returns whether every entry of ``x`` is finite (``out`` is unspecified when not; the caller raises).
    """
    finite = bool(np.isfinite(x).all())
    with np.errstate(over="ignore"):
        out[...] = x.astype(np.float16)
    return finite


def natural_quantize(x: np.ndarray, key: int, out: np.ndarray) -> np.ndarray:
    r"""Natural compression: unbiased random rounding of :math:`|x_i|` to a power of two.

    :math:`|x_i|` in :math:`[2^e, 2^{e+1})` goes to :math:`2^{e+1}` with probability
    :math:`|x_i|/2^e - 1`, else to :math:`2^e`; the sign is kept, zero stays zero.
    """
    x64 = np.asarray(x, dtype=np.float64)
    a = np.abs(x64)
    _, ex = np.frexp(a)  # a = m 2^ex, m in [0.5, 1)
    low = np.ldexp(1.0, ex - 1)
    safe = np.where(a > 0, low, 1.0)
    p = a / safe - 1.0
    u = counter_uniforms(key, x.size, x.dtype).reshape(x.shape).astype(np.float64)
    q = np.where(u < p, 2.0 * safe, safe)
    out[...] = np.where(a > 0, np.copysign(q, x64), 0.0)
    return out


def minmax_quantize(x: np.ndarray, bucket: int, stochastic: bool, key: int, out: np.ndarray) -> bool:
    r"""Min-max uint8 per bucket of ``bucket`` coordinates (``bucket`` divides ``d``).

    In each bucket, :math:`t_i = (x_i - \min)/\Delta` with :math:`\Delta = (\max - \min)/255`; the code is
    :math:`\lfloor t_i\rfloor + [u_i < t_i - \lfloor t_i\rfloor]` (``stochastic``: unbiased) or
    :math:`\lfloor t_i + 1/2\rfloor` (nearest); the value :math:`\min + \mathrm{code}\,\Delta`. A constant
    bucket is sent exactly. Returns whether every entry of ``x`` is finite (``out`` is unspecified when
    not; the caller raises).
    """
    rows, d = x.shape
    nb = d // bucket
    finite = bool(np.isfinite(x).all())
    x3 = np.asarray(x, dtype=np.float64).reshape(rows, nb, bucket)
    with np.errstate(invalid="ignore", over="ignore"):
        lo = x3.min(axis=2, keepdims=True)
        hi = x3.max(axis=2, keepdims=True)
        step = (hi - lo) / 255.0
        safe = np.where(step > 0, step, 1.0)
        t = (x3 - lo) / safe
        if stochastic:
            u = counter_uniforms(key, x.size, x.dtype).reshape(x3.shape).astype(np.float64)
            f = np.floor(t)
            code = f + (u < (t - f))
        else:
            code = np.floor(t + 0.5)
        code = np.minimum(code, 255.0)
        out.reshape(rows, nb, bucket)[...] = np.where(step > 0, lo + code * step, x3)
    return finite


def int8_block_quantize(x: np.ndarray, block: int, out: np.ndarray) -> np.ndarray:
    r"""Block-wise absmax int8: per block :math:`s = \max|x|/127`, :math:`C(x)_i = s\,\mathrm{rint}(x_i/s)`."""
    rows, d = x.shape
    nb = d // block
    x3 = np.asarray(x, dtype=np.float64).reshape(rows, nb, block)
    s = np.abs(x3).max(axis=2, keepdims=True) / 127.0
    safe = np.where(s > 0, s, 1.0)
    out.reshape(rows, nb, block)[...] = np.where(s > 0, np.rint(x3 / safe) * safe, 0.0)
    return out


def dither_quantize(x: np.ndarray, s: int, key: int, out: np.ndarray) -> np.ndarray:
    r"""Natural dithering: :math:`t_i = |x_i|/\|x\|` rounded at random to the levels :math:`0, 2^{1-s}, \dots, 1/2, 1`.

    With :math:`t = m\,2^e`, :math:`m \in [1/2, 1)`, the lower level index is :math:`j = e - 1 + s` clipped to
    :math:`[0, s]` (level :math:`j \ge 1` is :math:`2^{j-s}`, level 0 is 0); ``t`` goes up with probability
    :math:`(t - l_j)/(l_{j+1} - l_j)` (the uniform :math:`u` of the counter stream: up iff
    :math:`u (l_{j+1} - l_j) < t - l_j`); the value is :math:`\pm\|x\|` times the level.
    """
    x64 = np.asarray(x, dtype=np.float64)
    norm = np.sqrt((x64 * x64).sum(axis=1, keepdims=True))
    t = np.abs(x64) / np.where(norm > 0, norm, 1.0)
    _, ex = np.frexp(t)
    j = np.clip(np.where(t > 0, ex - 1 + s, 0), 0, s)
    lo = np.where(j > 0, np.ldexp(1.0, j - s), 0.0)
    hi = np.where(j < s, np.ldexp(1.0, np.minimum(j, s - 1) + 1 - s), 1.0)
    u = counter_uniforms(key, x.size, x.dtype).reshape(x.shape).astype(np.float64)
    val = np.where(u * (hi - lo) < t - lo, hi, lo)
    out[...] = np.where(t > 0, np.copysign(norm * val, x64), 0.0)
    return out
