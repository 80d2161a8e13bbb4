r"""What a decentralized run records and watches: one :class:`NodeWatch`, configured per family.

The watch of :func:`simcomm.optim.run` for the ``"nodes"`` and ``"consensus"`` families: ``n`` nodes, one
trajectory (no replicate axis). A *measure* function ``measure(problem, x, k) -> values`` reads the
method's iterate ``x`` at step ``k`` (the nodes' ``(n, d)`` models, or a state such as a
:class:`~simcomm.optim.GTState`) and its values are recorded by name on the schedule of
:func:`~simcomm.optim._driver.record_steps`; the whole schedule is kept in ``Trace.step``. The
divergence rule of :mod:`simcomm.optim._driver` is applied after the start: a *checked* value that is
not finite, or a *watched* value above its limit (``blowup`` times 1 + its value at the start, or
``blowup`` itself), stops the run and records ``diverged_at``; the records it did not make hold the
fill (``inf`` for error-like records, ``NaN`` otherwise). Counters that follow from the schedule alone
(messages, bytes) are added to the trace for every recorded step.

What the families configure (each a function below; every convention is the one its records were
published with):

``dsgd_watch`` (:mod:`simcomm.optim._decentralized`)
    :data:`NODE_RECORDS` plus ``messages`` and ``bytes``; any value not finite, or the consensus error
    or ``grad_norm_sq`` above its limit, stops the run; fill ``inf``.
:func:`tracking_watch` (gradient tracking, exact diffusion), :func:`choco_sgd_watch` (CHOCO-SGD)
    ``node_dist_sq``, ``consensus``, ``subopt`` (``copy_gap``); any not finite, or the distance above
    its limit; fill ``NaN``.
:func:`pushsum_sgd_watch`, :func:`pushsum_watch`
    the ratios' (or numerators') distance and ``weight_spread``; the distance not finite (push-sum
    SGD) or any value not finite (push-sum); fill ``NaN``.
:func:`consensus_watch` (CHOCO-Gossip)
    ``consensus_ratio``, ``mean_drift``; the ratio past ``blowup`` (checked at every step, and that
    value recorded); fill ``NaN``.
:func:`link_watch` (unreliable gossip)
    ``mean_sq_ratio``, ``kept_fraction``; never stops.

Examples
--------
>>> messages_sent(np.array([1.0, 2.0]), np.array([0, 1, 2, 5])).tolist()
[0.0, 1.0, 3.0, 7.0]
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import array_namespace, to_host
from simcomm.optim._driver import Recorder, diverged
from simcomm.optim._trace import Trace

__all__ = ["NodeWatch", "measure_nodes", "NODE_RECORDS", "gossip_counters", "messages_sent", "BYTES",
           "tracking_watch", "pushsum_watch", "pushsum_sgd_watch", "choco_sgd_watch", "consensus_watch",
           "link_watch", "node_dist", "consensus_error", "check_schedule"]

#: the records of :func:`measure_nodes`, in its order
NODE_RECORDS = ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt")
BYTES = 8  # float64 on the wire


class NodeWatch:
    r"""Records a decentralized run by name from ``measure`` and applies the divergence rule (module doc).

    Parameters
    ----------
    problem : NodeProblem or None
        What ``measure`` reads (in the namespace of the run's iterates).
    measure : callable
        ``measure(problem, x, k) -> values``, one value per name of ``names``, for the iterate ``x`` at step ``k``.
    names : tuple of str
        The records, in the order of ``measure``'s values.
    steps, record_every : int
        The schedule (:func:`simcomm.optim._driver.record_steps`).
    blowup : float
        The limit of the watched values: ``blowup * (1 + its start)`` (``relative``) or ``blowup``.
    watched : tuple of str
        The names with a limit.
    checked : tuple of str, optional
        The names the divergence rule reads (not finite: diverged); default every name.
    relative : bool
        Whether a watched value's limit is relative to its start.
    every_step : bool
        Measure and check at every step, not only at the recorded ones; the value that stops the run
        is recorded in the next slot (so "diverged" reads as a large error, not a missing one).
    counters : callable, optional
        ``counters(steps) -> dict`` of records that follow from the schedule (messages, bytes).
    error_like : bool
        The records' fill once diverged: ``inf`` (error-like) or ``NaN`` (:mod:`simcomm.optim._driver`).
    models : callable, optional
        The trace's ``x`` from the last iterate (default: the iterate itself, on the host).
    start : tuple of float, optional
        The start's record, by definition rather than measured (ratios to the start: 1 even where the
        start's scale overflows).
    """

    def __init__(self, problem, measure, names, steps: int, record_every: int, *, blowup: float = np.inf,
                 watched=(), checked=None, relative: bool = True, every_step: bool = False, counters=None,
                 error_like: bool = True, models: Callable | None = None, start=None):
        self.problem, self.measure, self.names = problem, measure, tuple(names)
        self.blowup, self.watched, self.relative = blowup, tuple(watched), relative
        self.checked = np.array([checked is None or name in checked for name in self.names])
        self.every_step, self.counters, self.models, self.start = every_step, counters, models, start
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
        return np.array([(self.blowup * (1.0 + v) if self.relative else self.blowup) if name in self.watched
                         else np.inf for name, v in zip(self.names, values)])

    def check(self, k: int, x, bits=None):
        """Measure ``x`` at step ``k`` if due: record it, or stop the run if it has diverged; returns ``x``."""
        due = self.rec.due == k
        if not due and not (self.every_step and self.limits is not None):
            return x
        if self.limits is None:  # the start
            values = np.array(self.measure(self.problem, x, k) if self.start is None else self.start)
            self.limits = self.start_limits(values)
        elif diverged(values := np.array(self.measure(self.problem, x, k)), self.limits)[self.checked].any():
            if self.every_step:
                self.rec.put(dict(zip(self.names, values[:, None])))
            self.rec.diverge(k, [True])
            self.done = True
            return x
        if due:
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
        return Trace(self.rec.step, records, to_host(x if self.models is None else self.models(x)),
                     self.rec.diverged_at)


def check_schedule(steps, record_every) -> int:
    """``steps`` as an int; a one-line error unless ``steps >= 0`` and ``record_every >= 1``."""
    steps = int(steps)
    if steps < 0 or record_every < 1:
        raise UserError(f"steps must be >= 0 and record_every >= 1, got {steps} and {record_every}")
    return steps


# --------------------------------------------------------------------------- measures and counters


def measure_nodes(problem, X, k=None) -> tuple:
    r"""The nodes' state at a recorded step: consensus, :math:`\|\nabla f(\bar x)\|^2`, mean node gradient, gap.

    ``consensus`` :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, ``grad_norm_sq``
    :math:`\|\nabla f(\bar x)\|^2`, ``node_grad_norm_sq`` :math:`\frac1n\sum_i\|\nabla f(x_i)\|^2` and
    ``subopt`` :math:`f(\bar x) - f^\star` (:data:`NODE_RECORDS`). Computed in ``X``'s namespace; only the
    four scalars leave a device. ``k`` (the step) is not read.
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


def node_dist(problem, X) -> float:
    r""":math:`\frac1n\sum_i\|x_i - x^\star\|^2` for the nodes' models ``X`` ``(n, d)``."""
    E = X - problem.x_star
    return float(np.sum(E * E) / X.shape[0])


def consensus_error(X) -> float:
    r""":math:`\sum_i\|x_i - \bar x\|^2` of the rows of ``X``."""
    D = X - X.mean(axis=0)
    return float(np.sum(D * D))


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


# --------------------------------------------------------------------------- the families' watches


def _field(name: str | None) -> Callable:
    return lambda s: s if name is None else getattr(s, name)


def tracking_watch(problem, steps: int, record_every: int = 1, blowup: float = 1e12) -> NodeWatch:
    r"""Gradient tracking's and exact diffusion's records: node distance, consensus, suboptimality.

    ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, ``subopt`` :math:`f(\bar x) - f^\star` of the state's
    ``x``; the distance may not exceed ``blowup`` times (1 + its start).
    """
    from simcomm.models import suboptimality

    def measure(p, s, k):
        X = s.x
        D = X - X.mean(axis=0)
        return node_dist(p, X), float(np.sum(D * D) / p.n), suboptimality(p, X.mean(axis=0))

    return NodeWatch(problem, measure, ("node_dist_sq", "consensus", "subopt"), steps, record_every, blowup=blowup,
                     watched=("node_dist_sq",), error_like=False, models=_field("x"))


def pushsum_sgd_watch(problem, steps: int, record_every: int = 1, debias: bool = True) -> NodeWatch:
    r"""Push-sum SGD's records: the models' ``node_dist_sq`` and ``weight_spread`` (``max w / min w``).

    The models are the ratios ``z`` (the numerators with ``debias=False``); only the distance is checked.
    """
    models = _field("z" if debias else "x")

    def measure(p, s, k):
        return node_dist(p, models(s)), float(s.w.max() / s.w.min())

    return NodeWatch(problem, measure, ("node_dist_sq", "weight_spread"), steps, record_every,
                     checked=("node_dist_sq",), error_like=False, models=models)


def pushsum_watch(start, steps: int, record_every: int = 1, debias: bool = True) -> NodeWatch:
    r"""Push-sum consensus's records against the exact average of the ``start`` numerators.

    ``max_error`` :math:`\max_i\|z_i - \bar x^0\|_\infty`, ``mean_sq_error``
    :math:`\frac1n\sum_i\|z_i - \bar x^0\|^2` (the numerators with ``debias=False``), ``weight_spread``.
    """
    models = _field("z" if debias else "x")
    target = start.x.mean(axis=0)
    n = start.x.shape[0]

    def measure(p, s, k):
        E = models(s) - target
        return float(np.abs(E).max()), float(np.sum(E * E) / n), float(s.w.max() / s.w.min())

    return NodeWatch(None, measure, ("max_error", "mean_sq_error", "weight_spread"), steps, record_every,
                     error_like=False, models=models)


def choco_sgd_watch(problem, steps: int, record_every: int = 1, blowup: float = 1e12) -> NodeWatch:
    r"""CHOCO-SGD's records on a :class:`~simcomm.models.NodeProblem`.

    ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2` and ``copy_gap`` :math:`\frac1n\|X - \hat X\|_F^2`
    (the state's public copies ``x_hat``); the distance may not exceed ``blowup`` times (1 + its start).
    """

    def measure(p, s, k):
        n = p.n
        E = s.x - p.x_star
        D = s.x - s.x.mean(axis=0)
        H = s.x - s.x_hat
        return float(np.sum(E * E) / n), float(np.sum(D * D) / n), float(np.sum(H * H) / n)

    return NodeWatch(problem, measure, ("node_dist_sq", "consensus", "copy_gap"), steps, record_every, blowup=blowup,
                     watched=("node_dist_sq",), error_like=False, models=_field("x"))


def _spread(e0: float) -> float:
    """``e0``, the start's spread, or a one-line error if it is 0 (nothing to average)."""
    if not e0 > 0:
        raise UserError("X0 is already at consensus (every row equal); give rows that differ")
    return e0


def consensus_watch(X0, steps: int, record_every: int = 1, blowup: float = 1e6) -> NodeWatch:
    r"""CHOCO-Gossip's records: ``consensus_ratio`` :math:`e_t/e_0` and ``mean_drift``; stops past ``blowup``.

    :math:`e_t` is :func:`consensus_error` of the state's ``x`` (``e_0 > 0`` of ``X0``, else a one-line
    error) and ``mean_drift`` :math:`\|\bar x^{(t)} - \bar x^{(0)}\|_\infty` (1 and 0 at the start, by
    definition). The ratio is checked at every step; the value that passes ``blowup`` (or is NaN) is
    recorded in the next slot.
    """
    e0 = _spread(consensus_error(X0))
    mean0 = X0.mean(axis=0)

    def measure(p, s, k):
        return consensus_error(s.x) / e0, float(np.abs(s.x.mean(axis=0) - mean0).max())

    return NodeWatch(None, measure, ("consensus_ratio", "mean_drift"), steps, record_every, blowup=blowup,
                     watched=("consensus_ratio",), checked=("consensus_ratio",), relative=False, every_step=True,
                     error_like=False, models=_field("x"), start=(1.0, 0.0))


def link_watch(X0, n_edges: int, steps: int, record_every: int = 1) -> NodeWatch:
    r"""Unreliable gossip's records: ``mean_sq_ratio`` (to the start's average) and ``kept_fraction``; never stops.

    ``mean_sq_ratio`` is :math:`\sum_i\|x_i - \bar x^{(0)}\|^2 / \sum_i\|x_i^{(0)} - \bar x^{(0)}\|^2`
    (``X0`` not at consensus, else a one-line error); ``kept_fraction`` the edges that worked (the
    state's ``kept``) over ``n_edges`` per step so far (both 1 at the start, by definition).
    """
    target = X0.mean(axis=0)
    e0 = _spread(float(np.sum((X0 - target) ** 2)))

    def measure(p, s, k):
        return float(np.sum((s.x - target) ** 2)) / e0, s.kept / (k * max(n_edges, 1))

    return NodeWatch(None, measure, ("mean_sq_ratio", "kept_fraction"), steps, record_every, checked=(),
                     error_like=False, models=_field("x"), start=(1.0, 1.0))
