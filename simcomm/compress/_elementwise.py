r"""Sign, scaled sign, natural compression, low-precision casts and 8-bit bucket quantizers.

Each is one registered :class:`~simcomm.compress.Compressor` with its bits, constants and wire form
(a ``coded`` message: float32 side values plus fixed-width codes, or a ``dense`` message in float16 /
bfloat16). The kernels are the backends' ``sign_quantize``, ``bf16_round``, ``natural_quantize``,
``minmax_quantize`` and ``int8_block_quantize`` (:mod:`simcomm.backends._numpy.elem`).

Constants ([N]: derived here, checked by the conformance battery in ``tests/test_conform.py`` and the
``compress.*`` claims):

* scaled sign :math:`C(v) = a\,\mathrm{sgn}(v)`: :math:`\|C(v) - v\|^2 = \|v\|^2 - 2a\|v\|_1 + a^2 d`, so
  :math:`a = \|v\|_1/d` (EF-signSGD) gives :math:`\|v\|^2 - \|v\|_1^2/d \le (1 - 1/d)\|v\|^2` (a
  contraction) and :math:`a = \|v\|/\sqrt d` (1-bit Adam's reference scale) gives
  :math:`2\|v\|^2(1 - \|v\|_1/(\sqrt d\,\|v\|))`, up to :math:`2(1 - 1/\sqrt d)\|v\|^2`: not a contraction;
* natural compression: unbiased, :math:`\mathbb{E}\|C(v)-v\|^2 = \sum_i (2^{e_i+1} - |v_i|)(|v_i| - 2^{e_i})
  \le \|v\|^2/8` (the maximum of :math:`(2-t)(t-1)/t^2` on :math:`[1, 2]` is 1/8, at :math:`t = 4/3`);
* min-max uint8 with stochastic rounding: unbiased, variance :math:`\sum_i \Delta_b^2 f_i(1 - f_i) \le
  (B/130050)\|v\|^2` (:math:`\Delta_b \le \text{range}_b/255`, :math:`\text{range}_b^2 \le 2\|v_b\|^2`); with
  rounding to nearest it is biased, error :math:`\le (B/520200)\|v\|^2`;
* block int8 (absmax): error :math:`\le B\,s^2/4` per block, :math:`s = \|v_b\|_\infty/127`, so
  :math:`\le (B/64516)\|v\|^2`;
* with-replacement rand-k, scaled by :math:`d/k` (duplicates summed): unbiased, variance
  :math:`((d - 1)/k)\|v\|^2`; unscaled, the distinct drawn coordinates kept as they are (GRACE's
  implementation): biased, :math:`\mathbb{E}C(v) = (1 - (1 - 1/d)^k)\,v`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import array_namespace, backend_for
from simcomm.compress._compressor import Compressor, Message, _cast, register_compressor, setting
from simcomm.compress._quantize import _key, _nonfinite, _out, _prepare, require_rng
from simcomm.compress._sparsify import _check_int, message_bits

__all__ = ["Sign", "ScaledSign", "Natural", "FP16", "BF16", "MinMaxUint8", "BlockInt8", "RandKReplace"]

_SIGN_MODE = {"l1": 1, "l2": 2}
FP16_MAX = 65504.0


def _run(x, name, kernel, *args, check=True, out=None):
    """Apply a backend kernel to the rows of ``x`` (into ``out`` if given): returns ``(out, shape, a2d, extra)``."""
    a, shape = _prepare(x, name, check=check)
    be = backend_for(None, a)
    res = _out(out, a, shape)
    extra = getattr(be, kernel)(a, *args, res)
    return (res.reshape(shape) if out is None else out), shape, a, extra


def _sq(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return (v * v).sum(axis=-1)


@register_compressor("sign")
@dataclass(frozen=True)
class Sign(Compressor):
    r"""Plain sign, :math:`C(v)_i = \mathrm{sgn}(v_i) \in \{-1, +1\}` (``sgn(0) = +1``): ``d`` bits, biased.

    Examples
    --------
    >>> Sign().apply([0.5, -2.0, 0.0], rng=0).tolist(), Sign().bits(3)
    ([1.0, -1.0, 1.0], 3)
    """

    deterministic: ClassVar[bool] = True

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        return _run(x, "sign", "sign_quantize", 0)[0]

    def bits(self, d: int) -> int:  # noqa: D102
        return d

    def variance(self, v) -> np.ndarray:  # noqa: D102
        # ||sgn(v) - v||^2 = ||v||^2 - 2||v||_1 + d (deterministic; sgn(0) = 1 adds 1 per zero as well)
        v = np.asarray(v, dtype=np.float64)
        return _sq(v) - 2.0 * np.abs(v).sum(axis=-1) + v.shape[-1]

    def _message(self, x, rng, value_dtype):
        codes = (np.asarray(x) >= 0).astype(np.int64)
        return Message("coded", x.size, value_dtype, levels=codes, scales=np.zeros(0, np.float32), width=1)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        return np.where(msg.levels == 1, 1.0, -1.0)


@register_compressor("scaled_sign")
@dataclass(frozen=True)
class ScaledSign(Compressor):
    r"""Scaled sign :math:`C(v) = a\,\mathrm{sgn}(v)`: ``d`` bits plus one float32 scale; biased.

    ``norm="l1"``: :math:`a = \|v\|_1/d` (EF-signSGD, Karimireddy et al. 2019), a contraction with
    :math:`\|C(v)-v\|^2 = \|v\|^2 - \|v\|_1^2/d`; ``norm="l2"``: :math:`a = \|v\|_2/\sqrt d` (the 1-bit
    Adam reference), :math:`\|C(v)-v\|^2 = 2\|v\|^2(1 - \|v\|_1/(\sqrt d\|v\|))`, which exceeds
    :math:`\|v\|^2` on sparse vectors (see the module docstring).

    Examples
    --------
    >>> ScaledSign().apply([3.0, -1.0], rng=0).tolist(), ScaledSign("l2").bits(2)
    ([2.0, -2.0], 34)
    """

    deterministic: ClassVar[bool] = True

    norm: str = setting("scale of the signs: l1 (||v||_1/d) or l2 (||v||/sqrt d)", default="l1",
                        choices=("l1", "l2"))

    def __post_init__(self):  # noqa: D105
        if self.norm not in _SIGN_MODE:
            raise UserError(f"scaled_sign: norm = {self.norm!r} is not allowed; use 'l1' or 'l2'")

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        # no separate finiteness pass: a row holding NaN or inf has a non-finite l1 / l2 scale
        out, _, _, a = _run(x, "scaled_sign", "sign_quantize", _SIGN_MODE[self.norm], check=False)
        _finite(a, "scaled_sign")
        return out

    def bits(self, d: int) -> int:  # noqa: D102
        return d + 32

    def error_factor(self, d: int) -> float:  # noqa: D102
        return 1.0 - 1.0 / d if self.norm == "l1" else 2.0 * (1.0 - 1.0 / math.sqrt(d))  # both attained 1-sparse

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        d, n2, n1 = v.shape[-1], _sq(v), np.abs(v).sum(axis=-1)
        if self.norm == "l1":
            return n2 - n1 * n1 / d
        return 2.0 * n2 - 2.0 * np.sqrt(n2) * n1 / math.sqrt(d)

    def _message(self, x, rng, value_dtype):
        out, _, _, a = _run(x, "scaled_sign", "sign_quantize", _SIGN_MODE[self.norm])
        codes = (np.asarray(x) >= 0).astype(np.int64)
        return Message("coded", x.size, value_dtype, levels=codes, scales=np.asarray(a, np.float32), width=1)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        a = float(msg.scales[0])
        return np.where(msg.levels == 1, a, -a)


# float32 exponents of the powers of two natural compression sends: 2^e, e = code - 127, code in 1..255
_NAT_MIN, _NAT_MAX = -126, 128


@register_compressor("natural")
@dataclass(frozen=True)
class Natural(Compressor):
    r"""Natural compression (Horváth et al. 2019): unbiased random rounding to a power of two.

    :math:`|v_i| \in [2^e, 2^{e+1})` goes to :math:`2^{e+1}` with probability :math:`|v_i|/2^e - 1`;
    the sign is kept. Nine bits a coordinate (a sign and an 8-bit exponent, code 0 for zero);
    :math:`\beta = 1/8`.

    Examples
    --------
    >>> Natural().apply([1.0, -4.0, 0.0], rng=0).tolist(), Natural().beta(10), Natural().bits(10)
    ([1.0, -4.0, 0.0], 0.125, 90)
    """

    unbiased: ClassVar[bool] = True

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return _run(x, "natural", "natural_quantize", _key(rng, "natural"))[0]

    def bits(self, d: int) -> int:  # noqa: D102
        return 9 * d

    def beta(self, d: int) -> float:  # noqa: D102
        return 0.125

    def variance(self, v) -> np.ndarray:  # noqa: D102
        a = np.abs(np.asarray(v, dtype=np.float64))
        _, ex = np.frexp(a)
        low = np.ldexp(1.0, ex - 1)
        return np.where(a > 0, (2.0 * low - a) * (a - low), 0.0).sum(axis=-1)

    def _message(self, x, rng, value_dtype):
        q = np.asarray(self.apply(x, rng=rng), dtype=np.float64)
        _, ex = np.frexp(np.abs(q))
        e = ex - 1  # |q| = 2^e exactly
        nz = q != 0
        if np.any(nz & ((e < _NAT_MIN) | (e > _NAT_MAX))):
            raise UserError(f"natural: a value outside [2^{_NAT_MIN}, 2^{_NAT_MAX - 1}] has no 9-bit code; "
                            "rescale x")
        codes = np.where(nz, (q < 0).astype(np.int64) << 8 | (e + 127), 0)
        return Message("coded", x.size, value_dtype, levels=codes.astype(np.int64), scales=np.zeros(0, np.float32),
                       width=9)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        c = msg.levels
        mag = np.where(c & 255, np.ldexp(1.0, (c & 255) - 127), 0.0)
        return np.where(c >> 8, -mag, mag)


def _finite(a, name):
    xp = array_namespace(a)
    if not bool(xp.isfinite(a).all()):
        raise UserError(f"{name}: x contains NaN or inf; compress finite values only")


@register_compressor("fp16")
@dataclass(frozen=True)
class FP16(Compressor):
    """IEEE half precision: round to nearest even, overflow to inf (above 65504) as the hardware does.

    ``16 d`` bits; biased (deterministic); no relative error bound (overflow). The output keeps the
    input's float dtype, holding float16 values. ``apply(x, out=buf)`` writes into a preallocated
    C-contiguous ``buf`` of x's shape and float dtype (``x`` itself for in place).

    Examples
    --------
    >>> FP16().apply([1.0 + 2**-11, 70000.0], rng=0).tolist(), FP16().bits(4)
    ([1.0, inf], 64)
    """

    deterministic: ClassVar[bool] = True

    def apply(self, x, *, rng=None, out=None) -> np.ndarray:  # noqa: D102
        # one pass: the cast reads every entry, so it reports non-finite input itself
        res, shape, a, finite = _run(x, "fp16", "fp16_round", check=False, out=out)
        if not finite:
            _nonfinite("fp16")
        return res

    def bits(self, d: int) -> int:  # noqa: D102
        return 16 * d

    def _message(self, x, rng, value_dtype):
        with np.errstate(over="ignore"):
            return Message("dense", x.size, "float16", values=x.astype(np.float16))


@register_compressor("bf16")
@dataclass(frozen=True)
class BF16(Compressor):
    """bfloat16: the float32 value rounded to its upper 16 bits (nearest even, overflow to inf).

    ``16 d`` bits; biased (deterministic). float64 input is first rounded to float32 (how frameworks
    cast); the output keeps the input's float dtype.

    Examples
    --------
    >>> BF16().apply([1.0 + 2**-8, 1.0 + 3 * 2**-8], rng=0).tolist(), BF16().bits(4)
    ([1.0, 1.015625], 64)
    """

    deterministic: ClassVar[bool] = True

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        a, shape = _prepare(x, "bf16")
        xp = array_namespace(a)
        with np.errstate(over="ignore"):
            a32 = xp.ascontiguousarray(a.astype(xp.float32))
        out = xp.empty_like(a32)
        backend_for(None, a32).bf16_round(a32, out)
        return out.astype(a.dtype, copy=False).reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        return 16 * d

    def _message(self, x, rng, value_dtype):
        with np.errstate(over="ignore"):
            return Message("dense", x.size, "bfloat16", values=_cast(x.astype(np.float32), "bfloat16"))


def _buckets(size: int, d: int, name: str, what: str) -> int:
    """The bucket length for ``d`` coordinates (0: one bucket), or a one-line error if it does not divide d."""
    b = d if size == 0 else size
    if d % b:
        raise UserError(f"{name}: {what} = {size} does not divide d = {d}; use a divisor of d (or {what} = 0: "
                        "one bucket)")
    return b


@register_compressor("minmax_uint8")
@dataclass(frozen=True)
class MinMaxUint8(Compressor):
    r"""Min-max uint8 per bucket: each bucket sends its min and max (float32) and 8-bit codes.

    Code :math:`c_i` of :math:`t_i = (v_i - \min_b)/\Delta_b`, :math:`\Delta_b = (\max_b - \min_b)/255`:
    stochastic rounding (``stochastic=True``, unbiased, :math:`\beta = B/130050`) or rounding to nearest
    (biased: the "deterministic uint8" of some frameworks). ``8 d + 64 d/B`` bits. ``apply(x, rng=...,
    out=buf)`` writes into a preallocated C-contiguous ``buf`` of x's shape and float dtype (``x``
    itself for in place).

    Examples
    --------
    >>> MinMaxUint8(4).bits(8), MinMaxUint8(4).beta(8), MinMaxUint8(0, stochastic=False).unbiased
    (192, 3.0757400999615536e-05, False)
    """

    bucket: int = setting("coordinates per bucket (a divisor of d; 0: the whole vector)", default=0, low=0)
    stochastic: bool = setting("stochastic rounding (unbiased) instead of rounding to nearest", default=True)

    def __post_init__(self):  # noqa: D105
        if self.bucket != 0:
            _check_int(self.bucket, "minmax_uint8", "bucket")

    @property
    def unbiased(self) -> bool:  # noqa: D102
        return bool(self.stochastic)

    @property
    def deterministic(self) -> bool:  # noqa: D102
        return not self.stochastic

    def _b(self, d):
        return _buckets(self.bucket, d, "minmax_uint8", "bucket")

    def apply(self, x, *, rng, out=None) -> np.ndarray:  # noqa: D102
        # no separate finiteness pass: the kernel's min/max pass over each bucket reports NaN and inf
        a, shape = _prepare(x, "minmax_uint8", check=False)
        b = self._b(a.shape[-1])
        key = _key(rng, "minmax_uint8") if self.stochastic else 0
        res = _out(out, a, shape)
        if not backend_for(None, a).minmax_quantize(a, b, self.stochastic, key, res):
            _nonfinite("minmax_uint8")
        return res.reshape(shape) if out is None else out

    def bits(self, d: int) -> int:  # noqa: D102
        return 8 * d + 64 * (d // self._b(d))

    def beta(self, d: int) -> float | None:  # noqa: D102
        return self._b(d) / 130050.0 if self.stochastic else None

    def error_factor(self, d: int) -> float:  # noqa: D102
        return self._b(d) / (130050.0 if self.stochastic else 520200.0)

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        d = v.shape[-1]
        b = self._b(d)
        v3 = v.reshape(v.shape[:-1] + (d // b, b))
        lo, hi = v3.min(axis=-1, keepdims=True), v3.max(axis=-1, keepdims=True)
        step = (hi - lo) / 255.0
        t = (v3 - lo) / np.where(step > 0, step, 1.0)
        f = t - np.floor(t)
        r = f * (1.0 - f) if self.stochastic else (t - np.floor(t + 0.5)) ** 2
        return (step * step * r).sum(axis=(-2, -1))

    def _message(self, x, rng, value_dtype):
        d = x.size
        b = self._b(d)
        q = np.asarray(self.apply(x, rng=rng), dtype=np.float64).reshape(-1, b)
        x2 = np.asarray(x, dtype=np.float64).reshape(-1, b)
        lo, hi = x2.min(axis=1, keepdims=True), x2.max(axis=1, keepdims=True)
        step = (hi - lo) / 255.0
        codes = np.where(step > 0, np.rint((q - lo) / np.where(step > 0, step, 1.0)), 0.0).astype(np.int64)
        scales = np.stack([lo[:, 0], hi[:, 0]], axis=1).astype(np.float32).reshape(-1)
        return Message("coded", d, value_dtype, levels=codes.reshape(-1), scales=scales, width=8)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        lh = msg.scales.astype(np.float64).reshape(-1, 2)
        c = msg.levels.reshape(lh.shape[0], -1)
        return (lh[:, :1] + c * ((lh[:, 1:] - lh[:, :1]) / 255.0)).reshape(-1)


@register_compressor("block_int8")
@dataclass(frozen=True)
class BlockInt8(Compressor):
    r"""Block-wise absmax int8: per block a float32 absmax :math:`m` and codes :math:`\mathrm{rint}(127 v_i/m)`.

    Biased (rounding to nearest); error at most :math:`(B/64516)\|v\|^2`. ``8 d + 32 d/B`` bits.

    Examples
    --------
    >>> BlockInt8(4).bits(8), BlockInt8(0).apply([127.0, 0.4], rng=0).tolist()
    (128, [127.0, 0.0])
    """

    deterministic: ClassVar[bool] = True

    block: int = setting("coordinates per block (a divisor of d; 0: the whole vector)", default=0, low=0)

    def __post_init__(self):  # noqa: D105
        if self.block != 0:
            _check_int(self.block, "block_int8", "block")

    def _b(self, d):
        return _buckets(self.block, d, "block_int8", "block")

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        a, shape = _prepare(x, "block_int8")
        out = array_namespace(a).empty_like(a)
        backend_for(None, a).int8_block_quantize(a, self._b(a.shape[-1]), out)
        return out.reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        return 8 * d + 32 * (d // self._b(d))

    def error_factor(self, d: int) -> float:  # noqa: D102
        return self._b(d) / 64516.0

    def _message(self, x, rng, value_dtype):
        d = x.size
        b = self._b(d)
        x2 = np.asarray(x, dtype=np.float64).reshape(-1, b)
        m = np.abs(x2).max(axis=1, keepdims=True)
        s = np.where(m > 0, m / 127.0, 1.0)
        q = np.asarray(self.apply(x), dtype=np.float64).reshape(-1, b)
        codes = (np.rint(q / s) + 127).astype(np.int64)
        return Message("coded", d, value_dtype, levels=codes.reshape(-1), scales=m[:, 0].astype(np.float32), width=8)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        s = msg.scales.astype(np.float64) / 127.0
        c = msg.levels.reshape(s.size, -1) - 127
        return (c * s[:, None]).reshape(-1)


@register_compressor("rand_k_replace")
@dataclass(frozen=True)
class RandKReplace(Compressor):
    r"""Rand-k drawn *with* replacement: ``k`` i.i.d. uniform coordinates (numpy only).

    ``scale=True``: each draw adds :math:`(d/k) v_i` (duplicates summed), unbiased with
    :math:`\beta = (d - 1)/k`. ``scale=False``: the distinct drawn coordinates kept as they are (the
    with-replacement rand-k some libraries ship as unbiased): biased,
    :math:`\mathbb{E}\|C(v) - v\|^2 = (1 - 1/d)^k\|v\|^2`. At most :func:`message_bits` ``(k, d)`` bits.

    Examples
    --------
    >>> RandKReplace(3).beta(10), round(RandKReplace(3, scale=False).error_factor(10), 6)
    (3.0, 0.729)
    """

    k: int = setting("draws (with replacement), k >= 1", low=1)
    scale: bool = setting("scale by d/k and sum duplicates (unbiased)", default=True)
    bits_exact: ClassVar[bool] = False  # duplicates send fewer coordinates: bits is the k-coordinate maximum

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "rand_k_replace", "k")

    @property
    def unbiased(self) -> bool:  # noqa: D102
        return bool(self.scale)

    def _draw(self, x, rng):
        rng = np.random.default_rng(require_rng(rng, "rand_k_replace"))
        a, shape = _prepare(x, "rand_k_replace")
        a = np.asarray(a)
        rows, d = a.shape
        idx = (rng.random((rows, self.k)) * d).astype(np.int64)
        flat = (idx + d * np.arange(rows)[:, None]).reshape(-1)
        if self.scale:
            w = np.take_along_axis(a, idx, axis=1).reshape(-1) * (d / self.k)
            out = np.bincount(flat, weights=w, minlength=rows * d).reshape(rows, d).astype(a.dtype)
        else:
            out = np.where(np.bincount(flat, minlength=rows * d).reshape(rows, d) > 0, a, 0).astype(a.dtype)
        return out, shape

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        out, shape = self._draw(x, rng)
        return out.reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        return message_bits(min(self.k, d), d)

    def beta(self, d: int) -> float | None:  # noqa: D102
        return (d - 1.0) / self.k if self.scale else None

    def error_factor(self, d: int) -> float:  # noqa: D102
        return (d - 1.0) / self.k if self.scale else (1.0 - 1.0 / d) ** self.k

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        return self.error_factor(v.shape[-1]) * _sq(v)

    def _message(self, x, rng, value_dtype):
        out = self.apply(x, rng=rng)
        # the sent coordinates: the distinct draws (a scaled value may still be 0 where x_i = 0: not sent)
        idx = np.flatnonzero(out)
        return Message("sparse", x.size, value_dtype, values=_cast(out[idx], value_dtype), indices=idx.astype(np.int64))
