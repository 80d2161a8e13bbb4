r"""Composition :math:`C_2(C_1(x))` of two registered compressors, with the constants composition rules give.

Rules [N] (derived here; the unbiased one is the composition lemma of Horváth et al. 2019, "Natural
compression", the rule for sparsification then quantization, recalled [R]). Write :math:`y = C_1(x)`, with
independent randomness for the two stages, :math:`\omega_i` the variance factors (``beta``) and :math:`f_i` the
worst-case error factors (``error_factor``):

* **both unbiased**: :math:`\mathbb{E}[C_2(y) \mid y] = y`, so the cross term vanishes and
  :math:`\mathbb{E}\|C_2(y) - x\|^2 = \mathbb{E}\|C_2(y) - y\|^2 + \mathbb{E}\|y - x\|^2
  \le \omega_2(1 + \omega_1)\|x\|^2 + \omega_1\|x\|^2`: unbiased, :math:`\omega = \omega_1 + \omega_2 +
  \omega_1\omega_2` (:math:`\alpha = \alpha_1\alpha_2`);
* **C2 unbiased, C1 sends entries** (top-k, unscaled rand-k, rTop-k: :math:`y` is a coordinate
  projection, :math:`\|y\|^2 + \|x - y\|^2 = \|x\|^2`): with :math:`e = \|x - y\|^2 \le f_1\|x\|^2`,
  :math:`\mathbb{E}\|C_2(y) - x\|^2 \le \omega_2(\|x\|^2 - e) + e`, linear in :math:`e`, so
  :math:`f = \max(\omega_2,\ \omega_2 + (1 - \omega_2) f_1)`: biased, a contraction when :math:`\omega_2 < 1`
  and :math:`f_1 < 1`; with a deterministic :math:`C_1` (top-k) and a closed-form :math:`C_2` variance the
  exact error is ``C2.variance(y) + ||x - y||^2`` (for any deterministic :math:`C_1`, e.g. scaled sign, too);
* **anything else**: no rule here; ``beta`` / ``error_factor`` are ``None`` (unknown) and the constant is
  measured (the conformance battery, ``tests/test_conform.py``, checks only what is declared).

Wire form: :math:`C_2`'s message of the ``d``-vector :math:`y` (``C2.bits(d)`` bits). A packed form (the
indices of a sparse :math:`y` plus :math:`C_2` of its values only) would be cheaper; it is not built here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor, Message, compressor_from_label, register_compressor, setting
from simcomm.compress._quantize import require_rng

__all__ = ["Compose", "Scaling"]


@register_compressor("compose")
@dataclass(frozen=True)
class Compose(Compressor):
    r"""``second(first(x))``: two registered compressors named by their labels, randomness drawn independently.

    Examples
    --------
    >>> c = Compose("top_k(k=2)", "qsgd(s=4)")
    >>> c.unbiased, c.error_factor(8), c.bits(8)           # omega_2 = min(8/16, sqrt 8/4) = 0.5, f_1 = 3/4
    (False, 0.875, 64)
    >>> Compose("rand_k(k=4)", "natural").beta(8)          # 1 + 1/8 + 1 * 1/8
    1.25
    """

    first: str = setting("label of the first compressor C1, e.g. top_k(k=10)")
    second: str = setting("label of the second compressor C2, applied to C1's output, e.g. qsgd(s=4)")

    def __post_init__(self):  # noqa: D105
        for which in ("first", "second"):
            label = getattr(self, which)
            if not isinstance(label, str):
                raise UserError(f"compose: {which} = {label!r} must be a compressor label such as 'top_k(k=10)'")
            if compressor_from_label(label).name == "compose":
                raise UserError(f"compose: {which} = {label!r} is itself a composition; compose two plain ones")

    @property
    def c1(self) -> Compressor:
        """The first stage."""
        return compressor_from_label(self.first)

    @property
    def c2(self) -> Compressor:
        """The second stage."""
        return compressor_from_label(self.second)

    @property
    def unbiased(self) -> bool:  # noqa: D102
        return bool(self.c1.unbiased and self.c2.unbiased)

    def bits(self, d: int) -> float:  # noqa: D102
        return self.c2.bits(d)

    @property
    def bits_exact(self) -> bool:  # noqa: D102
        return self.c2.bits_exact

    @property
    def deterministic(self) -> bool:  # noqa: D102
        return bool(self.c1.deterministic and self.c2.deterministic)

    def beta(self, d: int) -> float | None:  # noqa: D102
        if not self.unbiased:
            return None
        w1, w2 = self.c1.beta(d), self.c2.beta(d)
        return w1 + w2 + w1 * w2

    def error_factor(self, d: int) -> float | None:  # noqa: D102
        if self.unbiased:
            return self.beta(d)
        c1, c2 = self.c1, self.c2
        f1 = c1.error_factor(d)
        if c2.unbiased and c1.sends_entries and f1 is not None:
            w2 = c2.beta(d)
            return max(w2, w2 + (1.0 - w2) * f1)
        return None  # unknown: measured

    def variance(self, v) -> np.ndarray | None:  # noqa: D102
        c1, c2 = self.c1, self.c2
        if not (c1.deterministic and c2.unbiased):  # y = C1(v) is a function of v: the rule's identity is exact
            return None
        v = np.asarray(v, dtype=np.float64)
        y = np.asarray(c1.apply(v, rng=0), dtype=np.float64)
        v2 = c2.variance(y)
        return None if v2 is None else v2 + ((v - y) ** 2).sum(axis=-1)

    def _rngs(self, rng):
        g = np.random.default_rng(require_rng(rng, "compose"))
        return g.spawn(2)

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        r1, r2 = self._rngs(rng)
        y = self.c1.apply(x, rng=r1)
        return self.c2.apply(y, rng=r2)

    def _message(self, x, rng, value_dtype):
        r1, r2 = self._rngs(rng)
        y = np.asarray(self.c1.apply(x, rng=r1))
        return self.c2.to_message(y, rng=r2, value_dtype=value_dtype)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        return self.c2.decode(msg)


@register_compressor("scaling")
@dataclass(frozen=True)
class Scaling(Compressor):
    r"""The fixed scaling :math:`C(v) = c\,v`: the extremal deterministic :math:`\delta`-compressor of a 1-D problem.

    :math:`\|C(v) - v\|^2 = (1 - c)^2\|v\|^2` exactly, so it is a :math:`\delta`-compressor for every
    :math:`\delta \le 1 - (1 - c)^2`: ``c = 1 - sqrt(1 - delta)`` shrinks, ``c = 1 + sqrt(1 - delta)``
    stretches (the worst cases of compressed GD's performance estimation, :mod:`theory.pep`). Biased for
    ``c != 1``; 32-bit dense message (a test compressor for worst-case rates, not a saving).

    Examples
    --------
    >>> Scaling(1.5).apply([2.0, -1.0], rng=0).tolist(), Scaling(1.5).error_factor(2)
    ([3.0, -1.5], 0.25)
    """

    deterministic: ClassVar[bool] = True

    c: float = setting("the factor c of C(v) = c v, 0 < c < 2", low=0.0, high=2.0)

    def __post_init__(self):  # noqa: D105
        c = self.c
        if isinstance(c, bool) or not isinstance(c, (int, float, np.floating, np.integer)) or not 0 < c < 2:
            raise UserError(f"scaling: c = {c!r} is not allowed; use 0 < c < 2 (|1 - c| < 1: a contraction)")
        object.__setattr__(self, "c", float(c))

    def apply(self, x, *, rng=None) -> np.ndarray:  # noqa: D102
        from simcomm.compress._quantize import _prepare

        a, shape = _prepare(x, "scaling")
        return (a * self.c).reshape(shape)

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 * d

    def error_factor(self, d: int) -> float:  # noqa: D102
        return (1.0 - self.c) ** 2

    def variance(self, v) -> np.ndarray:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        return (1.0 - self.c) ** 2 * (v * v).sum(axis=-1)

    def _message(self, x, rng, value_dtype):
        from simcomm.compress._compressor import _cast

        return Message("dense", x.size, value_dtype, values=_cast(x * self.c, value_dtype))
