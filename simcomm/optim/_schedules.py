r"""Step-size schedules shared by every optimiser of :mod:`simcomm.optim`.

One function, :func:`step_size` ``(lr, k, schedule, k0, steps)``, gives the step at iteration ``k``
(0-based):

* ``constant``: :math:`\eta_k = \eta`;
* ``inv_sqrt``: :math:`\eta_k = \eta/\sqrt{1 + k/k_0}` (one run stands for the tuned constant steps
  :math:`\gamma \propto 1/\sqrt{T}` of papers/exponential_graph.md C3);
* ``cosine``: :math:`\eta_k = \frac{\eta}{2}(1 + \cos(\pi k/T))` over a horizon of ``steps`` = ``T``
  (decays to 0 at ``T``).

``ef_learning_rate`` (``EF_SCHEDULES``) of error-feedback SGD is the same function with the horizon
as its third argument; both old names stay importable.
"""

from __future__ import annotations

import math

from simcomm._validate import one_of

__all__ = ["SCHEDULES", "EF_SCHEDULES", "step_size", "ef_learning_rate"]

#: Step-size schedules (module doc).
SCHEDULES = ("constant", "inv_sqrt", "cosine")
#: The former name used by error-feedback SGD (the same schedules).
EF_SCHEDULES = SCHEDULES


def step_size(lr: float, k: int, schedule: str = "constant", k0: float = 10.0, steps: int | None = None) -> float:
    r"""Step size at iteration ``k`` (0-based) under ``schedule`` (module doc).

    Parameters
    ----------
    lr : float
        Base step size.
    k : int
        Iteration.
    schedule : {"constant", "inv_sqrt", "cosine"}
    k0 : float
        Decay scale of ``inv_sqrt``.
    steps : int, optional
        Horizon of ``cosine`` (required there).

    Examples
    --------
    >>> step_size(0.1, 30, "inv_sqrt", 10), step_size(0.1, 5, "cosine", steps=10)
    (0.05, 0.05)
    """
    one_of(schedule, SCHEDULES, "schedule")
    if schedule == "constant":
        return float(lr)
    if schedule == "inv_sqrt":
        return float(lr) / math.sqrt(1.0 + k / k0)
    if steps is None:
        from simcomm._errors import UserError

        raise UserError("the cosine schedule decays over a horizon: pass steps= (the number of iterations)")
    return 0.5 * lr * (1.0 + math.cos(math.pi * k / steps))


def ef_learning_rate(lr: float, step: int, steps: int, schedule: str = "constant") -> float:
    r"""Former name of :func:`step_size` with the horizon third: :math:`\eta` or cosine decay to 0.

    Examples
    --------
    >>> ef_learning_rate(0.1, 5, 10), ef_learning_rate(0.1, 5, 10, "cosine")
    (0.1, 0.05)
    """
    return step_size(lr, step, schedule, steps=steps)
