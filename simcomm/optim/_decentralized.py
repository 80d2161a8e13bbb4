r"""Decentralized (momentum) SGD over a static or time-varying topology, and parallel SGD (W = J).

DmSGD in adapt-then-combine form with a LOCAL momentum buffer (the algorithm and its randomness:
:mod:`simcomm.optim._blocks_dsgd`); DSGD is ``beta = 0``, parallel SGD the same with :math:`W = J`
(every node ends each step at the average), the reference the decentralized runs are compared with.
It is the named method ``"dsgd"`` (:mod:`simcomm.optim.methods.dsgd`) run by :func:`simcomm.optim.run`
with the nodes' watch (:func:`dsgd_watch`, the method's own: ``run(problem, build_method("dsgd", ...),
steps)`` needs no more). :func:`run_dsgd` validates a user's call and runs it;
:func:`dsgd_update` is the method's step applied once to given gradients. On numba, a least-squares
run of a few thousand ``n d`` is one compiled loop (:func:`_run_fused`, a registered acceleration of
``"dsgd"``) with the same records up to rounding.

The problem's data come from ``problem_rng(seed)`` = ``SeedSequence(seed, spawn_key=(DATA_KEY,))``,
node ``i``'s noise from ``node_noise_rng(seed, i)`` (spawn key ``(NOISE_KEY, i)``): what
:mod:`simcomm.mpi` reproduces on real processes. With a backend whose array namespace is not numpy
(cupy), :func:`run_dsgd` moves the problem's data to the device once (:func:`simcomm.models.problem_to`),
keeps every ``(n, d)`` array there, measures with device reductions (one scalar back per measurement)
and returns only the trace, with the final iterates copied to the host.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import integer, positive_int, real
from simcomm._validate import step_size as step_size_check
from simcomm.backends import array_namespace, backend_for, entry_point, get_backend, namespace_of_backend, to_host
from simcomm.optim._algebra import Ctx
from simcomm.optim._blocks_dsgd import (
    NOISE_KEY,
    NOISES,
    GossipState,
    _Noise,
    counter_keys,
    dmsgd,
    given_gradients,
    node_noise_rng,
    noise_kind,
    plans,
    require_stochasticity,
    resolve_topology,
)
from simcomm.optim._driver import DIVERGED_ERROR
from simcomm.optim._loop import run
from simcomm.optim._registry import accelerate
from simcomm.optim._schedules import SCHEDULES, step_size
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nodes import BYTES, NODE_RECORDS, NodeWatch, gossip_counters, measure_nodes, messages_sent

__all__ = [
    "check_hyper",
    "DSGDState",
    "dsgd_init",
    "dsgd_update",
    "dsgd_watch",
    "run_dsgd",
    "step_size",
    "node_noise_rng",
    "problem_rng",
    "resolve_topology",
    "messages_per_step",
    "messages_sent",
    "NOISE_KEY",
    "DATA_KEY",
    "SCHEDULES",
    "NOISES",
    "counter_keys",
    "noise_kind",
    "require_stochasticity",
]

DATA_KEY = 0


class DSGDState(NamedTuple):
    """State of DmSGD: iterates and local momentum buffers of every node, and the step counter.

    Attributes
    ----------
    x : ndarray, shape (n, d)
    m : ndarray, shape (n, d)
    k : int
    """

    x: np.ndarray
    m: np.ndarray
    k: int


def messages_per_step(topology, n: int | None = None) -> np.ndarray:
    r"""Messages each node sends per iteration, one entry per layer (mean over nodes).

    A node sends its ``y_i`` once to every node that puts weight on it (off-diagonal nonzeros of
    column ``i``): ring 2, static exponential :math:`\tau`, one-peer 1. Parallel SGD (W = J) is
    counted as a ring all-reduce: :math:`2(n-1)` messages of ``d/n`` floats per node.

    Examples
    --------
    >>> from simcomm.topology import exponential, one_peer_exponential
    >>> messages_per_step(exponential(16)), messages_per_step(one_peer_exponential(16))
    (array([4.]), array([1., 1., 1., 1.]))
    """
    from simcomm.topology import sparse_matrix

    topo = resolve_topology(topology, n)
    if topo == "parallel":
        return np.array([2.0 * (n - 1)])
    layers = topo.layers if topo.time_varying else (topo,)
    out = []
    for layer in layers:
        if layer.kind == "circulant":
            out.append(float(np.count_nonzero(np.any(layer.offsets != 0, axis=1))))
        else:
            W = sparse_matrix(layer).tocoo()
            out.append(float(np.count_nonzero((W.row != W.col) & (W.data != 0))) / layer.n)
    return np.array(out)


def _bytes_per_message(topo, n: int, d: int) -> float:
    # all-reduce chunks are d/n floats; gossip messages carry the whole d-vector
    return BYTES * d / n if topo == "parallel" else float(BYTES * d)


# --------------------------------------------------------------------------- init / update


def check_state_out(out, inputs, shape, state_name: str, count: int) -> None:
    """A one-line error unless ``out`` is a ``state_name`` of ``count`` separate float64 buffers of ``shape``.

    The buffers must be writeable and C-contiguous and share memory with none of ``inputs`` and with
    none of each other: the step writes them while it still reads the inputs.
    """
    bufs = tuple(out)[:count] if isinstance(out, tuple) else ()
    ok = len(bufs) == count and all(isinstance(b, np.ndarray) and b.shape == shape and b.dtype == np.float64
                           and b.flags.c_contiguous and b.flags.writeable for b in bufs)
    if not ok:
        raise UserError(f"out must be a {state_name} of writeable C-contiguous float64 arrays of shape {shape}")
    if any(np.may_share_memory(b, a) for b in bufs for a in inputs) or any(
            np.may_share_memory(bufs[i], bufs[j]) for i in range(len(bufs)) for j in range(i)):
        raise UserError("out overlaps the state, the gradients or itself; pass separate buffers (e.g. the state "
                        "before the current one)")


def check_hyper(lr, beta) -> None:
    """Raise a one-line :class:`~simcomm.UserError` unless ``lr > 0`` is finite and ``0 <= beta < 1``."""
    step_size_check(lr)
    real(beta, "momentum beta", low=0.0, high=1.0, high_open=True)


def _check_x0(x0) -> np.ndarray:
    x0 = np.asarray(to_host(x0), dtype=np.float64)
    if x0.ndim != 1:
        raise UserError(f"x0 must be one vector of shape (d,), got shape {x0.shape}")
    if not np.all(np.isfinite(x0)):
        raise UserError("x0 contains NaN or inf; start from a finite point")
    return x0


def dsgd_init(x0, n: int, xp=np) -> DSGDState:
    """Every node starts at ``x0`` (shape ``(d,)``) with a zero momentum buffer, in the namespace ``xp``.

    Examples
    --------
    >>> import numpy as np
    >>> dsgd_init(np.zeros(3), 4).x.shape
    (4, 3)
    """
    x0 = _check_x0(x0)
    if xp is np:
        return DSGDState(np.tile(x0, (int(n), 1)), np.zeros((int(n), x0.size)), 0)
    # built on the device: only the d-vector crosses
    return DSGDState(xp.tile(xp.asarray(x0), (int(n), 1)), xp.zeros((int(n), x0.size)), 0)


@entry_point
def dsgd_update(state: DSGDState, grads, topology, *, lr: float, beta: float = 0.0, backend=None) -> DSGDState:
    r"""One DmSGD step (pure: returns a new state, leaves ``state`` unchanged).

    Parameters
    ----------
    state : DSGDState
    grads : ndarray, shape (n, d)
        Stochastic gradients at ``state.x``, one row per node (moved to the namespace of ``state.x``).
    topology : Topology, str or ndarray
        Layer ``state.k % period`` is used for a time-varying topology; ``"parallel"`` is W = J.
    lr : float
        Step size, ``> 0``.
    beta : float
        Momentum in ``[0, 1)`` (0: DSGD).
    backend : str or module, optional
        Its kernels must accept arrays of ``state.x``'s namespace (default: the active backend, or cupy
        for a state on the device).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import one_peer_exponential
    >>> s = dsgd_init(np.zeros(1), 4)
    >>> s = dsgd_update(s, np.arange(4.0)[:, None], one_peer_exponential(4), lr=1.0)
    >>> s = dsgd_update(s, np.zeros((4, 1)), one_peer_exponential(4), lr=1.0)
    >>> s.x.ravel()   # two one-peer layers average exactly (n = 4): -mean(0..3)
    array([-1.5, -1.5, -1.5, -1.5])
    """
    check_hyper(lr, beta)
    n, d = state.x.shape
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "DSGD")
    xp = array_namespace(state.x)
    G = xp.ascontiguousarray(xp.asarray(grads, dtype=state.x.dtype))
    if G.shape != (n, d):
        raise UserError(f"grads must have shape {(n, d)}, got {G.shape}")
    # the method's step once, with these gradients, on copies: the state given is left as it is
    step = dmsgd(given_gradients(G), topo, float(lr), float(beta))
    X = xp.ascontiguousarray(state.x)
    atc = GossipState(state.m.copy(), xp.empty_like(X), plans(topo, xp))
    backend_for(backend, X)  # a device state on a host backend is one line saying how to fix it
    X, (_, atc) = step.step(X, ((), atc), Ctx(None, state.k, state.k + 1, None))
    return DSGDState(X, atc.m, state.k + 1)


# --------------------------------------------------------------------------- randomness


def problem_rng(seed: int) -> np.random.Generator:
    """Generator that builds the problem's data for ``seed``.

    Examples
    --------
    >>> bool(problem_rng(3).integers(10) == problem_rng(3).integers(10))
    True
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(DATA_KEY,)))


# --------------------------------------------------------------------------- a whole run


def dsgd_watch(problem, topology, steps: int, record_every: int = 1, blowup: float = 1e12) -> NodeWatch:
    r"""What :func:`run_dsgd` records and watches (:class:`~simcomm.optim._watch_nodes.NodeWatch`).

    :func:`~simcomm.optim._watch_nodes.measure_nodes` at the recorded steps; the consensus error and
    :math:`\|\nabla f(\bar x)\|^2` are watched (``blowup`` times 1 + their start); ``messages`` and
    ``bytes`` per node for ``topology`` (resolved for ``problem.n``).
    """
    n, d = problem.n, problem.d
    topo = resolve_topology(topology, n)
    counters = gossip_counters(messages_per_step(topo, n), _bytes_per_message(topo, n, d))
    return NodeWatch(problem, measure_nodes, NODE_RECORDS, steps, record_every, blowup=blowup,
                     watched=("consensus", "grad_norm_sq"), counters=counters)


#: ``n d`` up to which a numba run on least squares is one compiled loop (:func:`_run_fused`): there a
#: step's Python calls cost more than its arithmetic; above it the per-step kernels are memory-bound.
_FUSED_MAX = 1 << 16


def _fusable(problem, kind, on_step) -> bool:
    """Whether :func:`_run_fused` applies: least squares of at most ``_FUSED_MAX`` ``n d`` on numba (active)."""
    return (getattr(get_backend(), "NAME", "") == "numba" and problem.kind == "least_squares" and problem.H is not None
            and problem.A is not None and kind == "stream" and on_step is None
            and problem.n * problem.d <= _FUSED_MAX)


@accelerate("dsgd")
def _run_fused(problem, method, steps, *, x0=None, on_step=None, watch=None, **_) -> Trace | None:
    """``"dsgd"`` as chunks of compiled steps (:mod:`simcomm.backends._numba.dsgd_run`); same records.

    Applies to a least-squares problem of at most ``_FUSED_MAX`` ``n d`` on numba, with stream noise,
    no observer and :func:`dsgd_watch`'s records (the kernel measures and watches the same); else ``None``.
    """
    from simcomm.backends._numba.dsgd_run import layer_rows, ls_dsgd_chunk

    s = method.settings
    kind = noise_kind(s["noise"], namespace_of_backend(get_backend()))
    if (x0 is None or not isinstance(watch, NodeWatch) or watch.measure is not measure_nodes
            or watch.watched != ("consensus", "grad_norm_sq") or not _fusable(problem, kind, on_step)):
        return None
    n, d = problem.n, problem.d
    topo = require_stochasticity(resolve_topology(s["topology"], n), ("doubly",), "DSGD")
    draw = _Noise(s["seed"], n, d, steps) if s["sigma"] > 0 else None
    X, M = np.ascontiguousarray(x0), np.zeros((n, d))
    rec_steps = watch.rec.step
    rec_index = np.full(steps + 1, -1, np.int64)
    rec_index[rec_steps] = np.arange(rec_steps.size)
    vals = np.full((rec_steps.size, 4), DIVERGED_ERROR)
    watch.check(0, X)  # the start: its record and the limits
    vals[0] = [watch.rec.records[name][0, 0] for name in NODE_RECORDS]
    rowptr, cols, wts, mean = layer_rows(plans(topo), n)
    lr, schedule, k0 = s["lr"], s["schedule"], s["k0"]
    lrs = np.array([step_size(lr, k, schedule, k0, steps) for k in range(steps)], dtype=np.float64)
    A, y, H, xs = (np.ascontiguousarray(a, dtype=np.float64) for a in (problem.A, problem.y, problem.H,
                                                                       problem.x_star))
    Y, G = np.empty_like(X), np.empty_like(X)
    chunk = draw.block if draw is not None else max(1, min(steps, 1 << 14))
    quiet = np.zeros((1, n, d))
    at = -1
    with np.errstate(all="ignore"):
        for start in range(0, steps, chunk):  # chunks of compiled steps: the noise is drawn a block at a time
            count = min(chunk, steps - start)
            noise = draw.next_block(count) if draw is not None else quiet
            at = ls_dsgd_chunk(A, y, H, xs, X, M, Y, G, noise, float(s["sigma"]), lrs, float(s["beta"]), start,
                               count, rowptr, cols, wts, mean, rec_index, vals, watch.limits[0], watch.limits[1])
            if at >= 0:
                break
    watch.fill(vals, at)
    return watch.trace(X)


@entry_point
def run_dsgd(problem, topology, *, steps: int, lr: float, beta: float = 0.0, sigma: float = 0.0, seed: int = 0,
             schedule: str = "constant", k0: float = 10.0, record_every: int = 1, blowup: float = 1e12,
             x0=None, backend=None, noise: str = "auto", on_step=None) -> Trace:
    r"""Run DmSGD (or parallel SGD with ``topology="parallel"``) on a :class:`~simcomm.models.NodeProblem`.

    Parameters
    ----------
    problem : NodeProblem
        From :mod:`simcomm.models` (gives :math:`\nabla f_i`, :math:`f^\star`, ``x0``).
    topology : Topology, str or ndarray
        Static or time-varying topology, a name for :func:`simcomm.topology.build`, ``"parallel"``
        (W = J), or a doubly stochastic matrix.
    steps : int
        Iterations ``T``.
    lr : float
        (Initial) step size, ``> 0``.
    beta : float
        Momentum in ``[0, 1)``.
    sigma : float
        Gradient noise standard deviation per coordinate, ``>= 0``.
    seed : int
        Root of the per-node noise streams (see the module doc). An integer, not a Generator: every node
        derives its own stream from it, so :mod:`simcomm.mpi`'s ranks reproduce the run bit for bit.
    schedule : {"constant", "inv_sqrt", "cosine"}
        Step-size schedule (:func:`step_size`; ``cosine`` decays over ``steps``).
    k0 : float
        Decay scale of ``inv_sqrt``.
    record_every : int
        Measure every this many steps (and at ``0`` and ``steps``).
    blowup : float
        Divergence: non-finite state, or :math:`\|\nabla f(\bar x)\|^2` or the consensus error above
        ``blowup`` times its initial value (plus 1), checked at the recorded steps
        (:func:`simcomm.optim._driver.diverged`). The run stops and records ``diverged_at``; it never
        raises.
    x0 : ndarray, shape (d,), optional
        Common starting point (default ``problem.x0``).
    backend : str or module, optional
        ``"numpy"``, ``"numba"`` (default) or ``"cupy"`` (the whole run on the GPU; module doc).
    noise : {"auto", "stream", "counter"}
        Gradient-noise generator (module doc): ``"stream"`` (per-node numpy streams, what
        :mod:`simcomm.mpi` reproduces), ``"counter"`` (counter normals keyed by :func:`counter_keys`,
        drawn on the backend's device), ``"auto"``: ``"stream"`` on numpy/numba, ``"counter"`` on a
        device backend.
    on_step : callable, optional
        ``on_step(k)`` after update ``k`` (:func:`simcomm.optim._driver.drive`; e.g. a progress bar).

    Returns
    -------
    Trace
        ``records``, each of shape ``(T,)`` (``inf`` from a divergence on: the driver's convention): ``consensus``
        :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, ``grad_norm_sq`` :math:`\|\nabla f(\bar x)\|^2`,
        ``node_grad_norm_sq`` :math:`\frac1n\sum_i\|\nabla f(x_i)\|^2` (the global gradient at the models
        the nodes hold), ``subopt`` :math:`f(\bar x) - f^\star`, ``messages`` and ``bytes`` (cumulative,
        per node, mean over nodes; float64 payloads). ``x``: the nodes' final iterates ``(n, d)``
        (non-finite after a divergence). ``diverged_at``: ``[t]``, the first measured step at which the
        state was non-finite or blew up, or ``[-1]``.

    Examples
    --------
    >>> from simcomm.models import heterogeneous_least_squares
    >>> prob = heterogeneous_least_squares(8, 4, b=0.0, rng=0)   # b = 0: DSGD converges exactly
    >>> tr = run_dsgd(prob, "exponential", steps=200, lr=0.1, seed=1)
    >>> bool(tr.subopt[-1] < 1e-6 * tr.subopt[0]), float(tr.messages[-1])   # tau = 3 messages per step
    (True, 600.0)
    """
    from simcomm.models import problem_to
    from simcomm.optim._registry import build_method

    check_hyper(lr, beta)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UserError(f"run_dsgd: seed = {seed!r} is not allowed; pass a non-negative integer (the root of the "
                        "data and noise streams)")
    steps = integer(steps, "steps", low=0)
    real(sigma, "noise sigma", low=0.0)
    positive_int(record_every, "record_every")
    step_size(lr, 0, schedule, k0, steps)  # validates the schedule name
    xp = namespace_of_backend(get_backend())
    kind = noise_kind(noise, xp)
    n = problem.n
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "DSGD")
    X = dsgd_init(problem.x0 if x0 is None else x0, n, xp).x
    problem = problem_to(problem, xp)  # once: the data live where the state does
    method = build_method("dsgd", topology=topo, lr=lr, beta=beta, sigma=sigma, seed=seed, noise=kind,
                          schedule=schedule, k0=k0)
    watch = dsgd_watch(problem, topo, steps, record_every, blowup)
    with np.errstate(all="ignore"):
        return run(problem, method, steps, x0=X, on_step=on_step, watch=watch)
