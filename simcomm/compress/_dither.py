r"""Natural dithering (Horváth et al. 2019): random rounding of |v_i|/||v|| to the levels 0, 2^(1-s), ..., 1/2, 1.

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
from simcomm.compress._elementwise import _run
from simcomm.compress._quantize import _key

__all__ = ["NaturalDithering"]


def _levels(t, s):
    """Lower level index ``j`` (0: the interval [0, l_1]) and the levels around ``t`` in [0, 1] (as the kernels)."""
    _, ex = np.frexp(t)  # t = m 2^ex, m in [1/2, 1): t in [2^(ex-1), 2^ex), level j = ex - 1 + s
    j = np.clip(np.where(t > 0, ex - 1 + s, 0), 0, s)
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
    [2.5, 2.5]
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

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        # the backends' dither_quantize: one pass for the row norm, one for the rounding (counter uniforms)
        return _run(x, "natural_dithering", "dither_quantize", self.s, _key(rng, "natural_dithering"))[0]

    def _message(self, x, rng, value_dtype):
        q = np.asarray(self.apply(x, rng=rng), dtype=np.float64)
        norm = float(np.sqrt(np.sum(np.asarray(x, np.float64) ** 2)))
        # |q_i| = norm 2^(idx - s) (idx >= 1) or 0: the level index back from the value, rounded to the nearest
        # power of two (apply's float32 norm may put t a rounding below 2^(idx - s), where frexp drops a level)
        t = np.abs(q) / (norm if norm > 0 else 1.0)
        idx = np.where(t > 0, np.rint(np.log2(np.where(t > 0, t, 1.0))) + self.s, 0).astype(np.int64)
        codes = (np.signbit(q).astype(np.int64) << (self._width() - 1)) | idx
        return Message("coded", x.size, value_dtype, levels=codes, scales=np.array([norm], np.float32),
                       width=self._width())

    @staticmethod
    def _value(idx, s):
        return np.where(idx > 0, np.ldexp(1.0, np.maximum(idx, 1) - s), 0.0)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        w = self._width()
        idx, neg = msg.levels & ((1 << (w - 1)) - 1), msg.levels >> (w - 1)
        return float(msg.scales[0]) * np.where(neg == 1, -1.0, 1.0) * self._value(idx, self.s)
