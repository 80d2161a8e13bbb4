r"""What a run of gradient tracking, exact diffusion or push-sum records and watches: :class:`NodeWatch`.

A watch of :func:`simcomm.optim.run` for one decentralized run (no replicate axis). It records a few
scalars of the nodes' state on the schedule :func:`~simcomm.optim._driver.record_steps` (each record
``(T,)``, ``NaN`` until made) and applies the driver's divergence rule
(:func:`~simcomm.optim._driver.diverged`, on scalars) at every recorded step after the start: a run whose watched
values are not finite, or whose first value exceeds ``blowup`` times (1 + its value at the start),
stops there. ``diverged_at`` holds that step, the records from it on stay ``NaN`` (the step schedule
is kept whole) and the trace's ``x`` is the state it stopped in.

=========================  ==========================================  =======================
watch                      records                                     stops when
=========================  ==========================================  =======================
:func:`tracking_watch`     ``node_dist_sq``, ``consensus``, ``subopt``  any not finite, or the
                                                                       distance above its limit
:func:`pushsum_sgd_watch`  ``node_dist_sq``, ``weight_spread``         the distance not finite
:func:`pushsum_watch`      ``max_error``, ``mean_sq_error``,           any not finite
                           ``weight_spread``
=========================  ==========================================  =======================
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from simcomm.optim._driver import record_steps
from simcomm.optim._trace import Trace, diverged_at_step

__all__ = ["NodeWatch", "tracking_watch", "pushsum_watch", "pushsum_sgd_watch", "node_dist"]


def node_dist(problem, X) -> float:
    r""":math:`\frac1n\sum_i\|x_i - x^\star\|^2` for the nodes' models ``X`` ``(n, d)``."""
    E = X - problem.x_star
    return float(np.sum(E * E) / X.shape[0])


def _models(debias: bool) -> Callable:
    return (lambda s: s.z) if debias else (lambda s: s.x)


class NodeWatch:
    """Records one decentralized run and stops it at a divergence (module doc).

    Parameters
    ----------
    steps, record_every : int
        The schedule.
    names : sequence of str
        The records, in the order ``measure`` returns them.
    measure : callable
        ``measure(s) -> tuple of float`` for the iterate ``s``.
    checked : int, optional
        How many leading values the divergence rule watches (default: all).
    blowup : float, optional
        The first value's limit is ``blowup * (1 + its value at the start)`` (default: none).
    models : callable, optional
        The trace's ``x`` from the last iterate (default ``s.x``).
    """

    def __init__(self, steps: int, record_every: int, names, measure: Callable, *, checked: int | None = None,
                 blowup: float | None = None, models: Callable | None = None):
        self.steps_ = record_steps(steps, record_every)
        self.names = tuple(names)
        self.records = {name: np.full(self.steps_.size, np.nan) for name in self.names}
        self.measure = measure
        self.checked = len(self.names) if checked is None else int(checked)
        self.blowup = blowup
        self.models = models if models is not None else (lambda s: s.x)
        self.limits = [math.inf] * self.checked
        self.diverged_at: int | None = None
        #: whether the run has not diverged, shape ``(1,)``
        self.alive = np.ones(1, bool)
        self.done = False
        self.j = 0  # records made

    def check(self, k: int, s, bits=0.0):
        """Record the iterate ``s`` if step ``k`` is on the schedule; stop at a divergence; returns ``s``."""
        if self.j >= self.steps_.size or self.steps_[self.j] != k:
            return s
        vals = self.measure(s)
        if k == 0:
            if self.blowup is not None:
                self.limits[0] = self.blowup * (1.0 + vals[0])
        elif any(not math.isfinite(v) or v > lim for v, lim in zip(vals[: self.checked], self.limits)):
            # the driver's rule (diverged: not finite, or above the limit), on the few scalars recorded
            self.diverged_at, self.done, self.alive = k, True, np.zeros(1, bool)
            return s
        for name, v in zip(self.names, vals):
            self.records[name][self.j] = v
        self.j += 1
        return s

    def trace(self, s) -> Trace:
        return Trace(self.steps_, self.records, self.models(s), diverged_at_step(self.diverged_at))


def tracking_watch(problem, steps: int, record_every: int = 1, blowup: float = 1e12) -> NodeWatch:
    r"""Gradient tracking's and exact diffusion's records: node distance, consensus, suboptimality.

    ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, ``subopt`` :math:`f(\bar x) - f^\star`; the distance
    may not exceed ``blowup`` times (1 + its start).
    """
    from simcomm.models import suboptimality

    n = problem.n

    def measure(s):
        X = s.x
        D = X - X.mean(axis=0)
        return node_dist(problem, X), float(np.sum(D * D) / n), suboptimality(problem, X.mean(axis=0))

    return NodeWatch(steps, record_every, ("node_dist_sq", "consensus", "subopt"), measure, blowup=blowup)


def pushsum_sgd_watch(problem, steps: int, record_every: int = 1, debias: bool = True) -> NodeWatch:
    r"""Push-sum SGD's records: the models' ``node_dist_sq`` and ``weight_spread`` (``max w / min w``).

    The models are the ratios ``z`` (the numerators with ``debias=False``); only the distance is watched.
    """
    models = _models(debias)

    def measure(s):
        return node_dist(problem, models(s)), float(s.w.max() / s.w.min())

    return NodeWatch(steps, record_every, ("node_dist_sq", "weight_spread"), measure, checked=1, models=models)


def pushsum_watch(start, steps: int, record_every: int = 1, debias: bool = True) -> NodeWatch:
    r"""Push-sum consensus's records against the exact average of the ``start`` numerators.

    ``max_error`` :math:`\max_i\|z_i - \bar x^0\|_\infty`, ``mean_sq_error``
    :math:`\frac1n\sum_i\|z_i - \bar x^0\|^2` (the numerators with ``debias=False``), ``weight_spread``.
    """
    models = _models(debias)
    target = start.x.mean(axis=0)
    n = start.x.shape[0]

    def measure(s):
        E = models(s) - target
        return float(np.abs(E).max()), float(np.sum(E * E) / n), float(s.w.max() / s.w.min())

    return NodeWatch(steps, record_every, ("max_error", "mean_sq_error", "weight_spread"), measure, models=models)
