r"""CHOCO-SGD and CHOCO-Gossip: decentralized SGD with compressed gossip (Koloskova, Stich & Jaggi, ICML 2019).

Every node ``i`` keeps its iterate ``x_i`` and a public copy ``xhat_i`` that all its neighbours hold
too (they receive the same compressed updates). Per step (Algorithm 2 of the paper; ``lr = 0`` and no
gradients is CHOCO-Gossip, Algorithm 1)::

    xh_i   = x_i - lr g_i(x_i)                              # local SGD step
    q_i    = Q(xh_i - xhat_i)                                # the only message: a compressed difference
    xhat_j <- xhat_j + q_j            for every node j       # every copy of j moves the same way
    x_i    <- xh_i + gamma sum_j W_ij (xhat_j - xhat_i)      # consensus step gamma on the copies

from ``xhat = 0``. ``Q`` is any compressor of the registry (:data:`simcomm.compress.COMPRESSORS`);
the paper's analysis needs a delta-contraction, :math:`E\|Q(v) - v\|^2 \le (1 - \delta)\|v\|^2`,
``delta = 1 - Q.error_factor(d)`` (top-k and unscaled rand-k: ``delta = k/d``); an unbiased
compressor with variance factor :math:`\beta` (QSGD, scaled rand-k) is sent as :math:`Q/(1+\beta)`,
a contraction with :math:`\delta = 1/(1+\beta)` (:func:`choco_scale`). ``W`` must be symmetric and
doubly stochastic.

Vectorised over nodes: one ``(n, d)`` array per quantity, the compressor applied to all rows at once,
and on 1-D circulant graphs with few offsets (ring, complete up to 64 nodes: where
:func:`simcomm.topology.mix` shifts too) the public-copy update and the consensus step fused in the
backend's ``choco_shift_step`` (numba: column slabs, one pass); other graphs use the backend's CSR mix.
Top-k (no rescaling, ``k < d``) on those graphs is sent as indices and values, never as a dense ``Q``:
the differences are written in one pass (``choco_diff``) into the array that then receives the new
iterates, selected there (the selection checks finiteness in its pass), and ``choco_sparse_step`` adds
the messages to the copies and takes the consensus step in one pass; the values are the dense step's,
bit for bit.

The step is :func:`simcomm.optim._blocks_gossip.choco_step`, the one implementation of the named methods
``"choco_gossip"`` and ``"choco_sgd"`` (:mod:`simcomm.optim.methods`) and of :func:`choco_update`;
:func:`run_choco_gossip` and :func:`run_choco_sgd` check their arguments and run those methods with
:func:`simcomm.optim.run` under their watches (:func:`~simcomm.optim._watch_nodes.consensus_watch`,
:func:`~simcomm.optim._watch_nodes.choco_sgd_watch`).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import real
from simcomm.backends import entry_point
from simcomm.optim._blocks_gossip import ChocoState, choco_delta, choco_scale, choco_step, choco_topology
from simcomm.optim._decentralized import check_hyper, check_state_out
from simcomm.optim._loop import run
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nodes import check_schedule, choco_sgd_watch, consensus_watch

__all__ = [
    "ChocoState",
    "choco_init",
    "choco_update",
    "choco_delta",
    "choco_gamma",
    "choco_scale",
    "run_choco_gossip",
    "run_choco_sgd",
]


def choco_init(X0) -> ChocoState:
    """Each node at its ``X0[i]``, every public copy at 0 (the paper's start).

    Examples
    --------
    >>> float(choco_init(np.ones((3, 2))).x_hat.sum())
    0.0
    """
    X0 = np.array(X0, dtype=np.float64)
    if X0.ndim != 2 or not np.all(np.isfinite(X0)):
        raise UserError(f"X0 must be a finite (n, d) array, one row per node; got shape {X0.shape}")
    return ChocoState(X0, np.zeros_like(X0), 0)


def choco_gamma(gap: float, beta: float, delta: float) -> float:
    r"""The consensus step of CHOCO-Gossip's analysis, :math:`\gamma^\star` (below).

    .. math:: \gamma^\star = \frac{\rho^2\delta}{16\rho + \rho^2 + 4\beta^2 + 2\rho\beta^2 - 8\rho\delta}

    Koloskova, Stich & Jaggi (2019), Theorem 2 (as recalled; ``theory.decentralized:choco_gossip_consensus``
    states the rate it comes with). An algorithm parameter, so it lives with the algorithm.

    Parameters
    ----------
    gap : float
        Spectral gap :math:`\rho = 1 - |\lambda_2(W)|`, in ``(0, 1]``.
    beta : float
        :math:`\|I - W\|_2`, in ``(0, 2]``.
    delta : float
        Compression quality in ``(0, 1]`` (:func:`choco_delta`).

    Examples
    --------
    >>> round(choco_gamma(1.0, 1.0, 1.0), 6)   # complete graph, no compression: 1/15
    0.066667
    """
    real(gap, "spectral gap", low=0.0, high=1.0, low_open=True)
    real(beta, "||I - W||_2", low=0.0, high=2.0, low_open=True)
    real(delta, "compression delta", low=0.0, high=1.0, low_open=True)
    return gap * gap * delta / (16 * gap + gap * gap + 4 * beta * beta + 2 * gap * beta * beta - 8 * gap * delta)


@entry_point
def choco_update(state: ChocoState, grads, topology, compressor, *, lr: float = 0.0, gamma: float, rng,
                 out=None, backend=None) -> ChocoState:
    r"""One CHOCO-SGD step (module doc); ``grads=None`` (or ``lr = 0``) is a CHOCO-Gossip step.

    The returned state holds new arrays; ``state`` is not modified.

    Parameters
    ----------
    state : ChocoState
    grads : ndarray of shape (n, d), or None
        Stochastic gradients at ``state.x``.
    topology : Topology or str
        Symmetric, doubly stochastic.
    compressor : Compressor
    lr : float
    gamma : float
        Consensus step, ``> 0``.
    rng : numpy.random.Generator
        The compressor's randomness.
    out : ChocoState, optional
        Buffers for the result (its ``x`` and ``x_hat``: writeable C-contiguous float64 arrays of shape
        ``(n, d)``, overlapping neither ``state``'s arrays, ``grads`` nor each other; ``out.k`` is
        ignored). A loop that alternates two states saves the two fresh arrays of every step (the
        step writes there directly).
    backend : str or module, optional

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.compress import Identity
    >>> s = choco_update(choco_init(np.array([[0.0], [4.0]])), None, "complete", Identity(), gamma=1.0, rng=0)
    >>> s.x.ravel(), s.x_hat.ravel()   # lossless copies and gamma = 1: plain gossip with W = J
    (array([2., 2.]), array([0., 4.]))
    """
    real(lr, "step size lr", low=0.0)
    real(gamma, "consensus step gamma", low=0.0, low_open=True)
    n, d = state.x.shape
    topo = choco_topology(topology, n)
    G = None
    if grads is not None and lr > 0:
        G = np.asarray(grads, dtype=np.float64)
        if G.shape != (n, d):
            raise UserError(f"grads must have shape {(n, d)}, got {G.shape}")
    if out is not None:
        inputs = (state.x, state.x_hat) + (() if grads is None else (np.asarray(grads),))
        check_state_out(out, inputs, (n, d), "ChocoState", 2)
    return choco_step(state, G, topo, compressor, lr=lr, gamma=gamma, scale=choco_scale(compressor, d), rng=rng,
                      out=out)


@entry_point
def run_choco_gossip(X0, topology, compressor, *, gamma: float, steps: int, rng, record_every: int = 1,
                     blowup: float = 1e6, backend=None) -> Trace:
    r"""CHOCO-Gossip average consensus from ``X0``; records the consensus error relative to the start.

    Parameters
    ----------
    X0 : ndarray, shape (n, d)
    topology : Topology or str
    compressor : Compressor
    gamma : float
    steps : int
    rng : numpy.random.Generator or seed
    record_every : int
    blowup : float
        A run whose relative error passes ``blowup`` is stopped as diverged; its last record holds
        that (finite) value, so "diverged" reads as a large error rather than a missing one.
    backend : str or module, optional

    Returns
    -------
    Trace
        ``records``: ``consensus_ratio`` :math:`\sum_i\|x_i^{(t)} - \bar x^{(t)}\|^2 / \sum_i\|x_i^{(0)} -
        \bar x^{(0)}\|^2` and ``mean_drift`` :math:`\|\bar x^{(t)} - \bar x^{(0)}\|_\infty` (0 up to
        rounding: the consensus step keeps the mean for a doubly stochastic ``W``); ``x`` the final iterates.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.compress import TopK
    >>> X0 = np.random.default_rng(0).standard_normal((8, 4))
    >>> tr = run_choco_gossip(X0, "complete", TopK(1), gamma=0.2, steps=600, rng=1)
    >>> bool(tr.consensus_ratio[-1] < 1e-8), bool(tr.mean_drift[-1] < 1e-12)
    (True, True)
    """
    from simcomm.optim._registry import build_method

    rng = np.random.default_rng(rng)
    steps = check_schedule(steps, record_every)
    state = choco_init(X0)
    topo = choco_topology(topology, state.x.shape[0])
    choco_delta(compressor, state.x.shape[1])
    watch = consensus_watch(state.x, steps, record_every, blowup)
    if steps:  # checked where the first step would check it
        real(gamma, "consensus step gamma", low=0.0, low_open=True)
    m = build_method("choco_gossip", compressor=compressor, gamma=gamma, topology=topo)
    with np.errstate(all="ignore"):
        return run(None, m, steps, rng=rng, x0=state, watch=watch)


@entry_point
def run_choco_sgd(problem, topology, compressor, *, steps: int, lr: float, gamma: float, sigma: float = 0.0,
                  seed: int = 0, rng=None, record_every: int = 1, blowup: float = 1e12, backend=None) -> Trace:
    r"""CHOCO-SGD on a :class:`~simcomm.models.NodeProblem` from ``problem.x0`` (module doc).

    Gradient noise comes from the per-node streams of :func:`~simcomm.optim.run_dsgd` (``seed``); the
    compressor draws from ``rng`` (default: a stream of ``seed``).

    Returns
    -------
    Trace
        ``records``: ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
        :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2` and ``copy_gap``
        :math:`\frac1n\|X - \hat X\|_F^2` (how far the public copies lag); ``x`` the final iterates.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> from simcomm.models import heterogeneous_least_squares
    >>> prob = heterogeneous_least_squares(8, 4, b=0.0, rng=0)
    >>> tr = run_choco_sgd(prob, "ring", TopK(2), steps=3000, lr=0.2 / prob.L, gamma=0.3)
    >>> bool(tr.node_dist_sq[-1] < 1e-12)   # b = 0: every node's optimum is x*, no floor
    True
    """
    from simcomm.optim._registry import build_method

    check_hyper(lr, 0.0)
    real(sigma, "noise sigma", low=0.0)
    steps = check_schedule(steps, record_every)
    topo = choco_topology(topology, problem.n)
    choco_delta(compressor, problem.d)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(5,)) if rng is None else rng)
    state = choco_init(np.tile(np.asarray(problem.x0, dtype=np.float64), (problem.n, 1)))
    if steps:  # checked where the first step would check it
        real(gamma, "consensus step gamma", low=0.0, low_open=True)
    m = build_method("choco_sgd", compressor=compressor, lr=lr, gamma=gamma, topology=topo, sigma=sigma, seed=seed)
    with np.errstate(all="ignore"):
        return run(problem, m, steps, rng=rng, x0=state, watch=choco_sgd_watch(problem, steps, record_every, blowup))
