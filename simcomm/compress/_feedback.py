r"""Error feedback (residual memory) around any compressor, as a pure (init, apply) pair.

Algorithm (rtopk.md section (d), the memory update of Stich et al. 2018 / Karimireddy et al. 2019):

.. math::
    p = g + e, \qquad m = C(p), \qquad e' = p - m,

the node sends ``m`` and keeps the residual ``e'`` for the next step. The state is an explicit
:class:`ErrorFeedbackState`; ``apply`` returns a new state and never mutates the old one.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

__all__ = ["ErrorFeedback", "ErrorFeedbackState", "with_error_feedback"]


class ErrorFeedbackState(NamedTuple):
    """Residual memory: what the compressor has not sent yet, one vector per node."""

    residual: np.ndarray


class ErrorFeedback(NamedTuple):
    """A compressor with error feedback as pure functions.

    ``init(x)`` returns a zero state shaped like ``x``; ``apply(g, state, rng=None)`` returns
    ``(message, new_state)``.
    """

    init: Callable
    apply: Callable


def with_error_feedback(compressor: Callable) -> ErrorFeedback:
    r"""Wrap ``compressor`` with residual memory.

    ``apply(g, state, rng=None)`` computes :math:`p = g + e`, sends :math:`m = C(p)` and keeps
    :math:`e' = p - m`, so :math:`p = m + e'` holds exactly (for an unscaled compressor such as
    :func:`~simcomm.compress.top_k` or :func:`~simcomm.compress.rtop_k` every entry of ``p`` ends up
    in exactly one of ``m`` and ``e'``).

    Parameters
    ----------
    compressor : callable
        ``compressor(p)`` or, when ``apply`` is given an ``rng``, ``compressor(p, rng=rng)``;
        returns an array shaped like ``p``. Bind ``k`` and friends with :func:`functools.partial`.

    Returns
    -------
    ErrorFeedback
        ``init(x)`` -> :class:`ErrorFeedbackState` of zeros shaped like ``x`` (an array or a shape);
        ``apply(g, state, rng=None)`` -> ``(message, ErrorFeedbackState)``.

    Examples
    --------
    >>> from functools import partial
    >>> from simcomm.compress import top_k
    >>> ef = with_error_feedback(partial(top_k, k=1))
    >>> state = ef.init(np.zeros(3))
    >>> msg, state = ef.apply(np.array([1.0, 0.5, 0.25]), state)
    >>> msg.tolist(), state.residual.tolist()
    ([1.0, 0.0, 0.0], [0.0, 0.5, 0.25])
    >>> msg, state = ef.apply(np.array([0.0, 0.75, 0.0]), state)  # the residual is sent later
    >>> msg.tolist(), state.residual.tolist()
    ([0.0, 1.25, 0.0], [0.0, 0.0, 0.25])
    """

    def init(x) -> ErrorFeedbackState:
        if isinstance(x, (tuple, list, int)):
            return ErrorFeedbackState(np.zeros(x))
        x = np.asarray(x)
        return ErrorFeedbackState(np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32)))

    def apply(g, state: ErrorFeedbackState, rng=None):
        p = np.asarray(g) + state.residual  # add back what was not sent before
        m = compressor(p) if rng is None else compressor(p, rng=rng)
        return m, ErrorFeedbackState(p - m)  # residual kept locally for the next step

    return ErrorFeedback(init, apply)
