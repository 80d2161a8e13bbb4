r"""Gossip over unreliable links: Bernoulli or Gilbert-Elliott edge failures and sleeping nodes, every step.

One run draws the failures of every step from its ``rng`` (:class:`simcomm.topology.LinkFailures`)
and mixes over the kept edges with :func:`simcomm.topology.unreliable_mix` (no ``n x n`` array).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.optim._decentralized import require_stochasticity, resolve_topology
from simcomm.optim._trace import Trace, diverged_at_step

__all__ = ["run_unreliable_gossip"]


def run_unreliable_gossip(X0, topology, failures, *, steps: int, rng, compensate: bool = True, record_every: int = 1,
                          backend=None) -> Trace:
    r"""Average consensus from ``X0`` over a symmetric ``W`` whose links fail at random (module doc).

    Parameters
    ----------
    X0 : ndarray, shape (n, d)
    topology : Topology or str
        Symmetric and doubly stochastic (static).
    failures : LinkFailures
    steps : int
    rng : numpy.random.Generator or seed
    compensate : bool
        A failed edge's weight stays with its endpoints (default), or is lost (the control).
    record_every : int
    backend : str or module, optional

    Returns
    -------
    Trace
        ``records``: ``mean_sq_ratio`` :math:`\sum_i\|x_i^{(t)} - \bar x^{(0)}\|^2 / \sum_i\|x_i^{(0)} -
        \bar x^{(0)}\|^2` (distance to the START's average: a step that loses mass is not forgiven) and
        ``kept_fraction`` (edges that worked, averaged over the steps so far); ``x`` the final models.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import LinkFailures
    >>> X0 = np.random.default_rng(0).standard_normal((8, 2))
    >>> tr = run_unreliable_gossip(X0, "ring", LinkFailures(q=0.3), steps=400, rng=1)
    >>> bool(tr.mean_sq_ratio[-1] < 1e-6), round(float(tr.kept_fraction[-1]), 1)
    (True, 0.7)
    """
    from simcomm.topology import edge_list, unreliable_mix

    steps = int(steps)
    if steps < 0 or record_every < 1:
        raise UserError(f"steps must be >= 0 and record_every >= 1, got {steps} and {record_every}")
    X = np.array(X0, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise UserError(f"X0 must be a finite (n, d) array, one row per node; got shape {X.shape}")
    n = X.shape[0]
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "unreliable gossip")
    if topo == "parallel" or topo.time_varying:
        raise UserError("unreliable gossip needs one static graph (its edges fail at random)")
    edges = edge_list(topo)
    rng = np.random.default_rng(rng)
    state = failures.init(edges, rng)
    target = X.mean(axis=0)
    e0 = float(np.sum((X - target) ** 2))
    if not e0 > 0:
        raise UserError("X0 is already at consensus (every row equal); give rows that differ")
    rec = sorted(set(range(0, steps + 1, record_every)) | {steps})
    ratio, kept_frac = np.full(len(rec), np.nan), np.full(len(rec), np.nan)
    ratio[0], kept_frac[0] = 1.0, 1.0
    j, total = 1, 0
    for k in range(steps):
        kept, state = failures.draw(edges, state, rng)
        total += int(kept.sum())
        X = unreliable_mix(edges, X, kept, compensate=compensate, backend=backend)
        if j < len(rec) and rec[j] == k + 1:
            ratio[j] = float(np.sum((X - target) ** 2)) / e0
            kept_frac[j] = total / ((k + 1) * max(edges.n_edges, 1))
            j += 1
    return Trace(np.asarray(rec), {"mean_sq_ratio": ratio, "kept_fraction": kept_frac}, X, diverged_at_step(None))
