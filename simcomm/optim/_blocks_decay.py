r"""Error feedback whose memory decays: the residual of SparseLoCo's pseudo-gradients and of DeMo's momentum.

.. math:: p = \beta e + u, \qquad m = C(p), \qquad e' = p - m,

per worker; the worker sends ``m``. With :math:`\beta = 1` it is error feedback (``error_feedback(EF(C))``,
the same numbers); with :math:`C` the identity nothing is kept and it is the identity. DeMo (Peng,
Quesnelle and Kingma 2024 [R]) writes it as a momentum :math:`m \leftarrow \beta m + g` from which the
transmitted part is subtracted; SparseLoCo (Sarfi et al. 2025 [R]) as an error-feedback buffer with decay
:math:`\beta` on the pseudo-gradients. Between two messages the memory is a geometric sum of the
directions not yet sent, which is why it can stand in for an outer momentum.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.optim._algebra import Transform

__all__ = ["decayed_feedback", "DecayedFeedbackState"]


class DecayedFeedbackState(NamedTuple):
    """What every worker has not sent yet, ``(R, n, d)``."""

    residual: np.ndarray


def decayed_feedback(compressor, beta: float) -> Transform:
    r"""Error feedback with memory decay ``beta`` in ``[0, 1]`` around ``compressor``, per worker (module docstring)."""
    beta = float(beta)
    if not 0.0 <= beta <= 1.0:
        raise UserError(f"feedback decay beta = {beta!r} is not allowed; use a number in [0, 1]")

    def init(x, ctx):
        return DecayedFeedbackState(np.zeros((x.shape[0], ctx.problem.n, x.shape[-1])))

    def update(u, state, x, ctx):
        p = beta * state.residual + u
        d = p.shape[-1]
        m = np.asarray(compressor.apply(p.reshape(-1, d), rng=ctx.rng), dtype=p.dtype).reshape(p.shape)
        return m, DecayedFeedbackState(p - m)

    return Transform(init, update)
