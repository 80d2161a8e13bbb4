r"""Error feedback (residual memory) around any compressor, as pure (init, apply) pairs.

:class:`ErrorFeedback` (below), :class:`EF21` (the node keeps the server's estimate of its gradient and
sends the compressed change) and :class:`ErrorFeedbackLR` (the memory rescaled when the step changes).

Algorithm (rtopk.md section (d), the memory update of Stich et al. 2018 / Karimireddy et al. 2019):

.. math::
    p = g + e, \qquad m = C(p), \qquad e' = p - m,

the node sends ``m`` and keeps the residual ``e'`` for the next step. The state is an explicit
:class:`ErrorFeedbackState`; ``apply`` returns a new state and never mutates the old one.
:func:`simcomm.optim.ef_sgd` runs the same update for all workers at once (fused with the optimiser step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor

__all__ = ["ErrorFeedback", "ErrorFeedbackState", "EF21", "EF21State", "ErrorFeedbackLR", "ErrorFeedbackLRState"]


class ErrorFeedbackState(NamedTuple):
    """Residual memory: what the compressor has not sent yet, one vector per node."""

    residual: np.ndarray


@dataclass(frozen=True)
class ErrorFeedback:
    r"""Any :class:`~simcomm.compress.Compressor` with residual memory, as pure functions.

    ``apply(g, state, rng=...)`` computes :math:`p = g + e`, sends :math:`m = C(p)` and keeps
    :math:`e' = p - m`, so :math:`p = m + e'` holds exactly (for an unscaled compressor such as
    :class:`~simcomm.compress.TopK` or :class:`~simcomm.compress.RTopK` every entry of ``p`` ends up
    in exactly one of ``m`` and ``e'``).

    Parameters
    ----------
    compressor : Compressor
        Applied to ``p`` with the ``rng`` and ``backend`` given to :meth:`apply`.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = ErrorFeedback(TopK(1))
    >>> state = ef.init(np.zeros(3))
    >>> msg, state = ef.apply(np.array([1.0, 0.5, 0.25]), state, rng=0)
    >>> msg.tolist(), state.residual.tolist()
    ([1.0, 0.0, 0.0], [0.0, 0.5, 0.25])
    >>> msg, state = ef.apply(np.array([0.0, 0.75, 0.0]), state, rng=0)  # the residual is sent later
    >>> msg.tolist(), state.residual.tolist()
    ([0.0, 1.25, 0.0], [0.0, 0.0, 0.25])
    """

    compressor: Compressor

    def init(self, x) -> ErrorFeedbackState:
        """Zero residual shaped like ``x`` (an array, or a shape)."""
        if isinstance(x, (tuple, list, int)):
            return ErrorFeedbackState(np.zeros(x))
        x = np.asarray(x)
        return ErrorFeedbackState(np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32)))

    def apply(self, g, state: ErrorFeedbackState, *, rng, backend=None) -> tuple[np.ndarray, ErrorFeedbackState]:
        """Return ``(message, new_state)`` for the gradient ``g``; ``state`` is not modified."""
        p = np.asarray(g) + state.residual  # add back what was not sent before
        m = self.compressor.apply(p, rng=rng, backend=backend)
        return m, ErrorFeedbackState(p - m)  # residual kept locally for the next step


class EF21State(NamedTuple):
    """EF21 memory: each node's running estimate ``h`` of its gradient (what the server holds for it)."""

    estimate: np.ndarray


@dataclass(frozen=True)
class EF21:
    r"""EF21 (Richtárik, Sokolov, Fatkhullin 2021) around any compressor, as pure functions.

    .. math:: c = C(g - h), \qquad h' = h + c,

    the node sends ``c`` and the server, which holds the same ``h``, uses ``h'`` as the node's gradient.
    ``apply`` returns ``(h', new_state)`` (the direction the server averages); the message is
    ``h' - h``. With a contraction :math:`C`, :math:`\|h' - g\|^2 \le (1-\delta)\|h - g\|^2`.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = EF21(TopK(1))
    >>> h, state = ef.apply(np.array([1.0, 0.5]), ef.init(2), rng=0)
    >>> h.tolist(), ef.apply(np.array([1.0, 0.5]), state, rng=0)[0].tolist()
    ([1.0, 0.0], [1.0, 0.5])
    """

    compressor: Compressor

    def init(self, x) -> EF21State:
        """Zero estimate shaped like ``x`` (an array, or a shape)."""
        return EF21State(ErrorFeedback(self.compressor).init(x).residual)

    def apply(self, g, state: EF21State, *, rng, backend=None) -> tuple[np.ndarray, EF21State]:
        """Return ``(h', new_state)`` for the gradient ``g``; ``state`` is not modified."""
        c = self.compressor.apply(np.asarray(g) - state.estimate, rng=rng, backend=backend)
        h = state.estimate + c
        return h, EF21State(h)


class ErrorFeedbackLRState(NamedTuple):
    """Residual memory and the step size it was accumulated at."""

    residual: np.ndarray
    lr: float


@dataclass(frozen=True)
class ErrorFeedbackLR:
    r"""Error feedback with the learning-rate correction, as pure functions.

    Plain error feedback adds the residual as it is; when the step size changes from
    :math:`\eta_{t-1}` to :math:`\eta_t` the residual is a gradient scaled for the old step, so the
    corrected update rescales it (the memory of :math:`x`-space error feedback, Stich et al. 2018):

    .. math:: p = g + \frac{\eta_{t-1}}{\eta_t} e, \qquad m = C(p), \qquad e' = p - m.

    With a constant step this is :class:`ErrorFeedback` exactly.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = ErrorFeedbackLR(TopK(1))
    >>> m, s = ef.apply(np.array([1.0, 0.5]), ef.init(2), lr=1.0, rng=0)
    >>> m, s = ef.apply(np.array([0.0, 0.0]), s, lr=0.5, rng=0)   # the residual 0.5 counts twice
    >>> m.tolist()
    [0.0, 1.0]
    """

    compressor: Compressor

    def init(self, x) -> ErrorFeedbackLRState:
        """Zero residual shaped like ``x``; no step seen yet."""
        return ErrorFeedbackLRState(ErrorFeedback(self.compressor).init(x).residual, 0.0)

    def apply(self, g, state: ErrorFeedbackLRState, *, lr: float, rng, backend=None):
        """Return ``(message, new_state)`` for ``g`` at step size ``lr`` (> 0); ``state`` is not modified."""
        if not (isinstance(lr, (int, float, np.floating)) and math.isfinite(lr) and lr > 0):
            raise UserError(f"ErrorFeedbackLR: lr = {lr!r} must be a finite step size > 0 (the memory is rescaled "
                            "by the ratio of consecutive step sizes)")
        ratio = state.lr / lr if state.lr > 0 else 1.0
        p = np.asarray(g) + ratio * state.residual
        m = self.compressor.apply(p, rng=rng, backend=backend)
        return m, ErrorFeedbackLRState(p - m, float(lr))
