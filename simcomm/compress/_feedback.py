r"""Error feedback (residual memory) around any compressor, as a pure (init, apply) pair.

Algorithm (rtopk.md section (d), the memory update of Stich et al. 2018 / Karimireddy et al. 2019):

.. math::
    p = g + e, \qquad m = C(p), \qquad e' = p - m,

the node sends ``m`` and keeps the residual ``e'`` for the next step. The state is an explicit
:class:`ErrorFeedbackState`; ``apply`` returns a new state and never mutates the old one.
:func:`simcomm.optim.ef_sgd` runs the same update for all workers at once (fused with the optimiser step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from simcomm.compress._compressor import Compressor

__all__ = ["ErrorFeedback", "ErrorFeedbackState"]


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
