r"""PowerSGD (Vogels, Karimireddy, Jaggi 2019): rank-``r`` compression by one power iteration.

The vector :math:`x \in \mathbb{R}^d` is read as an :math:`m \times n` matrix :math:`M` (``rows = m``,
row-major, :math:`d = m n`). From a matrix :math:`Q \in \mathbb{R}^{n \times r}`, the two matrix products of
the method are

.. math::
    P = \mathrm{orth}(M Q), \qquad Q' = M^\top P, \qquad C(M) = P Q'^\top = P P^\top M,

so :math:`C(M)` is the orthogonal projection of the columns of :math:`M` onto :math:`\mathrm{span}(P)
\subseteq \mathrm{col}(M)`, and :math:`\|C(M) - M\|_F^2 = \|M\|_F^2 - \|P^\top M\|_F^2 \le \|M\|_F^2`
exactly (a projection). No uniform :math:`\delta > 0` exists (a :math:`Q` nearly orthogonal to the top
singular directions leaves almost all of :math:`M`), so the declared worst case is ``error_factor = 1``
and the typical error is measured (the conformance battery, ``tests/test_conform.py``). The message is :math:`P` and
:math:`Q'`: :math:`r(m + n)` float32 values.

Warm start. :meth:`PowerSGD.apply` (the stateless :class:`~simcomm.compress.Compressor` interface) draws a
fresh Gaussian :math:`Q` from ``rng`` every call; :meth:`PowerSGD.init` / :meth:`PowerSGD.step` carry
:math:`Q'` to the next call as explicit state (the paper's warm start: one power iteration per step
tracks the top singular subspace of a slowly changing gradient).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor, Message, register_compressor, setting
from simcomm.compress._quantize import _prepare, require_rng

__all__ = ["PowerSGD", "PowerSGDState"]


class PowerSGDState(NamedTuple):
    """The warm-start factor :math:`Q` of every row, shape ``(rows_of_x, n, r)``."""

    Q: np.ndarray


def _orth(P: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning each ``P[i]`` (batched reduced QR; the signs cancel in ``P P^T M``)."""
    return np.linalg.qr(P, mode="reduced")[0]


@register_compressor("powersgd")
@dataclass(frozen=True)
class PowerSGD(Compressor):
    r"""Rank-``rank`` PowerSGD of each row read as a ``rows x (d/rows)`` matrix; biased, ``32 r (m + n)`` bits.

    Examples
    --------
    >>> c = PowerSGD(rank=1, rows=2)
    >>> c.apply([1.0, 2.0, 2.0, 4.0], rng=0).round(12).tolist()   # a rank-1 matrix is kept exactly
    [1.0, 2.0, 2.0, 4.0]
    >>> c.bits(4)
    128
    >>> PowerSGD(rank=3, rows=2).bits(4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simcomm._errors.UserError: powersgd: rank = 3 is larger than the 2 x 2 matrix allows; use rank <= ... = 2
    """

    rank: int = setting("rank r of the approximation, 1 <= r <= min(m, n)", low=1)
    rows: int = setting("rows m of the matrix a vector is read as (a divisor of d; 0: the most square m)",
                        default=0, low=0)

    def __post_init__(self):  # noqa: D105
        if isinstance(self.rank, bool) or not isinstance(self.rank, (int, np.integer)) or self.rank < 1:
            raise UserError(f"powersgd: rank = {self.rank!r} is not allowed; use an integer rank >= 1")
        if isinstance(self.rows, bool) or not isinstance(self.rows, (int, np.integer)) or self.rows < 0:
            raise UserError(f"powersgd: rows = {self.rows!r} is not allowed; use a divisor of d (0: the most square)")

    def shape(self, d: int) -> tuple[int, int]:
        """``(m, n)``: the matrix a vector of length ``d`` is read as; a one-line error if ``rank`` does not fit."""
        m = self.rows
        if m == 0:  # the largest divisor of d not above sqrt(d)
            m = max(k for k in range(1, int(np.sqrt(d)) + 1) if d % k == 0)
        if d % m:
            raise UserError(f"powersgd: rows = {m} does not divide d = {d}; use a divisor of d (or rows = 0)")
        n = d // m
        if self.rank > min(m, n):
            raise UserError(f"powersgd: rank = {self.rank} is larger than the {m} x {n} matrix allows; use rank <= "
                            f"min(rows, d/rows) = {min(m, n)}")
        return m, n

    def bits(self, d: int) -> int:  # noqa: D102
        m, n = self.shape(d)
        return 32 * self.rank * (m + n)

    def error_factor(self, d: int) -> float:  # noqa: D102
        self.shape(d)
        return 1.0  # a projection: ||C(M) - M||^2 <= ||M||^2, and no uniform delta > 0 (module docstring)

    def init(self, x, *, rng) -> PowerSGDState:
        """Gaussian warm-start factors for the rows of ``x`` (an array or a shape), shape ``(rows, n, r)``."""
        shape = tuple(x) if isinstance(x, (tuple, list)) else np.shape(x)
        d = int(shape[-1])
        _, n = self.shape(d)
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        rng = np.random.default_rng(require_rng(rng, "powersgd"))
        return PowerSGDState(rng.standard_normal((rows, n, self.rank)))

    def _factors(self, x, Q):
        a, shape = _prepare(x, "powersgd")
        a = np.asarray(a)
        m, n = self.shape(a.shape[-1])
        M = a.reshape(-1, m, n)
        if Q.shape != (M.shape[0], n, self.rank):
            raise UserError(f"powersgd: state Q has shape {Q.shape}, expected {(M.shape[0], n, self.rank)}; build it "
                            "with init(x) for the same batch")
        P = _orth(M @ Q.astype(a.dtype, copy=False))  # product 1: M Q (m x r), orthonormalised
        Qn = np.swapaxes(M, 1, 2) @ P  # product 2: M^T P (n x r)
        return P, Qn, shape

    def step(self, x, state: PowerSGDState) -> tuple[np.ndarray, PowerSGDState]:
        """Compress the rows of ``x`` from the warm start ``state``: ``(C(x), new_state)``; ``state`` is kept."""
        P, Qn, shape = self._factors(x, state.Q)
        return (P @ np.swapaxes(Qn, 1, 2)).reshape(shape), PowerSGDState(Qn)

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return self.step(x, self.init(np.shape(x), rng=rng))[0]

    def _message(self, x, rng, value_dtype):
        P, Qn, _ = self._factors(x.astype(np.float32), self.init(x.shape, rng=rng).Q)
        scales = np.concatenate([P.reshape(-1), Qn.reshape(-1)]).astype(np.float32)
        return Message("coded", x.size, value_dtype, levels=np.zeros(0, np.int64), scales=scales, width=0)

    def decode(self, msg: Message) -> np.ndarray:  # noqa: D102
        m, n = self.shape(msg.d)
        s = msg.scales.astype(np.float64)
        P, Q = s[: m * self.rank].reshape(m, self.rank), s[m * self.rank:].reshape(n, self.rank)
        return (P @ Q.T).reshape(-1)
