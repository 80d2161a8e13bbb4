r"""The building blocks of gossip methods: CHOCO's compressed gossip and gossip over unreliable links.

A gossip method's iterate is the nodes' state, a NamedTuple whose field ``x`` holds one iterate per node,
``(n, d)``, beside what the nodes keep with it: CHOCO's public copies (:class:`ChocoState`), the messages
that have arrived (:class:`LinkState`). Its next iterate is a mix of the nodes' iterates, not ``x + u``,
so a gossip method is a chain whose last block returns the next state, made a method by
:func:`simcomm.optim.assign` (or a :class:`~simcomm.optim.Method` written directly); its watch reads the
state (:mod:`simcomm.optim._watch_nodes`).

==========================  ==========================================================================
block                       what it does
==========================  ==========================================================================
:func:`choco_step`          CHOCO's step from the local iterates: the compressed difference to the
                            public copies moves every copy, then a consensus step on the copies
:func:`choco_combine`       :func:`choco_step` as a block: gradients (or ``None``) in, the next state out
:func:`choco`               the CHOCO method: gossip only, or after the nodes' gradient oracle
:func:`drop_links`          which edges carry their messages at a step (:class:`~simcomm.topology.LinkFailures`)
:func:`unreliable_gossip`   the gossip method over the kept edges (:func:`~simcomm.topology.unreliable_mix`)
==========================  ==========================================================================

Every function of a step is pure (the gradient oracle, shared with every decentralized method, fills one
buffer and reads the per-node noise streams in place: the loop never reads an old state again), and a
method's step writes its next state into two states of its own that it alternates
(:class:`~simcomm.optim._blocks_tracking.Spare`: a run allocates no ``(n, d)`` array per step).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import get_backend
from simcomm.optim._algebra import Method, Transform, assign, chain
from simcomm.optim._blocks_dsgd import require_stochasticity, resolve_topology
from simcomm.optim._blocks_tracking import Spare, spare_for
from simcomm.topology import FFT_OFFSETS as _FFT_OFFSETS  # the shift kernels serve the circulants mix() shifts
from simcomm.topology import EdgeList, edge_list, sparse_matrix, unreliable_mix

__all__ = ["ChocoState", "ChocoPlan", "LinkState", "LinkPlan", "choco_step", "choco_combine", "choco",
           "choco_scale", "choco_delta", "choco_topology", "link_topology", "link_edges", "link_init", "drop_links",
           "unreliable_gossip"]


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


# --------------------------------------------------------------------------- CHOCO


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


def choco_topology(topology, n: int):
    """``topology`` resolved for ``n`` nodes, or a one-line error unless ``W`` is symmetric and doubly stochastic."""
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "CHOCO")
    if topo != "parallel" and topo.directed:
        raise UserError(f"CHOCO needs a symmetric W, but '{topo.name}' is directed; use a symmetric graph "
                        "(ring, torus, hypercube, complete, ...)")
    return topo


def choco_step(state: ChocoState, grads, topology, compressor, *, lr: float, gamma: float, scale: float,
               rng, out: ChocoState | None = None) -> ChocoState:
    r"""One CHOCO step (:mod:`simcomm.optim._choco`) on checked arguments; ``state`` is not modified.

    ``out`` (checked by the caller) receives the next iterates and copies (:func:`simcomm.optim.choco_update`).

    ``grads`` (or ``None``) at ``state.x``; ``topology`` resolved (:func:`choco_topology`); ``scale``
    :func:`choco_scale`'s. The copies' update and the consensus step are fused in the active backend's
    ``choco_shift_step`` on 1-D circulant layers with few offsets (top-k there: sent sparsely,
    :func:`_choco_sparse`), and use its CSR mix elsewhere.
    """
    backend = get_backend()
    fused = _sparse_plan(state, grads, topology, compressor, lr, scale)
    if fused is not None:
        return _choco_sparse(state, fused, compressor.k, lr=lr, gamma=gamma, out=out)
    Xh = state.x
    if grads is not None and lr > 0:
        Xh = state.x - lr * grads
    Q = np.asarray(compressor.apply(Xh - state.x_hat, rng=rng), dtype=np.float64)
    if scale != 1.0:
        Q = Q * scale  # an unbiased compressor becomes a delta-contraction (choco_scale)
    if out is None:
        Xhat, x = state.x_hat.copy(), np.empty_like(Xh)
    else:
        Xhat, x = out.x_hat, out.x
        np.copyto(Xhat, state.x_hat)
    if topology == "parallel":
        Xhat += Q
        np.add(Xh, gamma * (Xhat.mean(axis=0) - Xhat), out=x)
        return ChocoState(x, Xhat, state.k + 1)
    layer = topology.layer(state.k)
    if layer.kind == "circulant" and len(layer.shape) == 1 and len(layer.offsets) <= _FFT_OFFSETS:
        backend.choco_shift_step(np.ascontiguousarray(Xh), Xhat, np.ascontiguousarray(Q), float(gamma),
                                 np.asarray(layer.offsets[:, 0], dtype=np.int64), np.asarray(layer.weights), x)
    else:
        Xhat += Q
        W = sparse_matrix(layer)
        M = backend.csr_mix(W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data, Xhat)
        M -= Xhat
        M *= gamma
        np.add(Xh, M, out=x)
    return ChocoState(x, Xhat, state.k + 1)


def _sparse_plan(state, grads, topology, compressor, lr, scale):
    """``(G or None, shifts, weights)`` when the step can send top-k messages sparsely, else ``None``.

    The sparse path needs exact top-k with ``1 <= k < d`` (other ``k`` take the compressor's own path and
    errors), no rescaling, float64 C-contiguous arrays and a fused shift layer.
    """
    from simcomm.compress import TopK

    if topology == "parallel" or type(compressor) is not TopK or scale != 1.0:
        return None
    n, d = state.x.shape
    k = compressor.k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < d:
        return None
    G = grads if grads is not None and lr > 0 else None
    arrays = (state.x, state.x_hat) if G is None else (state.x, state.x_hat, G)
    if not all(isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous and a.shape == (n, d)
               for a in arrays):
        return None
    layer = topology.layer(state.k)
    if not (layer.kind == "circulant" and len(layer.shape) == 1 and len(layer.offsets) <= _FFT_OFFSETS):
        return None
    return G, np.asarray(layer.offsets[:, 0], dtype=np.int64), np.asarray(layer.weights)


def _choco_sparse(state: ChocoState, plan, k: int, *, lr: float, gamma: float,
                  out: ChocoState | None = None) -> ChocoState:
    """:func:`choco_step` with top-k sent as ``(idx, vals)``: the same values, no dense ``Q``.

    The differences ``(x - lr g) - xhat`` are written (one pass, ``choco_diff``) into the array that then
    receives the new iterates, so they cost no allocation; one selection reads them (checking finiteness in
    its pass) and the backend's ``choco_sparse_step`` adds the messages to the copies and takes the consensus
    step in one pass over the columns. Three kernel calls a step (each starts the threads once), on the
    active backend.
    """
    backend = get_backend()
    G, shifts, weights = plan
    X, Xhat = state.x, state.x_hat
    x, hat = (np.empty_like(X), np.empty_like(Xhat)) if out is None else (out.x, out.x_hat)
    D = backend.choco_diff(X, G, float(lr), Xhat, 0, x)
    idx, finite = backend.topk_select(D, k, None)
    if not finite:  # the message top_k itself gives for non-finite input
        raise UserError("top_k: x contains NaN or inf; pass finite values")
    # the sent values, gathered through the flat index (take_along_axis builds a broadcast index per axis: 3x slower)
    vals = np.take(D.reshape(-1), idx + np.arange(0, D.size, D.shape[1], dtype=np.int64)[:, None])
    backend.choco_sparse_step(X, G, float(lr), Xhat, idx, vals, float(gamma), shifts, weights, hat, x)
    return ChocoState(x, hat, state.k + 1)


class ChocoPlan(NamedTuple):
    """What a CHOCO run fixes at its start (the resolved topology and :func:`choco_scale`) and its two states."""

    topology: Any
    scale: float
    spare: Spare = Spare()


def choco_combine(compressor, gamma: float, topology, *, lr: float = 0.0) -> Transform:
    r"""CHOCO's step from the gradients ``u`` (``None``: gossip only): the next :class:`ChocoState`.

    :func:`choco_step` on the state, ``topology`` resolved and checked (:func:`choco_topology`) and the
    compressor's :func:`choco_scale` fixed for the nodes of the start; the compressor draws from the
    run's ``rng``. The next state goes into the plan's :class:`~simcomm.optim._blocks_tracking.Spare`.
    """

    def init(state, ctx):
        n, d = state.x.shape
        return ChocoPlan(choco_topology(topology, n), choco_scale(compressor, d))

    def update(grads, plan, state, ctx):
        out, spare = spare_for(plan.spare, state, lambda: ChocoState(np.empty_like(state.x),
                                                                     np.empty_like(state.x_hat), 0))
        nxt = choco_step(state, grads, plan.topology, compressor, lr=lr, gamma=gamma, scale=plan.scale,
                         rng=ctx.rng, out=out)
        return nxt, plan._replace(spare=spare)

    return Transform(init, update)


def choco(compressor, gamma: float, topology, *, lr: float = 0.0, oracle: Transform | None = None,
          name: str = "choco") -> Method:
    r"""The CHOCO method on a :class:`ChocoState`: :func:`choco_combine` after the gradients of ``oracle``.

    Without an oracle it is CHOCO-Gossip (average consensus); with one (the nodes' gradients at the
    state's ``x``, :func:`simcomm.optim._blocks_dsgd.gradient_at_nodes`) CHOCO-SGD. ``topology`` is a
    :class:`~simcomm.topology.Topology`, a name, a matrix or ``"parallel"``, resolved for the nodes of the start.
    """
    combine = choco_combine(compressor, gamma, topology, lr=lr)
    return assign(combine if oracle is None else chain(oracle, combine), name=name)


# --------------------------------------------------------------------------- unreliable links


class LinkState(NamedTuple):
    """Gossip over unreliable links: iterates ``x`` ``(n, d)``, ``kept`` the edges that worked, summed over the steps.

    Attributes
    ----------
    x : ndarray, shape (n, d)
    kept : int
    """

    x: np.ndarray
    kept: int


class LinkPlan(NamedTuple):
    """:func:`drop_links`'s state: the graph's :class:`~simcomm.topology.EdgeList` and every edge's channel state."""

    edges: Any
    channel: np.ndarray


def link_topology(topology, n: int):
    """``topology`` resolved for ``n`` nodes, or a one-line error unless it is one static doubly stochastic ``W``."""
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "unreliable gossip")
    if topo == "parallel" or topo.time_varying:
        raise UserError("unreliable gossip needs one static graph (its edges fail at random)")
    return topo


def link_edges(topology, n: int):
    """The :class:`~simcomm.topology.EdgeList` of ``topology`` (itself if it is one) for ``n`` nodes."""
    return topology if isinstance(topology, EdgeList) else edge_list(link_topology(topology, n))


def link_init(X0) -> LinkState:
    """Each node at its ``X0[i]``, no edge used yet; a one-line error unless ``X0`` is a finite ``(n, d)`` array."""
    X = np.array(X0, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise UserError(f"X0 must be a finite (n, d) array, one row per node; got shape {X.shape}")
    return LinkState(X, 0)


def drop_links(failures, topology) -> Transform:
    """Starts a chain: which edges carry their messages at a step, drawn by ``failures`` from the run's ``rng``.

    ``topology`` is an :class:`~simcomm.topology.EdgeList` or a static symmetric topology (or its name).
    The channel states are drawn at ``init`` (:meth:`~simcomm.topology.LinkFailures.init`).
    """

    def init(x, ctx):
        edges = link_edges(topology, x.shape[0])
        return LinkPlan(edges, failures.init(edges, ctx.rng))

    def update(u, plan, x, ctx):
        del u, x
        kept, channel = failures.draw(plan.edges, plan.channel, ctx.rng)
        return kept, LinkPlan(plan.edges, channel)

    return Transform(init, update)


def unreliable_gossip(failures, topology, *, compensate: bool = True, name: str = "unreliable_gossip") -> Method:
    r"""Gossip on a :class:`LinkState` over the edges that :func:`drop_links` keeps.

    One step is :func:`~simcomm.topology.unreliable_mix` over the kept edges. ``compensate``: a failed
    edge's weight stays with its endpoints, or is lost (the control). The next iterates go into two
    arrays of the method's own, alternated (:class:`~simcomm.optim._blocks_tracking.Spare`).
    """
    links = drop_links(failures, topology)

    def init(state, ctx):
        return links.init(state.x, ctx), Spare()

    def step(state, plans, ctx):
        plan, spare = plans
        kept, plan = links.update(None, plan, state.x, ctx)
        total = state.kept + int(kept.sum())
        out, spare = spare_for(spare, state, lambda: (np.empty_like(state.x),))
        return LinkState(unreliable_mix(plan.edges, state.x, kept, compensate=compensate, out=out[0]),
                         total), (plan, spare)

    return Method(init, step, name=name)
