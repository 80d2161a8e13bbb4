r"""Compressors of the local-update methods: chunked DCT top-k (DeMo) and top-k with low-bit values (SparseLoCo).

* :class:`DCTTopK` (``dct_top_k``): split the vector into chunks of ``chunk`` coordinates (the last one
  shorter when ``chunk`` does not divide ``d``), take each chunk's orthonormal DCT-II, keep its ``k``
  largest coefficients in magnitude (ties: the lower index) and transform back. DeMo (Peng, Quesnelle and
  Kingma 2024 [R]) sends these coefficients of every worker's momentum. The DCT is orthonormal, so the
  error is the dropped coefficients' energy: per chunk of :math:`c_j` coordinates at most
  :math:`(1 - \min(k, c_j)/c_j)` of the chunk's energy (the top :math:`k` of :math:`c_j` squares hold at
  least :math:`k/c_j` of their sum), hence ``error_factor(d)`` is the largest of these factors [N].
* :class:`TopKQuant` (``top_k_quant``): the ``k`` largest coordinates (``k = 0``: all of them, no
  indices sent), each sent as a sign and a level :math:`\ell \in \{0..2^{b-1}-1\}` of the kept maximum
  :math:`M` (``b`` bits a value: 2 for SparseLoCo's 2-bit values, Sarfi et al. 2025 [R], here the scaled
  ternary :math:`\{-M, 0, M\}`; the exact quantiser of that paper is not reproduced). Deterministic and
  biased, a contraction with factor :math:`1 - 1/d` [N] (class docstring).

DCT top-k sends float32 coefficients and ``apply`` returns what a receiver decodes (the kept coefficients
rounded to float32 first); top-k-quant sends its maximum in float32, within the wire form's float32
rounding of ``apply``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor, Message, register_compressor, setting
from simcomm.compress._quantize import _prepare
from simcomm.compress._sparsify import _check_int, index_bits, top_k_indices

__all__ = ["DCTTopK", "TopKQuant"]


def _fft():
    """``scipy.fft``, imported on first use (``simcomm --help`` and ``list`` do not load scipy)."""
    import scipy.fft

    return scipy.fft


def _chunk_sizes(d: int, chunk: int) -> list[int]:
    c = min(chunk, d)
    return [c] * (d // c) + ([d % c] if d % c else [])


@register_compressor("dct_top_k")
@dataclass(frozen=True)
class DCTTopK(Compressor):
    r"""Chunked DCT top-k: per chunk, the ``k`` largest orthonormal DCT-II coefficients (DeMo's compressor).

    ``sum_j min(k, c_j) (32 + ceil(log2 c))`` bits: a float32 coefficient and its index in the chunk.

    Examples
    --------
    >>> c = DCTTopK(k=1, chunk=4)
    >>> np.round(c.apply(np.ones(8), rng=0), 6).tolist()      # a constant chunk is its first coefficient
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    >>> c.bits(8), c.error_factor(8), c.bits(10)              # 2 chunks of 4: 2 x (32 + 2); 10 = 4 + 4 + 2
    (68, 0.75, 102)
    """

    k: int = setting("DCT coefficients kept per chunk", low=1)
    chunk: int = setting("coordinates per chunk (the last one shorter when chunk does not divide d)", default=64,
                         low=1)

    deterministic: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "dct_top_k", "k")
        _check_int(self.chunk, "dct_top_k", "chunk")

    def _coefficients(self, a):
        """``(sizes, [(coefficients of the kept entries, their indices)] per group of equal chunks)``."""
        R, d = a.shape
        sizes = _chunk_sizes(d, self.chunk)
        c = sizes[0]
        full = len(sizes) if sizes[-1] == c else len(sizes) - 1
        groups = []
        for start, count, size in ((0, full, c), (full * c, len(sizes) - full, sizes[-1])):
            if count == 0:
                continue
            block = a[:, start:start + count * size].reshape(R * count, size)
            coef = _fft().dct(block.astype(np.float64), type=2, norm="ortho", axis=-1)
            idx = top_k_indices(coef, min(self.k, size))
            vals = np.take_along_axis(coef, idx, axis=-1).astype(np.float32)
            groups.append((start, count, size, idx, vals))
        return groups

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        a, shape = _prepare(x, "dct_top_k")
        a = np.asarray(a)
        R, d = a.shape
        out = np.empty((R, d))
        for start, count, size, idx, vals in self._coefficients(a):
            coef = np.zeros((R * count, size))
            np.put_along_axis(coef, idx, vals.astype(np.float64), axis=-1)
            out[:, start:start + count * size] = _fft().idct(coef, type=2, norm="ortho", axis=-1).reshape(
                R, count * size)
        return out.astype(a.dtype, copy=False).reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        width = index_bits(min(self.chunk, d))
        return sum(min(self.k, s) for s in _chunk_sizes(d, self.chunk)) * (32 + width)

    def error_factor(self, d: int) -> float:  # noqa: D102
        return max(1.0 - min(self.k, s) / s for s in _chunk_sizes(d, self.chunk))

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        r = v - np.asarray(self.apply(v), dtype=np.float64)
        return (r * r).sum(axis=-1)

    def _message(self, x, rng, value_dtype):
        a = np.asarray(x, dtype=np.float64)[None, :]
        vals, idx = [], []
        for _, _, _, i, v in self._coefficients(a):
            vals.append(v.reshape(-1))
            idx.append(i.reshape(-1))
        width = index_bits(min(self.chunk, x.size))
        return Message("coded", x.size, value_dtype, levels=np.concatenate(idx).astype(np.int64),
                       scales=np.concatenate(vals).astype(np.float32), width=width)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        out, pos = np.empty(msg.d), 0
        start = 0
        for size in _chunk_sizes(msg.d, self.chunk):
            kk = min(self.k, size)
            coef = np.zeros(size)
            coef[msg.levels[pos:pos + kk]] = msg.scales[pos:pos + kk].astype(np.float64)
            out[start:start + size] = _fft().idct(coef, type=2, norm="ortho")
            pos, start = pos + kk, start + size
        return out


@register_compressor("top_k_quant")
@dataclass(frozen=True)
class TopKQuant(Compressor):
    r"""Top-k with ``b``-bit values: a sign and a level in :math:`\{0, .., 2^{b-1}-1\}` of the kept entries' maximum.

    ``32 + k (ceil(log2 d) + b)`` bits (``k = 0``: every coordinate, ``32 + d b``): the float32 maximum
    :math:`M` of the kept magnitudes, and per kept entry its index, its sign and the level
    :math:`\ell = \mathrm{round}(|v_j| / s)`, :math:`s = M/(2^{b-1}-1)` (``b = 2``: :math:`\{-M, 0, M\}`).
    Every entry's error is at most :math:`|v_j|` (a level of 0, or the nearest level above half of it) and the
    largest is sent exactly, so :math:`\|C(v) - v\|^2 \le \|v\|^2 - \|v\|_\infty^2 \le (1 - 1/d)\|v\|^2` [N].

    Examples
    --------
    >>> c = TopKQuant(k=2, bits_per_value=2)                   # levels {-M, 0, M} of the kept two
    >>> c.apply([4.0, -0.5, -2.5, 1.0], rng=0).tolist(), c.bits(4)
    ([4.0, 0.0, -4.0, 0.0], 40)
    >>> TopKQuant(k=0, bits_per_value=3).apply([3.0, -0.5, -2.5, 1.0], rng=0).tolist()   # steps of M/3, ties to even
    [3.0, -0.0, -2.0, 1.0]
    """

    k: int = setting("coordinates kept (0: all of them, no indices sent)", low=0)
    bits_per_value: int = setting("bits of each kept value: a sign and bits - 1 bits of level", default=2,
                                  low=2, high=16)

    deterministic: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 0:
            raise UserError(f"top_k_quant: k = {self.k!r} is not allowed; use an integer k >= 0 (0: every coordinate)")
        b = self.bits_per_value
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 2 <= b <= 16:
            raise UserError(f"top_k_quant: bits_per_value = {b!r} is not allowed; use an integer in 2..16")

    def _kk(self, d):
        if self.k > d:
            raise UserError(f"top_k_quant: k = {self.k} is larger than the vector (d = {d}); use k <= d")
        return d if self.k == 0 else self.k

    def _select(self, a):
        """``(idx, signs, levels, top)``: the kept indices, their signs and levels, the maximum per row."""
        R, d = a.shape
        kk = self._kk(d)
        idx = np.broadcast_to(np.arange(d), (R, d)) if kk == d else top_k_indices(a, kk)
        v = np.take_along_axis(a, idx, axis=-1).astype(np.float64)
        Lm = 2 ** (self.bits_per_value - 1) - 1
        top = np.abs(v).max(axis=-1, keepdims=True)
        step = np.where(top > 0, top / Lm, 1.0)
        levels = np.clip(np.rint(np.abs(v) / step), 0, Lm).astype(np.int64)
        return idx, np.where(v < 0, -1.0, 1.0), levels, top

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        a, shape = _prepare(x, "top_k_quant")
        a = np.asarray(a)
        idx, signs, levels, top = self._select(a)
        out = np.zeros(a.shape)
        Lm = 2 ** (self.bits_per_value - 1) - 1
        np.put_along_axis(out, idx, signs * levels * (top / Lm), axis=-1)
        return out.astype(a.dtype, copy=False).reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        kk = self._kk(d)
        return 32 + kk * (self.bits_per_value + (0 if kk == d else index_bits(d)))

    def error_factor(self, d: int) -> float:  # noqa: D102
        return 1.0 - 1.0 / d

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        r = v - np.asarray(self.apply(v), dtype=np.float64)
        return (r * r).sum(axis=-1)

    def _message(self, x, rng, value_dtype):
        d = x.size
        idx, signs, levels, top = self._select(np.asarray(x, dtype=np.float64)[None, :])
        b = self.bits_per_value
        code = (signs[0] < 0).astype(np.int64) << (b - 1) | levels[0]
        dense = self._kk(d) == d
        if not dense:
            code = code | (idx[0].astype(np.int64) << b)
        return Message("coded", d, value_dtype, levels=code, scales=top[0].astype(np.float32),
                       width=b + (0 if dense else index_bits(d)))

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        b = self.bits_per_value
        code = msg.levels
        level = code & ((1 << (b - 1)) - 1)
        sign = np.where((code >> (b - 1)) & 1, -1.0, 1.0)
        out = np.zeros(msg.d)
        where = np.arange(msg.d) if self._kk(msg.d) == msg.d else code >> b
        out[where] = sign * level * (float(msg.scales[0]) / (2 ** (b - 1) - 1))
        return out
