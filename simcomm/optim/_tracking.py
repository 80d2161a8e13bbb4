r"""Bias-corrected decentralized methods (gradient tracking, exact diffusion) and push-sum SGD.

All vectorised over nodes (one ``(n, d)`` array), the combine by :func:`simcomm.topology.mix` (shift
kernels for circulants and directed shift patterns, CSR otherwise: never an ``n x n`` matrix).
Gradient noise comes from the same per-node streams as :func:`simcomm.optim.run_dsgd`
(``node_noise_rng(seed, i)``, one ``standard_normal(d)`` per step), so a DSGD run and a run of these
methods with the same seed see the same noise draws (common random numbers).

Gradient tracking (ATC form; Nedic, Olshevsky & Shi 2017 "DIGing"; Xu et al. 2015)::

    y_i <- sum_j W_ij (y_j + g_j(x_j^k) - g_j(x_j^{k-1}))     # tracker of the average gradient
    x_i <- sum_j W_ij (x_j - lr y_j)

started from ``y^{-1} = 0`` and ``g^{-1} = 0`` (``tracker_start="gradient"``), so the first tracker is
``W g^0`` and, for doubly stochastic ``W``, :math:`\bar y^k = \bar g^k` at every step: at a fixed point
:math:`\bar g = 0`, the optimum, whatever the heterogeneity. ``tracker_start="zero"`` starts from
``g^{-1} = g^0`` (a tracker that starts at 0): then :math:`\bar y^k = \bar g^k - \bar g^0` and the
fixed point is where the average gradient equals the one at the start (the negative control).

Exact diffusion (Yuan, Ying, Zhao & Sayed 2019, Part I; D^2 of Tang et al. 2018 with
:math:`\bar W = (I + W)/2`)::

    psi^{k+1} = x^k - lr g(x^k)
    phi^{k+1} = psi^{k+1} + x^k - psi^k          (psi^0 = x^0)
    x^{k+1}   = Wbar phi^{k+1},   Wbar = (I + W)/2

needs a symmetric doubly stochastic ``W``.

Push-sum SGD (Kempe et al. 2003; SGP, Assran et al. 2019) over a column-stochastic ``W``::

    x_i <- sum_j W_ij (x_j - lr g_j(z_j)),   w_i <- sum_j W_ij w_j,   z_i = x_i / w_i

from ``w = 1``. The numerators' sum is kept (columns sum to 1), the weights carry the bias of the
mixing, and the ratio ``z`` is de-biased. ``debias=False`` uses the numerators themselves (plain
gossip with the same column-stochastic ``W``: the control).

The maths lives in the blocks of :mod:`simcomm.optim._blocks_tracking`; the named methods
``"gradient_tracking"``, ``"exact_diffusion"``, ``"pushsum"`` and ``"pushsum_sgd"``
(:mod:`simcomm.optim.methods`) compose them, and the functions here validate a user's call and run the
named method with :func:`simcomm.optim.run` and the family's watch
(:mod:`simcomm.optim._watch_nodes`). The public pure steps (:func:`gt_update`, :func:`ed_update`,
:func:`pushsum_update`) are the blocks' updates.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError, closest
from simcomm._validate import one_of, real
from simcomm.backends import entry_point
from simcomm.optim._blocks_tracking import (
    EDState,
    GTState,
    PushSumState,
    check_symmetric,
    drawn,
    ed_step,
    pushsum_step,
    tracking_step,
)
from simcomm.optim._decentralized import check_hyper, check_state_out, require_stochasticity, resolve_topology
from simcomm.optim._loop import run
from simcomm.optim._registry import build_method
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nodes import check_schedule, pushsum_sgd_watch, pushsum_watch, tracking_watch

__all__ = [
    "TRACKING_METHODS",
    "TRACKER_STARTS",
    "GTState",
    "gt_init",
    "gt_update",
    "EDState",
    "ed_init",
    "ed_update",
    "PushSumState",
    "pushsum_init",
    "pushsum_update",
    "run_tracking",
    "run_pushsum",
    "run_pushsum_sgd",
    "uneven_digraph",
    "DIGRAPHS",
]

#: Methods of :func:`run_tracking`: gradient tracking and exact diffusion.
TRACKING_METHODS = ("gradient_tracking", "exact_diffusion")
#: Starts of the gradient tracker (module doc).
TRACKER_STARTS = ("gradient", "zero")


# --------------------------------------------------------------------------- gradient tracking


def gt_init(x0, n: int) -> GTState:
    """Every node at ``x0``; tracker and previous gradient zero (so the first tracker is ``W g^0``).

    Examples
    --------
    >>> gt_init(np.zeros(2), 3).y.shape
    (3, 2)
    """
    x0 = np.asarray(x0, dtype=np.float64)
    if x0.ndim != 1 or not np.all(np.isfinite(x0)):
        raise UserError(f"x0 must be one finite vector of shape (d,), got shape {x0.shape}")
    z = np.zeros((int(n), x0.size))
    return GTState(np.tile(x0, (int(n), 1)), z, z.copy(), 0)


@entry_point
def gt_update(state: GTState, grads, topology, *, lr: float, tracker_start: str = "gradient", out=None,
              backend=None) -> GTState:
    r"""One ATC gradient-tracking step (pure): ``y <- W(y + g - g_prev)``, then ``x <- W(x - lr y)``.

    Parameters
    ----------
    state : GTState
    grads : ndarray, shape (n, d)
        Stochastic gradients at ``state.x``.
    topology : Topology, str or ndarray
        Doubly stochastic (checked).
    lr : float
    tracker_start : {"gradient", "zero"}
        At ``k = 0`` only: ``"zero"`` replaces the previous gradient by ``grads`` (module doc).
    out : GTState, optional
        Buffers for the result (its ``x``, ``y``, ``g``: writeable C-contiguous float64 arrays of shape
        ``(n, d)``, none overlapping ``state``'s arrays, ``grads`` or each other; ``out.k`` is ignored).
        A loop that alternates two states saves the three fresh arrays of every step; the returned
        state holds ``out``'s arrays.
    backend : str or module, optional

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring
    >>> s = gt_update(gt_init(np.zeros(1), 3), np.array([[3.0], [0.0], [0.0]]), ring(3), lr=1.0)
    >>> s.x.ravel(), float(s.y.mean())   # every node moved by the average gradient; ybar = gbar
    (array([-1., -1., -1.]), 1.0)
    """
    check_hyper(lr, 0.0)
    _check_tracker_start(tracker_start)
    n, d = state.x.shape
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "gradient tracking")
    G = _grads(grads, n, d)
    if out is not None:
        check_state_out(out, (state.x, state.y, state.g, G), (n, d), "GTState", 3)
    return tracking_step(G, topo, state, lr=lr, tracker_start=tracker_start, out=out)


def _check_tracker_start(tracker_start) -> None:
    if tracker_start not in TRACKER_STARTS:
        raise UserError(f"unknown tracker_start '{tracker_start}'{closest(tracker_start, TRACKER_STARTS)}; "
                        f"use one of {', '.join(TRACKER_STARTS)}")


def _grads(grads, n: int, d: int) -> np.ndarray:
    G = np.asarray(grads, dtype=np.float64)
    if G.shape != (n, d):
        raise UserError(f"grads must have shape {(n, d)}, got {G.shape}")
    return G


# --------------------------------------------------------------------------- exact diffusion


def ed_init(x0, n: int) -> EDState:
    """Every node at ``x0``, ``psi^0 = x^0``.

    Examples
    --------
    >>> float(ed_init(np.ones(2), 3).psi.sum())
    6.0
    """
    s = gt_init(x0, n)
    return EDState(s.x, s.x.copy(), 0)


@entry_point
def ed_update(state: EDState, grads, topology, *, lr: float, correction: bool = True, backend=None) -> EDState:
    r"""One exact-diffusion step (pure): adapt, correct, combine with :math:`\bar W = (I + W)/2`.

    ``correction=False`` drops the term :math:`x^k - \psi^k` (then it is DSGD with :math:`\bar W`,
    which keeps a heterogeneity floor: the negative control).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring
    >>> s = ed_update(ed_init(np.zeros(1), 3), np.array([[3.0], [0.0], [0.0]]), ring(3), lr=1.0)
    >>> s.x.ravel()   # Wbar (x0 - g): node 0 keeps (1/2 + 1/6) of -3, the others 1/6
    array([-2. , -0.5, -0.5])
    """
    check_hyper(lr, 0.0)
    n, d = state.x.shape
    topo = check_symmetric(require_stochasticity(resolve_topology(topology, n), ("doubly",), "exact diffusion"))
    G = _grads(grads, n, d)
    return ed_step(G, topo, state, lr=lr, correction=correction)


# --------------------------------------------------------------------------- push-sum


def pushsum_init(X0) -> PushSumState:
    """Numerators ``X0`` (shape ``(n, d)``: each node's own start) and weights 1.

    Examples
    --------
    >>> pushsum_init(np.zeros((3, 2))).w
    array([1., 1., 1.])
    """
    X0 = np.array(X0, dtype=np.float64)
    if X0.ndim != 2 or not np.all(np.isfinite(X0)):
        raise UserError(f"X0 must be a finite (n, d) array, one row per node; got shape {X0.shape}")
    return PushSumState(X0, np.ones(X0.shape[0]), 0)


@entry_point
def pushsum_update(state: PushSumState, grads, topology, *, lr: float = 0.0, out=None, backend=None) -> PushSumState:
    r"""One push-sum (SGP) step (pure): numerators ``W (x - lr g)``, weights ``W w``.

    ``topology`` must be column (or doubly) stochastic; a shift pattern with per-node weights
    (:func:`simcomm.topology.directed_exponential`) runs the fused ``pushsum_shift_step`` kernel.
    ``grads`` (shape ``(n, d)``, taken at :attr:`PushSumState.z`) may be ``None`` for plain
    averaging; ``lr = 0`` is allowed.

    ``out`` (optional): a :class:`PushSumState` whose ``x`` (shape ``(n, d)``) and ``w`` (shape ``(n,)``)
    are writeable C-contiguous float64 arrays overlapping neither ``state``'s arrays, ``grads`` nor each
    other (``out.k`` is ignored); the result is written there. A loop that alternates two states
    allocates nothing per step (the fused kernel writes into them; other layers copy their result in).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import directed_ring
    >>> t = directed_ring(3, self_weights=[0.5, 0.2, 0.8])
    >>> s = pushsum_init(np.array([[3.0], [0.0], [0.0]]))
    >>> for _ in range(200):
    ...     s = pushsum_update(s, None, t)
    >>> s.z.ravel().round(12), s.x.ravel().round(3)   # the ratio is the average; numerators are not:
    (array([1., 1., 1.]), array([0.727, 0.455, 1.818]))

    (the numerators tend to :math:`3 v`, :math:`v_i \propto 1/(1 - a_i)` the Perron vector of this ``W``.)
    """
    real(lr, "step size lr", low=0.0)
    n, d = state.x.shape
    topo = resolve_topology(topology, n)
    require_stochasticity(topo, ("column", "doubly"), "push-sum")
    G = np.zeros((n, d)) if grads is None else _grads(grads, n, d)
    if out is not None:
        inputs = (state.x, state.w) + (() if grads is None else (G,))
        check_state_out(out, inputs, (n, d), "PushSumState", 1)
        check_state_out((out.w,), inputs + (out.x,), (n,), "PushSumState (its w)", 1)
    return pushsum_step(G, topo, state, lr=lr, out=out)


@entry_point
def run_pushsum(X0, topology, *, steps: int, debias: bool = True, record_every: int = 1, backend=None,
                rng=None) -> Trace:
    r"""Push-sum average consensus from each node's ``X0[i]``; records the distance to the exact average.

    Parameters
    ----------
    X0 : ndarray, shape (n, d)
    topology : Topology, or callable ``rng -> Topology``
        Column (or doubly) stochastic; a callable draws a fresh (random) topology every step from ``rng``.
    steps : int
    debias : bool
        Report the ratio ``z = x / w`` (push-sum) or the numerators ``x`` themselves (plain gossip with
        the same column-stochastic ``W``: the control).
    record_every : int
    backend : str or module, optional
    rng : numpy.random.Generator or seed, optional
        Needed with a callable ``topology``.

    Returns
    -------
    Trace
        ``records``: ``max_error`` :math:`\max_i\|z_i - \bar x^0\|_\infty` and ``mean_sq_error``
        :math:`\frac1n\sum_i\|z_i - \bar x^0\|^2` (or the same for the numerators with ``debias=False``),
        ``weight_spread`` (``max w / min w``). ``x``: the final reported models.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import directed_exponential
    >>> t = directed_exponential(8, self_weights=np.linspace(0.1, 0.8, 8))
    >>> X0 = np.arange(8.0)[:, None]
    >>> bool(run_pushsum(X0, t, steps=300).max_error[-1] < 1e-12)
    True
    >>> bool(run_pushsum(X0, t, steps=300, debias=False).max_error[-1] > 0.1)
    True
    """
    steps = check_schedule(steps, record_every)
    state = pushsum_init(X0)
    n = state.x.shape[0]
    if drawn(topology):
        if rng is None:
            raise UserError("a topology drawn every step needs rng= (a seed or a numpy Generator)")
    else:
        topology = resolve_topology(topology, n)
    return run(None, build_method("pushsum", topology=topology), steps, rng=rng, x0=state,
               watch=pushsum_watch(state, steps, record_every, debias))


#: Static digraphs with per-node (push) weights that push-sum SGD and its MPI run take by name.
DIGRAPHS = ("directed_ring", "directed_exponential")

#: spawn key of the stream that draws the self-weights of :func:`uneven_digraph` (apart from data and noise)
WEIGHTS_KEY = 3


def uneven_digraph(name: str, n: int, *, seed: int, low: float = 0.1, high: float = 0.9):
    r"""A column-stochastic digraph with self-weights :math:`a_i \sim U[low, high]` drawn from ``seed``.

    The weights come from ``SeedSequence(seed, spawn_key=(WEIGHTS_KEY,))``, so a simulator and an MPI
    run (:mod:`simcomm.mpi`) with the same seed build the same ``W`` without sending it.

    Parameters
    ----------
    name : {"directed_ring", "directed_exponential"}
    n : int
    seed : int
    low, high : float
        ``0 <= low <= high < 1``.

    Examples
    --------
    >>> t = uneven_digraph("directed_ring", 4, seed=1)
    >>> t.stochasticity, t.name
    ('column', 'directed_ring')
    """
    from simcomm.topology import directed_exponential, directed_ring

    one_of(name, DIGRAPHS, "push-sum digraph")
    if not (0.0 <= low <= high < 1.0):
        raise UserError(f"self-weights need 0 <= low <= high < 1, got low={low}, high={high}")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(WEIGHTS_KEY,)))
    a = rng.uniform(low, high, int(n))
    make = directed_ring if name == "directed_ring" else directed_exponential
    return make(int(n), self_weights=a, weighting="push")


@entry_point
def run_pushsum_sgd(problem, topology, *, steps: int, lr: float, sigma: float = 0.0, seed: int = 0,
                    record_every: int = 1, debias: bool = True, backend=None) -> Trace:
    r"""Push-sum SGD (SGP) on a :class:`~simcomm.models.NodeProblem` over a column-stochastic digraph.

    Per step: gradients at the de-biased models :math:`z_i = x_i / w_i` (plus the per-node noise of
    :func:`~simcomm.optim.run_dsgd`, ``node_noise_rng(seed, i)``), then :func:`pushsum_update`
    (numerators ``W (x - lr g)``, weights ``W w``). ``debias=False`` takes the gradients at the
    numerators instead (SGD over plain column-stochastic gossip). :mod:`simcomm.mpi` ``pushsum`` runs
    the same arithmetic with one rank per node.

    Parameters
    ----------
    problem : NodeProblem
    topology : Topology or str
        Column (or doubly) stochastic.
    steps : int
    lr : float
        Constant step size.
    sigma : float
    seed : int
    record_every : int
    debias : bool
    backend : str or module, optional

    Returns
    -------
    Trace
        ``records``: ``node_dist_sq`` :math:`\frac1n\sum_i\|z_i - x^\star\|^2` and ``weight_spread``;
        ``x`` the final de-biased models :math:`z` (the numerators with ``debias=False``).

    Examples
    --------
    >>> from simcomm.models import heterogeneous_least_squares
    >>> prob = heterogeneous_least_squares(8, 3, b=0.0, rng=0)
    >>> tr = run_pushsum_sgd(prob, uneven_digraph("directed_exponential", 8, seed=0), steps=2000, lr=0.2 / prob.L)
    >>> bool(tr.node_dist_sq[-1] < 1e-20)
    True
    """
    check_hyper(lr, 0.0)
    real(sigma, "noise sigma", low=0.0)
    steps = check_schedule(steps, record_every)
    n = problem.n
    topo = resolve_topology(topology, n)
    require_stochasticity(topo, ("column", "doubly"), "push-sum SGD")
    m = build_method("pushsum_sgd", topology=topo, lr=lr, sigma=sigma, seed=seed, debias=bool(debias))
    x0 = pushsum_init(np.tile(np.asarray(problem.x0, dtype=np.float64), (n, 1)))
    with np.errstate(all="ignore"):
        return run(problem, m, steps, x0=x0, watch=pushsum_sgd_watch(problem, steps, record_every, debias))


# --------------------------------------------------------------------------- a whole run


@entry_point
def run_tracking(problem, topology, *, method: str = "gradient_tracking", steps: int, lr: float,
                 sigma: float = 0.0, seed: int = 0, record_every: int = 1, tracker_start: str = "gradient",
                 correction: bool = True, blowup: float = 1e12, backend=None) -> Trace:
    r"""Run gradient tracking or exact diffusion on a :class:`~simcomm.models.NodeProblem` from ``problem.x0``.

    Parameters
    ----------
    problem : NodeProblem
    topology : Topology, str or ndarray
        Doubly stochastic (symmetric for exact diffusion).
    method : {"gradient_tracking", "exact_diffusion"}
    steps : int
    lr : float
        Constant step size.
    sigma : float
        Gradient noise per coordinate (the per-node streams of :func:`~simcomm.optim.run_dsgd`).
    seed : int
    record_every : int
    tracker_start : {"gradient", "zero"}
        Gradient tracking only (module doc).
    correction : bool
        Exact diffusion only: ``False`` drops its correction term (:func:`ed_update`).
    blowup : float
        A node distance above ``blowup`` times its start (plus 1) stops the run as diverged.
    backend : str or module, optional

    Returns
    -------
    Trace
        ``records``: ``node_dist_sq`` :math:`\frac1n\sum_i\|x_i - x^\star\|^2`, ``consensus``
        :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2` and ``subopt`` :math:`f(\bar x) - f^\star`;
        ``x`` the final iterates.

    Examples
    --------
    >>> from simcomm.models import heterogeneous_least_squares
    >>> prob = heterogeneous_least_squares(8, 4, b=1.0, rng=0)
    >>> tr = run_tracking(prob, "ring", steps=3000, lr=0.1 / prob.L)
    >>> bool(tr.node_dist_sq[-1] < 1e-20)   # no heterogeneity floor
    True
    """
    one_of(method, TRACKING_METHODS, "method")
    check_hyper(lr, 0.0)
    real(sigma, "noise sigma", low=0.0)
    steps = check_schedule(steps, record_every)
    n = problem.n
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), method.replace("_", " "))
    if method == "exact_diffusion":
        check_symmetric(topo)
        m = build_method(method, topology=topo, lr=lr, correction=bool(correction), sigma=sigma, seed=seed)
        x0 = ed_init(problem.x0, n)
    else:
        _check_tracker_start(tracker_start)
        m = build_method(method, topology=topo, lr=lr, tracker_start=tracker_start, sigma=sigma, seed=seed)
        x0 = gt_init(problem.x0, n)
    with np.errstate(all="ignore"):
        return run(problem, m, steps, x0=x0, watch=tracking_watch(problem, steps, record_every, blowup))
