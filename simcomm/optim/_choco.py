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
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import real
from simcomm.optim._decentralized import _Noise, check_hyper, require_stochasticity, resolve_topology
from simcomm.optim._trace import Trace, diverged_at_step
from simcomm.topology._mixing import _FFT_OFFSETS  # the shift kernels serve the circulants mix() shifts

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


class ChocoState(NamedTuple):
    """CHOCO state: iterates ``x``, public copies ``x_hat`` (shape ``(n, d)`` both), step counter ``k``.

    Attributes
    ----------
    x, x_hat : ndarray, shape (n, d)
    k : int
    """

    x: np.ndarray
    x_hat: np.ndarray
    k: int


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


def choco_scale(compressor, d: int) -> float:
    r"""Factor CHOCO multiplies the compressor's output by: 1 for a contraction, :math:`1/(1+\beta)` if unbiased.

    An unbiased compressor with :math:`E\|Q(v) - v\|^2 \le \beta\|v\|^2` and :math:`\beta \ge 1`
    (QSGD, scaled rand-k, ...) is no contraction, but :math:`Q/(1+\beta)` is one with
    :math:`\delta = 1/(1+\beta)` (Koloskova et al. 2019, the remark after their Definition of
    delta-compressors: :math:`E\|Q/(1+\beta) - v\|^2 = \frac{\beta}{1+\beta}\|v\|^2`).

    Examples
    --------
    >>> from simcomm.compress import QSGD, TopK
    >>> choco_scale(TopK(2), 8), round(choco_scale(QSGD(1), 16), 6)
    (1.0, 0.2)
    """
    f = compressor.error_factor(int(d))
    if f is not None and 0.0 <= f < 1.0:
        return 1.0
    beta = compressor.beta(int(d)) if compressor.unbiased else None
    if beta is None or not math.isfinite(beta):
        raise UserError(f"CHOCO needs a delta-contraction (E||Q(v) - v||^2 <= (1 - delta)||v||^2, delta > 0) or an "
                        f"unbiased compressor with a finite variance factor, but {compressor.label} has error factor "
                        f"{f} at d={d}; use top_k, rand_k, qsgd or another registered compressor that states one")
    return 1.0 / (1.0 + float(beta))


def choco_delta(compressor, d: int) -> float:
    r"""The :math:`\delta` CHOCO runs with: ``1 - error_factor(d)``, or :math:`1/(1+\beta)` for an unbiased one.

    See :func:`choco_scale`; a one-line error for a compressor that states neither.

    Examples
    --------
    >>> from simcomm.compress import QSGD, TopK
    >>> choco_delta(TopK(2), 8), round(choco_delta(QSGD(1), 16), 6)
    (0.25, 0.2)
    """
    scale = choco_scale(compressor, d)
    if scale == 1.0:
        return 1.0 - float(compressor.error_factor(int(d)))
    return scale


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


def _check_topology(topology, n):
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "CHOCO")
    if topo != "parallel" and topo.directed:
        raise UserError(f"CHOCO needs a symmetric W, but '{topo.name}' is directed; use a symmetric graph "
                        "(ring, torus, hypercube, complete, ...)")
    return topo


def choco_update(state: ChocoState, grads, topology, compressor, *, lr: float = 0.0, gamma: float, rng,
                 backend=None) -> ChocoState:
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
    backend : str or module, optional

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.compress import Identity
    >>> s = choco_update(choco_init(np.array([[0.0], [4.0]])), None, "complete", Identity(), gamma=1.0, rng=0)
    >>> s.x.ravel(), s.x_hat.ravel()   # lossless copies and gamma = 1: plain gossip with W = J
    (array([2., 2.]), array([0., 4.]))
    """
    from simcomm.backends import get_backend
    from simcomm.topology import sparse_matrix

    real(lr, "step size lr", low=0.0)
    real(gamma, "consensus step gamma", low=0.0, low_open=True)
    n, d = state.x.shape
    topo = _check_topology(topology, n)
    be = get_backend(backend)
    Xh = state.x
    if grads is not None and lr > 0:
        G = np.asarray(grads, dtype=np.float64)
        if G.shape != (n, d):
            raise UserError(f"grads must have shape {(n, d)}, got {G.shape}")
        Xh = state.x - lr * G
    Q = np.asarray(compressor.apply(Xh - state.x_hat, rng=rng, backend=be), dtype=np.float64)
    scale = choco_scale(compressor, d)
    if scale != 1.0:
        Q = Q * scale  # an unbiased compressor becomes a delta-contraction (choco_scale)
    Xhat = state.x_hat.copy()
    out = np.empty_like(Xh)
    if topo == "parallel":
        Xhat += Q
        return ChocoState(Xh + gamma * (Xhat.mean(axis=0) - Xhat), Xhat, state.k + 1)
    layer = topo.layer(state.k)
    if layer.kind == "circulant" and len(layer.shape) == 1 and len(layer.offsets) <= _FFT_OFFSETS:
        be.choco_shift_step(np.ascontiguousarray(Xh), Xhat, np.ascontiguousarray(Q), float(gamma),
                            np.asarray(layer.offsets[:, 0], dtype=np.int64), np.asarray(layer.weights), out)
    else:
        Xhat += Q
        W = sparse_matrix(layer)
        M = be.csr_mix(W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data, Xhat)
        M -= Xhat
        M *= gamma
        np.add(Xh, M, out=out)
    return ChocoState(out, Xhat, state.k + 1)


def _consensus(X) -> float:
    D = X - X.mean(axis=0)
    return float(np.sum(D * D))


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
    rng = np.random.default_rng(rng)
    steps = int(steps)
    if steps < 0 or record_every < 1:
        raise UserError(f"steps must be >= 0 and record_every >= 1, got {steps} and {record_every}")
    state = choco_init(X0)
    n = state.x.shape[0]
    topo = _check_topology(topology, n)
    choco_delta(compressor, state.x.shape[1])
    e0 = _consensus(state.x)
    if not e0 > 0:
        raise UserError("X0 is already at consensus (every row equal); give rows that differ")
    mean0 = state.x.mean(axis=0)
    rec = sorted(set(range(0, steps + 1, record_every)) | {steps})
    ratio, drift = np.full(len(rec), np.nan), np.full(len(rec), np.nan)
    ratio[0], drift[0] = 1.0, 0.0
    j, diverged = 1, None
    with np.errstate(all="ignore"):
        for k in range(steps):
            state = choco_update(state, None, topo, compressor, gamma=gamma, rng=rng, backend=backend)
            r = _consensus(state.x) / e0
            stop = not (r <= blowup)  # NaN stops too
            if stop or (j < len(rec) and rec[j] == k + 1):
                ratio[j], drift[j] = r, float(np.abs(state.x.mean(axis=0) - mean0).max())
                j += 1
            if stop:
                diverged = k + 1
                break
    return Trace(np.asarray(rec), {"consensus_ratio": ratio, "mean_drift": drift}, state.x,
                 diverged_at_step(diverged))


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
    from simcomm.models._decentralized import node_gradients

    check_hyper(lr, 0.0)
    real(sigma, "noise sigma", low=0.0)
    steps = int(steps)
    if steps < 0 or record_every < 1:
        raise UserError(f"steps must be >= 0 and record_every >= 1, got {steps} and {record_every}")
    n, d = problem.n, problem.d
    topo = _check_topology(topology, n)
    choco_delta(compressor, d)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(5,)) if rng is None else rng)
    noise = _Noise(seed, n, d, steps) if sigma > 0 else None
    state = choco_init(np.tile(np.asarray(problem.x0, dtype=np.float64), (n, 1)))
    rec = sorted(set(range(0, steps + 1, record_every)) | {steps})
    dist, cons, gap = (np.full(len(rec), np.nan) for _ in range(3))

    def measure(s):
        E = s.x - problem.x_star
        D = s.x - s.x.mean(axis=0)
        H = s.x - s.x_hat
        return float(np.sum(E * E) / n), float(np.sum(D * D) / n), float(np.sum(H * H) / n)

    dist[0], cons[0], gap[0] = measure(state)
    limit = blowup * (1.0 + dist[0])
    j, diverged = 1, None
    G = np.empty((n, d))
    with np.errstate(all="ignore"):
        for k in range(steps):
            G = node_gradients(problem, state.x, out=G)
            if noise is not None:
                noise.add(G, k, sigma)
            state = choco_update(state, G, topo, compressor, lr=lr, gamma=gamma, rng=rng, backend=backend)
            if j < len(rec) and rec[j] == k + 1:
                vals = measure(state)
                if not all(map(math.isfinite, vals)) or vals[0] > limit:
                    diverged = k + 1
                    break
                dist[j], cons[j], gap[j] = vals
                j += 1
    return Trace(np.asarray(rec), {"node_dist_sq": dist, "consensus": cons, "copy_gap": gap}, state.x,
                 diverged_at_step(diverged))
