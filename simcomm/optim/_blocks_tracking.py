r"""The building blocks of gradient tracking, exact diffusion and push-sum, each a :class:`~simcomm.optim.Transform`.

A decentralized method's iterate is its state over the ``n`` nodes, one NamedTuple of ``(n, d)`` arrays
and the step counter (:class:`GTState`, :class:`EDState`, :class:`PushSumState`): a step mixes the nodes'
arrays, so the next iterate is not ``x + u``. A chain of these blocks starts with the nodes' gradient oracle
(:func:`simcomm.optim._blocks_dsgd.gradient_at_nodes`, at the state's ``x`` or push-sum's ratio ``z``)
and ends with a combine whose output is the next iterate; :func:`simcomm.optim.assign` makes it a
:class:`~simcomm.optim.Method`.

=============================  ======================================================================
block                          what it does
=============================  ======================================================================
:func:`tracking`               ATC gradient tracking: ``y <- W(y + g - g_prev)``, ``x <- W(x - lr y)``
:func:`exact_diffusion`        adapt, correct, combine with :math:`\bar W = (I + W)/2`
:func:`push_sum`               numerators ``W (x - lr g)``, weights ``W w`` (a fixed or drawn ``W``)
=============================  ======================================================================

In a run, a combine writes the next state into buffers it keeps (:class:`Spare`): two states of its own,
alternated, so a run allocates no ``(n, d)`` array per step. The state it writes is the one it made two
steps before, which the loop no longer holds (the start, made by the caller, is never written). A
caller that steps a method by hand and keeps every state should use the pure steps instead.

The combines run the backend's fused kernels where the topology allows (``gt_shift_step`` for a 1-D
circulant, ``pushsum_shift_step`` for a shift pattern with per-node weights), :func:`simcomm.topology.mix`
otherwise; never an ``n x n`` matrix. The public pure steps (:func:`simcomm.optim.gt_update`,
:func:`~simcomm.optim.ed_update`, :func:`~simcomm.optim.pushsum_update`) are these blocks' updates.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from simcomm.optim._algebra import Transform
from simcomm.optim._blocks_dsgd import require_stochasticity, resolve_topology
from simcomm.topology import FFT_OFFSETS as _FFT_OFFSETS  # the shift kernels serve the circulants mix() shifts

__all__ = ["GTState", "EDState", "PushSumState", "Spare", "spare_for", "tracking", "tracking_step", "exact_diffusion",
           "ed_step", "push_sum", "pushsum_step", "drawn", "check_symmetric"]


class GTState(NamedTuple):
    """Gradient tracking state: iterates, trackers, the gradients used at the previous step, step counter.

    Attributes
    ----------
    x, y, g : ndarray, shape (n, d)
    k : int
    """

    x: np.ndarray
    y: np.ndarray
    g: np.ndarray
    k: int


class EDState(NamedTuple):
    """Exact diffusion state: iterates, the previous adapted iterates ``psi``, step counter.

    Attributes
    ----------
    x, psi : ndarray, shape (n, d)
    k : int
    """

    x: np.ndarray
    psi: np.ndarray
    k: int


class PushSumState(NamedTuple):
    """Push-sum state: numerators ``x``, weights ``w`` (start at 1), step counter.

    The de-biased models are ``z = x / w[:, None]`` (:attr:`z`).

    Attributes
    ----------
    x : ndarray, shape (n, d)
    w : ndarray, shape (n,)
    k : int
    """

    x: np.ndarray
    w: np.ndarray
    k: int

    @property
    def z(self) -> np.ndarray:
        """The de-biased models :math:`z_i = x_i / w_i`."""
        return self.x / self.w[:, None]


class Spare(NamedTuple):
    """The two states a run's combine alternates (``None`` until first needed); :func:`spare_for`."""

    a: Any = None
    b: Any = None


def spare_for(spare: Spare, s, make: Callable) -> tuple:
    """``(out, spare)``: the buffers for the state after ``s``, the one of ``spare``'s two that ``s`` is not.

    ``s`` is the current state; when it is not one of ``spare``'s (the run's start), the next state goes
    into ``spare.a``. ``make()`` allocates a missing one.
    """
    if spare.a is not None and s[0] is spare.a[0]:
        if spare.b is None:
            spare = Spare(spare.a, make())
        return spare.b, spare
    if spare.a is None:
        spare = Spare(make(), spare.b)
    return spare.a, spare


def drawn(topology) -> bool:
    """Whether ``topology`` is a callable ``rng -> Topology`` (a fresh ``W`` every step), not a topology."""
    return callable(topology) and not hasattr(topology, "layer")


def check_symmetric(topo, what: str = "exact diffusion"):
    """``topo`` if it is symmetric (or ``"parallel"``), else the one-line error of exact diffusion."""
    from simcomm._errors import UserError

    if topo != "parallel" and topo.directed:
        raise UserError(f"{what} needs a symmetric W, but '{topo.name}' is directed; "
                        "use gradient tracking (it allows any doubly stochastic W)")
    return topo


def _mix(topo, X, k):
    from simcomm.topology import mix

    if topo == "parallel":
        return np.broadcast_to(X.mean(axis=0), X.shape).copy()
    return mix(topo, X, k)


# --------------------------------------------------------------------------- the combines


def tracking(topology, *, lr: float, tracker_start: str = "gradient") -> Transform:
    r"""One ATC gradient-tracking step from the gradients ``u``: the next :class:`GTState`.

    .. math:: y \leftarrow W(y + g - g_{prev}), \qquad x \leftarrow W(x - \gamma y)

    ``tracker_start="zero"`` takes :math:`g_{prev} = g` at ``k = 0`` (a tracker that starts at 0: the
    negative control of :mod:`simcomm.optim._tracking`). ``topology`` must be doubly stochastic (checked
    when the state is made); a 1-D circulant layer runs the backend's fused ``gt_shift_step``. The next
    state goes into the block's :class:`Spare` (module doc).
    """

    def init(s, ctx):
        topo = require_stochasticity(resolve_topology(topology, s.x.shape[0]), ("doubly",), "gradient tracking")
        return topo, Spare()

    def update(G, state, s, ctx):
        topo, spare = state
        out = None
        if _gt_layer(topo, s.k) is not None:  # the fused kernel writes there; other layers make fresh arrays
            out, spare = spare_for(spare, s, lambda: GTState(*(np.empty_like(s.x) for _ in range(3)), 0))
        return tracking_step(G, topo, s, lr=lr, tracker_start=tracker_start, out=out), (topo, spare)

    return Transform(init, update)


def _gt_layer(topo, k: int):
    """The layer of step ``k`` if ``gt_shift_step`` runs it (a 1-D circulant with few offsets), else ``None``."""
    layer = None if topo == "parallel" else topo.layer(k)
    if layer is not None and layer.kind == "circulant" and len(layer.shape) == 1 and len(layer.offsets) <= _FFT_OFFSETS:
        return layer
    return None


def tracking_step(G, topo, s: GTState, *, lr: float, tracker_start: str = "gradient", out: GTState | None = None):
    """:func:`tracking`'s step on a resolved ``topo``: the next :class:`GTState`, written into ``out`` if given.

    ``out`` (checked by the caller: float64, C-contiguous, the shape of ``s.x``, no overlap with the
    inputs) saves the three fresh ``(n, d)`` arrays of a pure step; the fused kernel writes into it.
    """
    g_prev = G if (s.k == 0 and tracker_start == "zero") else s.g
    layer = _gt_layer(topo, s.k)
    if layer is not None:
        # fused: one pass over x, y, g, g_prev per column slab (the backend's gt_shift_step)
        from simcomm.backends import get_backend

        x, y, g = (np.empty_like(s.x), np.empty_like(s.y), np.empty_like(G)) if out is None else out[:3]
        get_backend().gt_shift_step(np.ascontiguousarray(s.x), np.ascontiguousarray(s.y), np.ascontiguousarray(G),
                                    np.ascontiguousarray(g_prev), float(lr),
                                    np.asarray(layer.offsets[:, 0], dtype=np.int64), np.asarray(layer.weights),
                                    x, y, g)  # g: the copy of G the next step reads, in the same pass
        return GTState(x, y, g, s.k + 1)
    y = _mix(topo, s.y + G - g_prev, s.k)
    x = _mix(topo, s.x - lr * y, s.k)
    if out is None:
        return GTState(x, y, G.copy(), s.k + 1)
    for dst, src in zip(out[:3], (x, y, G)):
        np.copyto(dst, src)
    return GTState(out.x, out.y, out.g, s.k + 1)


def exact_diffusion(topology, *, lr: float, correction: bool = True) -> Transform:
    r"""One exact-diffusion step from the gradients ``u``: the next :class:`EDState`.

    .. math:: \psi' = x - \gamma g, \quad \phi = \psi' + x - \psi, \quad x' = \tfrac12(\phi + W\phi)

    ``correction=False`` drops :math:`x - \psi` (DSGD with :math:`\bar W`: the negative control).
    ``topology`` must be symmetric and doubly stochastic (checked when the state is made). The next
    state goes into the block's :class:`Spare` (module doc), the intermediates into two arrays it keeps
    (:func:`ed_step`).
    """

    def init(s, ctx):
        topo = require_stochasticity(resolve_topology(topology, s.x.shape[0]), ("doubly",), "exact diffusion")
        return check_symmetric(topo), Spare(), None

    def update(G, state, s, ctx):
        topo, spare, scratch = state
        out, spare = spare_for(spare, s, lambda: EDState(np.empty_like(s.x), np.empty_like(s.x), 0))
        if scratch is None:
            scratch = (np.empty_like(s.x), np.empty_like(s.x) if correction else None)
        return ed_step(G, topo, s, lr=lr, correction=correction, out=out, scratch=scratch), (topo, spare, scratch)

    return Transform(init, update)


def ed_step(G, topo, s: EDState, *, lr: float, correction: bool = True, out: EDState | None = None,
            scratch=None) -> EDState:
    """:func:`exact_diffusion`'s step on a resolved ``topo``; into ``out`` (and two ``scratch`` arrays) if given.

    The same operations in the same order either way (``lr g``, ``x - lr g``, ``(psi + x) - psi_prev``,
    ``(phi + W phi) * 0.5``); with buffers only the mix makes a fresh array.
    """
    if out is None:
        psi = s.x - lr * G
        phi = psi + s.x - s.psi if correction else psi
        x = 0.5 * (phi + _mix(topo, phi, s.k))
        return EDState(x, psi, s.k + 1)
    tmp, phi = scratch
    np.multiply(G, lr, out=tmp)
    psi = np.subtract(s.x, tmp, out=out.psi)
    if correction:
        np.add(psi, s.x, out=phi)
        np.subtract(phi, s.psi, out=phi)
    else:
        phi = psi
    x = np.add(phi, _mix(topo, phi, s.k), out=out.x)
    np.multiply(x, 0.5, out=x)
    return EDState(out.x, out.psi, s.k + 1)


def push_sum(topology, *, lr: float = 0.0) -> Transform:
    r"""One push-sum (SGP) step from the gradients ``u`` (``None``: plain averaging): the next :class:`PushSumState`.

    Numerators :math:`W(x - \gamma g)`, weights :math:`W w`, over a column (or doubly) stochastic ``W``,
    checked at every step. ``topology`` is a topology (or its name) or a callable ``rng -> Topology``
    that draws a fresh ``W`` every step from the run's stream. :func:`pushsum_step` on the layer of the
    step; the next state goes into the block's :class:`Spare` (module doc), and gossip without gradients
    reads one zero array made at the start.
    """
    draw: Callable | None = topology if drawn(topology) else None

    def init(s, ctx):
        topo = None if draw is not None else resolve_topology(topology, s.x.shape[0])
        return topo, Spare(), None

    def update(G, state, s, ctx):
        topo, spare, zeros = state
        n = s.x.shape[0]
        W = resolve_topology(draw(ctx.rng), n) if draw is not None else topo
        require_stochasticity(W, ("column", "doubly"), "push-sum")
        if G is None:
            zeros = np.zeros_like(s.x) if zeros is None else zeros
            G = zeros
        out = None
        if W != "parallel" and W.layer(s.k).node_shifts is not None:  # the fused kernel writes there
            out, spare = spare_for(spare, s, lambda: PushSumState(np.empty_like(s.x), np.empty_like(s.w), 0))
        return pushsum_step(G, W, s, lr=lr, out=out), (topo, spare, zeros)

    return Transform(init, update)


def pushsum_step(G, W, s: PushSumState, *, lr: float, out: PushSumState | None = None) -> PushSumState:
    """:func:`push_sum`'s step on a resolved, checked ``W`` (``G``: ``(n, d)``), written into ``out`` if given.

    ``out`` (checked by the caller: its ``x`` float64, C-contiguous, the shape of ``s.x``, its ``w`` the
    shape of ``s.w``, none overlapping the inputs) saves the fresh arrays of a pure step. A shift pattern
    with per-node weights runs the backend's fused ``pushsum_shift_step`` (it writes into ``out``), any
    other layer CSR.
    """
    from simcomm.backends import get_backend
    from simcomm.topology import sparse_matrix

    n = s.x.shape[0]
    if W == "parallel":
        x, w = np.tile((s.x - lr * G).mean(axis=0), (n, 1)), np.ones(n)
    else:
        layer = W.layer(s.k)
        be = get_backend()
        if layer.node_shifts is not None:
            x, w = (np.empty_like(s.x), np.empty_like(s.w)) if out is None else out[:2]
            be.pushsum_shift_step(np.ascontiguousarray(s.x), s.w, np.ascontiguousarray(G), float(lr),
                                  layer.node_shifts, layer.node_weights, x, w)
            return PushSumState(x, w, s.k + 1)
        M = sparse_matrix(layer)
        args = (M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data)
        x = be.csr_mix(*args, s.x - lr * G)
        w = be.csr_mix(*args, s.w[:, None])[:, 0]
    if out is None:
        return PushSumState(x, w, s.k + 1)
    np.copyto(out.x, x)
    np.copyto(out.w, w)
    return PushSumState(out.x, out.w, s.k + 1)
