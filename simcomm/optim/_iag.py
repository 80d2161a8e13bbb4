r"""Compressed incremental aggregated gradient (IAG) (notes ``urq_delay.md`` A3).

The master keeps the last quantized gradient of every worker, :math:`u_i`, initialised with
:math:`u_i = Q_i(\nabla f_i(x_0))`. At step :math:`k` one worker :math:`i_k` communicates:

.. math:: u_{i_k} \leftarrow Q_{i_k}(\nabla f_{i_k}(x_k)),\qquad x_{k+1} = x_k - \gamma\,\frac1n\sum_i u_i,

with :math:`i_k = k \bmod n` (``order="cyclic"``, staleness at most :math:`n-1`) or uniform at random
(``order="random"``, unbounded staleness). The sum :math:`\sum_i u_i` is updated in place
(:math:`O(d)` per step) and recomputed from the table every ``n`` steps so rounding does not drift.
It is the named method ``"iag"`` (:mod:`simcomm.optim.methods.iag`) run by :func:`simcomm.optim.run`.
"""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm.backends import entry_point
from simcomm.optim._blocks import IAG_ORDERS
from simcomm.optim._loop import run
from simcomm.optim._trace import Trace
from simcomm.optim._watch import check_compressor, check_lr, check_steps

__all__ = ["compressed_iag", "IAG_ORDERS"]



@entry_point
def compressed_iag(problem, compressor, *, lr: float, steps: int, order: str = "cyclic", x0=None,
                   replicates: int = 1, record_every: int = 1, track_grad: bool = False, stop_gap=None, rng=None,
                   backend=None) -> Trace:
    r"""Compressed IAG: one worker refreshes its quantized gradient per step.

    Parameters
    ----------
    problem : simcomm.models.Problem
    compressor : simcomm.compress.Compressor
    lr : float
        Step size, ``> 0``.
    steps : int
        Number of master iterations (each carries one message, plus ``n`` messages at start).
    order : {"cyclic", "random"}
        Which worker communicates at each step.
    x0, replicates, record_every, track_grad, stop_gap, rng, backend
        As in :func:`~simcomm.optim.compressed_gd`.

    Returns
    -------
    Trace
        As :func:`~simcomm.optim.compressed_gd`'s; ``records["bits"]`` counts the ``n`` initial messages
        and one message per step.

    Examples
    --------
    >>> from simcomm.models import quadratic
    >>> from simcomm.compress import Identity
    >>> p = quadratic(4, 10, L=1.0, mu=0.5, sigma2=1.0, rng=0)
    >>> tr = compressed_iag(p, Identity(), lr=0.2, steps=400)
    >>> bool(tr.dist2[0, -1] < 1e-10)
    True
    """
    from simcomm.optim._registry import build_method

    compressor = check_compressor(compressor)
    lr = check_lr(lr)
    steps = check_steps(steps)
    if order not in IAG_ORDERS:
        raise UserError(f"order = {order!r} is not allowed; use 'cyclic' or 'random'")
    return run(problem, build_method("iag", compressor=compressor, lr=lr, order=order), steps, rng=rng, x0=x0,
               replicates=replicates, record_every=record_every, track_grad=track_grad, stop_gap=stop_gap)
