r"""Natural dithering (Horváth et al. 2019): random rounding of :math:`|v_i|/\|v\|` on the levels :math:`\{0, 2^{1-s}, \dots, 1/2, 1\}`.

:math:`C(v)_i = \|v\|\,\mathrm{sgn}(v_i)\,\xi_i`, where :math:`t_i = |v_i|/\|v\| \in [l_j, l_{j+1}]` (adjacent
levels) goes to :math:`l_{j+1}` with probability :math:`(t_i - l_j)/(l_{j+1} - l_j)`: unbiased, with the
exact variance

.. math:: \mathbb{E}\|C(v) - v\|^2 = \|v\|^2 \sum_i (l_{j+1} - t_i)(t_i - l_j).

Worst case [N] (derived here): a coordinate with :math:`t \ge l_1 = 2^{1-s}` lies between two levels in
ratio 2, so it contributes at most :math:`t^2/8` (natural compression's bound); one below :math:`l_1`
contributes :math:`(l_1 - t)t \le \min(l_1 t, l_1^2/4)`; with :math:`\sum_i t_i^2 = 1` and
:math:`\sum_i t_i \le \sqrt d`,

.. math:: \beta \le \tfrac18 + \min\!\left(2^{1-s}\sqrt d,\; d\,4^{-s}\right).

(Horváth et al. state :math:`\tfrac18 + \min(\sqrt d/2^{s-1}, d/2^{2(s-1)})` for the 2-norm [R]: the same first
term, a second one 4 times larger.) It is an upper bound, not attained in general. Message: a float32 norm
and ``1 + ceil(log2(s + 1))`` bits a coordinate (a sign and the level index).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor, Message, register_compressor, setting
from simcomm.compress._quantize import _prepare, require_rng

__all__ = ["NaturalDithering"]


def _levels(t, s):
    """Lower level index ``j`` (0 means the interval [0, l_1]) and the bracketing levels of ``t`` in [0, 1]."""
    # level j >= 1 is 2^(j - s); t in [2^(j-s), 2^(j+1-s)) has j = floor(log2 t) + s; below 2^(1-s): j = 0
    with np.errstate(divide="ignore"):
        j = np.where(t > 0, np.floor(np.log2(np.where(t > 0, t, 1.0))) + s, 0.0)
    j = np.clip(j, 0, s).astype(np.int64)  # t = 1 exactly is level s (its own upper level)
    lo = np.where(j > 0, np.ldexp(1.0, j - s), 0.0)
    hi = np.where(j < s, np.ldexp(1.0, np.minimum(j, s - 1) + 1 - s), 1.0)
    return j, lo, hi


@register_compressor("natural_dithering")
@dataclass(frozen=True)
class NaturalDithering(Compressor):
    r"""Natural dithering with ``s`` levels (2-norm): unbiased, :math:`\beta \le 1/8 + \min(2^{1-s}\sqrt d, d 4^{-s})`.

    Examples
    --------
    >>> c = NaturalDithering(3)
    >>> c.apply([3.0, 4.0], rng=0).tolist()      # 3/5 and 4/5 rounded to 1/2 or 1, times 5
    [2.5, 5.0]
    >>> c.bits(10), round(c.beta(16), 6)
    (62, 0.375)
    """

    s: int = setting("number of non-zero levels 2^(1-s), ..., 1/2, 1; s >= 1", low=1)
    unbiased: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        if isinstance(self.s, bool) or not isinstance(self.s, (int, np.integer)) or not 1 <= self.s <= 60:
            raise UserError(f"natural_dithering: s = {self.s!r} is not allowed; use an integer 1 <= s <= 60")

    def _width(self) -> int:
        return 1 + math.ceil(math.log2(self.s + 1))

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 + d * self._width()

    def beta(self, d: int) -> float:  # noqa: D102
        return 0.125 + min(2.0 ** (1 - self.s) * math.sqrt(d), d * 4.0 ** (-self.s))

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        n2 = (v * v).sum(axis=-1, keepdims=True)
        t = np.abs(v) / np.where(n2 > 0, np.sqrt(n2), 1.0)
        _, lo, hi = _levels(t, self.s)
        return (n2 * (hi - t) * (t - lo)).sum(axis=-1)

    def _codes(self, x, rng):
        """``(norm per row, level index per coordinate, negative sign mask, shape)`` for the rows of ``x``."""
        a, shape = _prepare(x, "natural_dithering")
        a = np.asarray(a, dtype=np.float64)
        u = np.random.default_rng(require_rng(rng, "natural_dithering")).random(a.shape)
        norm = np.sqrt((a * a).sum(axis=1, keepdims=True))
        t = np.abs(a) / np.where(norm > 0, norm, 1.0)
        j, lo, hi = _levels(t, self.s)
        up = u * (hi - lo) < t - lo  # P(up) = (t - lo)/(hi - lo)
        return norm, np.where(up & (j < self.s), j + 1, j), np.signbit(a), shape

    @staticmethod
    def _value(idx, s):
        return np.where(idx > 0, np.ldexp(1.0, np.maximum(idx, 1) - s), 0.0)

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        dtype = np.asarray(x).dtype if np.asarray(x).dtype in (np.float32, np.float64) else np.float64
        norm, idx, neg, shape = self._codes(x, rng)
        out = norm * np.where(neg, -1.0, 1.0) * self._value(idx, self.s)
        return out.astype(dtype, copy=False).reshape(shape)

    def _message(self, x, rng, backend, value_dtype):
        norm, idx, neg, _ = self._codes(x, rng)
        codes = (neg[0].astype(np.int64) << (self._width() - 1)) | idx[0]
        return Message("coded", x.size, value_dtype, levels=codes, scales=norm[0].astype(np.float32),
                       width=self._width())

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        w = self._width()
        idx, neg = msg.levels & ((1 << (w - 1)) - 1), msg.levels >> (w - 1)
        return float(msg.scales[0]) * np.where(neg == 1, -1.0, 1.0) * self._value(idx, self.s)
