r"""Gossip over unreliable links: Bernoulli or Gilbert-Elliott edge failures and sleeping nodes, every step.

One run draws the failures of every step from its ``rng`` (:class:`simcomm.topology.LinkFailures`)
and mixes over the kept edges with :func:`simcomm.topology.unreliable_mix` (no ``n x n`` array). It is
the named method ``"unreliable_gossip"`` (:mod:`simcomm.optim.methods.unreliable_gossip`, blocks in
:mod:`simcomm.optim._blocks_gossip`) run by :func:`simcomm.optim.run` under
:func:`~simcomm.optim._watch_nodes.link_watch`.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from simcomm.backends import entry_point
from simcomm.optim._blocks_gossip import link_edges, link_init
from simcomm.optim._loop import run
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nodes import check_schedule, link_watch

__all__ = ["run_unreliable_gossip"]


@entry_point
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
    from simcomm.optim._registry import build_method
    from simcomm.topology import LinkFailures

    steps = check_schedule(steps, record_every)
    start = link_init(X0)
    edges = link_edges(topology, start.x.shape[0])
    rng = np.random.default_rng(rng)
    watch = link_watch(start.x, edges.n_edges, steps, record_every)
    m = build_method("unreliable_gossip", topology=edges, compensate=bool(compensate),
                     **{f.name: getattr(failures, f.name) for f in fields(LinkFailures)})
    return run(None, m, steps, rng=rng, x0=start, watch=watch)
