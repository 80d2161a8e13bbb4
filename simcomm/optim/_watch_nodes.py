r"""What a decentralized run records and watches: :class:`NodeWatch`, the nodes' measures and message counts.

The watch of the ``"nodes"`` family (:class:`~simcomm.models.NodeProblem`: ``n`` nodes, one ``(n, d)``
iterate) for :func:`simcomm.optim.run`. A run is one trajectory (no replicate axis). It is measured at
the recorded steps only (a measurement costs about as much as a step), by a *measure* function
``measure(problem, X) -> values`` whose values are recorded by name. The divergence rule of
:mod:`simcomm.optim._driver` is applied at those steps: a value that is not finite, or a *watched*
value above ``blowup`` times (1 + its value at the start), stops the run and records ``diverged_at``;
the records it did not make hold the fill (``inf`` for error-like records, the driver's convention).
Counters that follow from the schedule alone (messages, bytes) are added to the trace for every
recorded step.

Examples
--------
>>> messages_sent(np.array([1.0, 2.0]), np.array([0, 1, 2, 5])).tolist()
[0.0, 1.0, 3.0, 7.0]
"""

from __future__ import annotations

import numpy as np

from simcomm.backends import array_namespace, to_host
from simcomm.optim._driver import Recorder, diverged
from simcomm.optim._trace import Trace

__all__ = ["NodeWatch", "measure_nodes", "NODE_RECORDS", "gossip_counters", "messages_sent", "BYTES"]

#: the records of :func:`measure_nodes`, in its order
NODE_RECORDS = ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt")
BYTES = 8  # float64 on the wire


def measure_nodes(problem, X) -> tuple:
    r"""The nodes' state at a recorded step: consensus, :math:`\|\nabla f(\bar x)\|^2`, mean node gradient, gap.

    ``consensus`` :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, ``grad_norm_sq``
    :math:`\|\nabla f(\bar x)\|^2`, ``node_grad_norm_sq`` :math:`\frac1n\sum_i\|\nabla f(x_i)\|^2` and
    ``subopt`` :math:`f(\bar x) - f^\star` (:data:`NODE_RECORDS`). Computed in ``X``'s namespace; only the
    four scalars leave a device.
    """
    from simcomm.models import global_gradient, global_gradients, suboptimality

    xp = array_namespace(X)
    xbar = X.mean(axis=0)
    D = X - xbar
    cons = float(xp.sum(D * D) / X.shape[0])
    del D
    g = global_gradient(problem, xbar)
    G = global_gradients(problem, X)
    return cons, float(g @ g), float(xp.sum(G * G) / X.shape[0]), suboptimality(problem, xbar)


def messages_sent(per_layer, steps) -> np.ndarray:
    """Messages per node after each of ``steps`` updates, cycling through ``per_layer`` (one entry per layer).

    Examples
    --------
    >>> messages_sent(np.array([1.0, 1.0, 2.0]), np.array([0, 3, 4])).tolist()
    [0.0, 4.0, 5.0]
    """
    per_layer = np.asarray(per_layer, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.int64)
    cum = np.r_[0.0, np.cumsum(per_layer)]
    return (steps // per_layer.size) * cum[-1] + cum[steps % per_layer.size]


def gossip_counters(per_layer, bytes_per_message: float):
    """``counters(steps) -> {"messages", "bytes"}``: cumulative messages and bytes per node at ``steps``."""

    def counters(steps):
        msgs = messages_sent(per_layer, steps)
        return {"messages": msgs, "bytes": msgs * bytes_per_message}

    return counters


class NodeWatch:
    r"""Records a decentralized run by name from ``measure`` and applies the divergence rule (module doc).

    Parameters
    ----------
    problem : NodeProblem
        What ``measure`` reads (in the namespace of the run's iterates).
    measure : callable
        ``measure(problem, X) -> values``, one value per name of ``names``.
    names : tuple of str
        The records, in the order of ``measure``'s values.
    steps, record_every : int
        The schedule (:func:`simcomm.optim._driver.record_steps`).
    blowup : float
        A watched value above ``blowup * (1 + its start)`` has diverged.
    watched : tuple of str
        The names with a limit (every value is checked for being finite).
    counters : callable, optional
        ``counters(steps) -> dict`` of records that follow from the schedule (messages, bytes).
    error_like : bool
        The records' fill once diverged: ``inf`` (error-like) or ``NaN`` (:mod:`simcomm.optim._driver`).
    """

    def __init__(self, problem, measure, names, steps: int, record_every: int, *, blowup: float = np.inf,
                 watched=(), counters=None, error_like: bool = True):
        self.problem, self.measure, self.names = problem, measure, tuple(names)
        self.blowup, self.watched, self.counters = blowup, tuple(watched), counters
        kind = {"errors": self.names} if error_like else {"others": self.names}
        self.rec = Recorder(steps, record_every, **kind)
        self.limits = None
        self.done = False

    @property
    def alive(self) -> np.ndarray:
        """Whether the run has not diverged (one entry: a decentralized run is one trajectory)."""
        return self.rec.alive

    def start_limits(self, values) -> np.ndarray:
        """The limits a run measuring ``values`` at its start is held to (``inf``: only finiteness)."""
        return np.array([self.blowup * (1.0 + v) if name in self.watched else np.inf
                         for name, v in zip(self.names, values)])

    def check(self, k: int, x, bits=None):
        """Measure ``x`` at a recorded step ``k``: record it, or stop the run if it has diverged; returns ``x``."""
        if self.rec.due != k:
            return x
        values = np.array(self.measure(self.problem, x))
        if self.limits is None:  # the start
            self.limits = self.start_limits(values)
        elif diverged(values, self.limits).any():
            self.rec.diverge(k, [True])
            self.done = True
            return x
        self.rec.put(dict(zip(self.names, values[:, None])))
        return x

    def fill(self, rows, at: int) -> None:
        """Take the records of a run made elsewhere (a compiled loop).

        ``rows[j]`` holds the values at recorded step ``j`` (the fill where none was made), ``at`` the
        step the run diverged at (or -1).
        """
        for c, name in enumerate(self.names):
            self.rec.records[name][0] = rows[:, c]
        self.rec.j = rows.shape[0]
        if at >= 0:
            self.rec.diverge(at, [True])
            self.done = True

    def trace(self, x) -> Trace:
        """The trace: every planned record (the fill where none was made), the counters, ``x`` on the host."""
        records = {name: self.rec.records[name][0] for name in self.names}
        if self.counters is not None:
            records.update(self.counters(self.rec.step))
        return Trace(self.rec.step, records, to_host(x), self.rec.diverged_at)
