r"""What a gossip run records and watches: the watches of :func:`simcomm.optim.run` for the gossip methods.

A gossip method's iterate is the nodes' state (:mod:`simcomm.optim._blocks_gossip`); each watch below
reads it at the steps of :func:`~simcomm.optim._driver.record_steps` and keeps the conventions of its
method's records, which are one run each (no replicate axis):

:class:`ConsensusWatch` (CHOCO-Gossip)
    ``consensus_ratio`` and ``mean_drift``; checked at every step: a ratio that passes ``blowup`` (or is
    NaN) stops the run, and that value is recorded in the next slot, so "diverged" reads as a large error.
:class:`NodeWatch` (CHOCO-SGD)
    ``node_dist_sq``, ``consensus``, ``copy_gap``; checked at the recorded steps only: a non-finite
    record, or ``node_dist_sq`` above ``blowup * (1 + node_dist_sq[0])``, stops the run unrecorded.
:class:`LinkWatch` (unreliable gossip)
    ``mean_sq_ratio`` and ``kept_fraction``; never stops.

Every trace keeps the whole schedule in ``step``; records a stopped run did not reach hold ``NaN``, and
``diverged_at`` holds the step it stopped at (``-1`` where it did not).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.optim._driver import record_steps
from simcomm.optim._trace import Trace, diverged_at_step

__all__ = ["ConsensusWatch", "NodeWatch", "LinkWatch", "consensus_error", "run_watched"]


def consensus_error(X) -> float:
    r""":math:`\sum_i\|x_i - \bar x\|^2` of the rows of ``X``."""
    D = X - X.mean(axis=0)
    return float(np.sum(D * D))


class _Watch:
    """A schedule, its records (``NaN`` until made), and the run's stop (module doc)."""

    names: tuple = ()

    def __init__(self, steps: int, record_every: int):
        self.step = record_steps(steps, record_every)
        self._due = self.step.tolist()  # compared with Python ints at every step
        self.records = {name: np.full(self.step.size, np.nan) for name in self.names}
        self.j = 1  # the start is record 0
        self.stopped_at = None
        self.alive = np.ones(1, bool)

    @property
    def done(self) -> bool:
        """Whether the run has stopped (diverged)."""
        return self.stopped_at is not None

    def due(self, k: int) -> bool:
        """Whether step ``k`` is the next recorded step."""
        return self.j < len(self._due) and self._due[self.j] == k

    def put(self, values) -> None:
        """Store one record per name in the next slot."""
        for name, v in zip(self.names, values):
            self.records[name][self.j] = v
        self.j += 1

    def stop(self, k: int) -> None:
        """The run diverged at step ``k``."""
        self.stopped_at = k
        self.alive[:] = False

    def trace(self, state) -> Trace:
        """The run's :class:`~simcomm.optim.Trace` (its final state's iterates ``x``)."""
        return Trace(self.step, self.records, state.x, diverged_at_step(self.stopped_at))


class ConsensusWatch(_Watch):
    r"""CHOCO-Gossip's records: ``consensus_ratio`` :math:`e_t/e_0` and ``mean_drift``; stops past ``blowup``.

    ``e0`` (:func:`consensus_error` of ``X0``) must be ``> 0`` for the ratio to mean anything; the
    caller checks it.
    """

    names = ("consensus_ratio", "mean_drift")

    def __init__(self, X0, steps: int, record_every: int, blowup: float = 1e6):
        super().__init__(steps, record_every)
        self.e0 = consensus_error(X0)
        self.mean0 = X0.mean(axis=0)
        self.blowup = blowup
        self.records["consensus_ratio"][0], self.records["mean_drift"][0] = 1.0, 0.0

    def check(self, k: int, state, bits=None):
        """Watch step ``k`` (record 0 is the start's, set already)."""
        if k == 0:
            return state
        r = consensus_error(state.x) / self.e0
        stop = not (r <= self.blowup)  # NaN stops too
        if stop or self.due(k):
            self.put((r, float(np.abs(state.x.mean(axis=0) - self.mean0).max())))
        if stop:
            self.stop(k)
        return state


class NodeWatch(_Watch):
    r"""A decentralized run's records on a :class:`~simcomm.models.NodeProblem` (module doc).

    ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2` and ``copy_gap`` :math:`\frac1n\|X - \hat X\|_F^2`
    (the state's public copies ``x_hat``).
    """

    names = ("node_dist_sq", "consensus", "copy_gap")

    def __init__(self, problem, steps: int, record_every: int, blowup: float = 1e12):
        super().__init__(steps, record_every)
        self.p = problem
        self.blowup = blowup
        self.limit = None

    def measure(self, state):
        n = self.p.n
        E = state.x - self.p.x_star
        D = state.x - state.x.mean(axis=0)
        H = state.x - state.x_hat
        return float(np.sum(E * E) / n), float(np.sum(D * D) / n), float(np.sum(H * H) / n)

    def check(self, k: int, state, bits=None):
        """Record step ``k`` if it is on the schedule; a non-finite or blown-up record stops the run."""
        if k == 0:
            self.j = 0
            self.put(self.measure(state))
            self.limit = self.blowup * (1.0 + self.records["node_dist_sq"][0])
        elif self.due(k):
            vals = self.measure(state)
            if not all(map(math.isfinite, vals)) or vals[0] > self.limit:
                self.stop(k)
            else:
                self.put(vals)
        return state


class LinkWatch(_Watch):
    r"""Unreliable gossip's records: ``mean_sq_ratio`` (to the start's average) and ``kept_fraction``.

    ``mean_sq_ratio`` is :math:`\sum_i\|x_i - \bar x^{(0)}\|^2 / \sum_i\|x_i^{(0)} - \bar x^{(0)}\|^2`;
    ``kept_fraction`` the edges that worked (the state's ``kept``) over ``n_edges`` per step so far.
    """

    names = ("mean_sq_ratio", "kept_fraction")

    def __init__(self, X0, n_edges: int, steps: int, record_every: int):
        super().__init__(steps, record_every)
        self.target = X0.mean(axis=0)
        self.e0 = float(np.sum((X0 - self.target) ** 2))
        self.n_edges = n_edges
        self.records["mean_sq_ratio"][0], self.records["kept_fraction"][0] = 1.0, 1.0

    def check(self, k: int, state, bits=None):
        """Record step ``k`` if it is on the schedule."""
        if k > 0 and self.due(k):
            self.put((float(np.sum((state.x - self.target) ** 2)) / self.e0,
                      state.kept / (k * max(self.n_edges, 1))))
        return state


def run_watched(problem, method, steps: int, start, watch, *, rng, backend=None) -> Trace:
    """:func:`simcomm.optim.run` of ``method`` from the nodes' state ``start`` under ``watch``.

    ``steps = 0`` is the start's records alone (the loop makes at least one update).
    """
    from simcomm.optim._loop import run

    if steps == 0:
        return watch.trace(watch.check(0, start))
    return run(problem, method, steps, rng=rng, x0=start, backend=backend, watch=watch)
