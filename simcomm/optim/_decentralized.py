r"""Decentralized (momentum) SGD over a static or time-varying topology, and parallel SGD (W = J).

DmSGD in adapt-then-combine form with a LOCAL momentum buffer (papers/exponential_graph.md (d) [C]:
BlueFog's ``DistributedAdaptThenCombineOptimizer``)::

    g_i = grad f_i(x_i) + sigma * xi_i          # local stochastic gradient
    m_i = beta * m_i + g_i                      # local momentum buffer, NOT averaged
    y_i = x_i - lr_k * m_i                      # adapt
    x_i = sum_j W^(k)_ij y_j                    # combine (static W, or one-peer W^(k))

DSGD is ``beta = 0``. Parallel SGD is the same with :math:`W = J` (every node ends each step at the
average), the reference the decentralized runs are compared with.

The ``n`` nodes are one ``(n, d)`` array. The combine never forms an ``n x n`` matrix: 1-D circulant
layers (ring, exponential, one-peer) are shifted adds and other graphs use CSR, in a fused backend
kernel (:func:`simcomm.backends._numba.dsgd.atc_shift_step`) that reads ``X, M, G`` and writes ``M``
and the new ``X`` once per step.

Randomness (what :mod:`simcomm.mpi` reproduces on real processes): the problem's data come from
``SeedSequence(seed, spawn_key=(DATA_KEY,))``; node ``i``'s gradient noise comes from its generator
``node_noise_rng(seed, i) = default_rng(SeedSequence(seed, spawn_key=(NOISE_KEY, i)))`` in one of two
ways (``noise=`` of :func:`run_dsgd`):

* ``"stream"``: one ``standard_normal(d)`` per step from that generator, in order (host arrays: the
  default on the numpy and numba backends);
* ``"counter"``: the generator's first draw ``integers(0, 2**64, dtype=uint64)`` is the node's key,
  and step ``k`` adds the counter normals of :func:`simcomm.backends._numpy.noise.add_counter_normals`
  (a pure function of key, step and coordinate, computed where the state lives: the default on a
  device backend, where a host stream would copy ``n d`` floats per step).

Device residency: with a backend whose array namespace ``xp`` is not numpy (cupy), :func:`run_dsgd`
moves the problem's data to the device once (:func:`simcomm.models.problem_to`), keeps the iterates,
momentum buffers, gradients and noise there, measures with device reductions (one scalar back per
measurement) and returns only the trace, with the final iterates copied to the host. The numpy and
numba paths run the same code with ``xp = numpy``, operation for operation as before.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import integer, one_of, positive_int, real
from simcomm._validate import step_size as step_size_check
from simcomm.backends._xp import array_namespace, namespace_of_backend, to_host
from simcomm.optim._driver import DIVERGED_ERROR, Recorder, diverged, drive, record_steps
from simcomm.optim._schedules import SCHEDULES, step_size
from simcomm.optim._trace import Trace

__all__ = [
    "check_hyper",
    "DSGDState",
    "dsgd_init",
    "dsgd_update",
    "run_dsgd",
    "step_size",
    "node_noise_rng",
    "problem_rng",
    "resolve_topology",
    "messages_per_step",
    "NOISE_KEY",
    "DATA_KEY",
    "SCHEDULES",
    "NOISES",
    "counter_keys",
    "require_stochasticity",
]

NOISE_KEY = 1
DATA_KEY = 0
#: Gradient-noise generators of :func:`run_dsgd` (module doc): ``auto`` is ``stream`` on a host backend,
#: ``counter`` on a device backend.
NOISES = ("auto", "stream", "counter")
_BYTES = 8  # float64 on the wire


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


# --------------------------------------------------------------------------- topology plumbing


def resolve_topology(topology, n: int | None = None):
    """Normalise ``topology``: a Topology, ``"parallel"`` (W = J), a name for ``build``, or a matrix.

    A matrix goes through :func:`simcomm.topology.from_matrix`, which rejects a ``W`` that is not
    doubly stochastic with one line.

    Examples
    --------
    >>> resolve_topology("ring", 4).name, resolve_topology("parallel", 4)
    ('ring', 'parallel')
    """
    from simcomm.topology import Topology, build, from_matrix

    if isinstance(topology, Topology):
        if n is not None and topology.n != n:
            raise UserError(f"topology has n={topology.n} nodes but the problem has n={n}; build it with n={n}")
        return topology
    if isinstance(topology, str):
        if topology == "parallel":
            return "parallel"
        if n is None:
            raise UserError(f"topology '{topology}' given by name needs the number of nodes n")
        return build(topology, n)
    W = np.asarray(topology, dtype=np.float64)
    topo = from_matrix(W)
    if n is not None and topo.n != n:
        raise UserError(f"W is {topo.n}x{topo.n} but the problem has n={n} nodes; W must be n x n")
    return topo


def require_stochasticity(topo, allowed, method: str):
    """Raise a one-line :class:`~simcomm.UserError` unless every layer's declared stochasticity is in ``allowed``."""
    if topo == "parallel":
        return topo
    kind = topo.stochasticity
    if kind not in allowed:
        fix = ("use push-sum (run_pushsum) for a column-stochastic W" if kind == "column" else
               "a row-stochastic W drives every node to a weighted average, not the average")
        raise UserError(f"{method} needs a {' or '.join(allowed)} stochastic mixing matrix, but topology "
                        f"'{topo.name}' is {kind} stochastic; {fix}")
    return topo


def _layer_plan(layer):
    """Kernel arguments for one static layer: ('shift', shifts, weights) or ('csr', indptr, indices, data)."""
    from simcomm.topology import sparse_matrix

    if layer.kind == "circulant" and len(layer.shape) == 1 and len(layer.weights) <= 64:
        return ("shift", np.ascontiguousarray(layer.offsets[:, 0], dtype=np.int64),
                np.asarray(layer.weights, dtype=np.float64))
    if (layer.kind == "circulant" and len(layer.shape) == 1 and np.allclose(layer.weights, 1.0 / layer.n)
            and len(layer.weights) == layer.n):
        return ("mean",)  # complete graph: W = J
    W = sparse_matrix(layer)
    return ("csr", W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data.astype(np.float64))


def _plans(topo, xp=np):
    """Kernel arguments per layer; with a device ``xp`` the CSR arrays (O(nnz)) are moved there once.

    Shift offsets and weights (at most 64 scalars, kernel parameters) stay on the host.
    """
    if topo == "parallel":
        return [("mean",)]
    layers = topo.layers if topo.time_varying else (topo,)
    plans = [_layer_plan(layer) for layer in layers]
    if xp is not np:
        plans = [p if p[0] != "csr" else ("csr",) + tuple(xp.asarray(a) for a in p[1:]) for p in plans]
    return plans


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


def messages_sent(per_layer, steps) -> np.ndarray:
    """Messages per node after each of ``steps`` updates, cycling through ``per_layer`` (one entry per layer).

    Examples
    --------
    >>> messages_sent(np.array([1.0, 2.0]), np.array([0, 1, 2, 5])).tolist()
    [0.0, 1.0, 3.0, 7.0]
    """
    per_layer = np.asarray(per_layer, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.int64)
    cum = np.r_[0.0, np.cumsum(per_layer)]
    return (steps // per_layer.size) * cum[-1] + cum[steps % per_layer.size]


def _bytes_per_message(topo, n: int, d: int) -> float:
    # all-reduce chunks are d/n floats; gossip messages carry the whole d-vector
    return _BYTES * d / n if topo == "parallel" else float(_BYTES * d)


# --------------------------------------------------------------------------- init / update


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


def _apply(plan, X, M, G, lr, beta, out, be):
    if plan[0] == "shift":
        return be.atc_shift_step(X, M, G, lr, beta, plan[1], plan[2], out)
    if plan[0] == "csr":
        return be.atc_csr_step(X, M, G, lr, beta, plan[1], plan[2], plan[3], out)
    # W = J: adapt, then every node takes the average
    xp = array_namespace(X)
    xp.multiply(M, beta, out=M)
    M += G
    Y = X - lr * M
    out[...] = Y.mean(axis=0)
    return out


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
        Its kernels must accept arrays of ``state.x``'s namespace (numpy, or cupy on the device).

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
    from simcomm.backends import get_backend

    check_hyper(lr, beta)
    n, d = state.x.shape
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "DSGD")
    xp = array_namespace(state.x)
    plans = _plans(topo, xp)
    G = xp.ascontiguousarray(xp.asarray(grads, dtype=state.x.dtype))
    if G.shape != (n, d):
        raise UserError(f"grads must have shape {(n, d)}, got {G.shape}")
    M = state.m.copy()
    out = xp.empty_like(state.x)
    _apply(plans[state.k % len(plans)], xp.ascontiguousarray(state.x), M, G, float(lr), float(beta), out,
           get_backend(backend))
    return DSGDState(out, M, state.k + 1)


# --------------------------------------------------------------------------- randomness


def node_noise_rng(seed: int, i: int) -> np.random.Generator:
    """Generator of node ``i``'s gradient noise (the same on a real MPI rank ``i``).

    Examples
    --------
    >>> float(node_noise_rng(3, 0).standard_normal()) == float(node_noise_rng(3, 0).standard_normal())
    True
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(NOISE_KEY, int(i))))


def counter_keys(seed: int, n: int) -> np.ndarray:
    """Counter keys of ``noise="counter"``: ``keys[i]`` is the first draw of :func:`node_noise_rng` ``(seed, i)``.

    The draw is ``integers(0, 2**64, dtype=np.uint64)``, so a process holding node ``i`` derives its
    key from ``(seed, i)`` alone, as it does its stream. Node ``i`` uses the counters ``0 .. 2 T d - 1``
    of its key's SplitMix64 stream over ``T`` steps; two nodes' counters overlap only if their keys
    differ by ``t * 0x9E3779B97F4A7C15`` (mod 2**64) with ``|t| < 2 T d``, which for independent
    uniform keys has probability below ``n**2 * 2 T d / 2**64`` (1.4e-7 at n = 256, d = 10^6, T = 20).

    Examples
    --------
    >>> k = counter_keys(3, 2)
    >>> k.dtype, bool(k[1] == node_noise_rng(3, 1).integers(0, 2**64, dtype=np.uint64))
    (dtype('uint64'), True)
    """
    return np.array([node_noise_rng(seed, i).integers(0, 2**64, dtype=np.uint64) for i in range(int(n))],
                    dtype=np.uint64)


def problem_rng(seed: int) -> np.random.Generator:
    """Generator that builds the problem's data for ``seed``.

    Examples
    --------
    >>> bool(problem_rng(3).integers(10) == problem_rng(3).integers(10))
    True
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(DATA_KEY,)))


class _Noise:
    """Per-node Gaussian noise, drawn in blocks of steps from each node's stream (``noise="stream"``).

    Bit-identical to one ``standard_normal(d)`` per step, because a Generator fills arrays sequentially.
    """

    def __init__(self, seed, n, d, steps, block_floats=1 << 21):
        self.rngs = [node_noise_rng(seed, i) for i in range(n)]
        self.n, self.d = n, d
        self.block = int(max(1, min(steps, block_floats // max(1, n * d))))
        self.buf = None
        self.pos = self.block

    def next(self) -> np.ndarray:
        if self.pos == self.block:
            self.buf = np.stack([r.standard_normal((self.block, self.d)) for r in self.rngs], axis=1)
            self.pos = 0
        out = self.buf[self.pos]
        self.pos += 1
        return out

    def next_block(self, count: int) -> np.ndarray:
        """The next ``count`` steps' noise, ``(count, n, d)``; ``count`` must not cross a block boundary."""
        if self.pos == self.block:
            self.buf = np.stack([r.standard_normal((self.block, self.d)) for r in self.rngs], axis=1)
            self.pos = 0
        if self.pos + count > self.block:
            raise ValueError(f"next_block: {count} steps from position {self.pos} cross the block of {self.block}")
        out = self.buf[self.pos:self.pos + count]
        self.pos += count
        return out

    def add(self, G, k: int, sigma: float) -> None:
        """``G += sigma * xi_k`` (step ``k`` is implied: draws are consumed in order)."""
        xi = self.next()
        G += sigma * (xi if array_namespace(G) is np else array_namespace(G).asarray(xi))


class _CounterNoise:
    """Counter normals (``noise="counter"``), drawn by the backend's kernel where ``G`` lives."""

    def __init__(self, seed, n, be, xp):
        self.keys = counter_keys(seed, n) if xp is np else xp.asarray(counter_keys(seed, n))
        self.be = be

    def add(self, G, k: int, sigma: float) -> None:
        self.be.add_counter_normals(G, self.keys, k, sigma)


def noise_kind(noise: str, xp) -> str:
    one_of(noise, NOISES, "noise")
    if noise == "auto":
        return "stream" if xp is np else "counter"
    return noise


# --------------------------------------------------------------------------- a whole run


def _measure(problem, X):
    # in X's namespace; only the four scalars leave a device
    from simcomm.models._decentralized import global_gradient, global_gradients, suboptimality

    xp = array_namespace(X)
    xbar = X.mean(axis=0)
    D = X - xbar
    cons = float(xp.sum(D * D) / X.shape[0])
    del D
    g = global_gradient(problem, xbar)
    G = global_gradients(problem, X)
    return cons, float(g @ g), float(xp.sum(G * G) / X.shape[0]), suboptimality(problem, xbar)


#: ``n d`` up to which a numba run on least squares is one compiled loop (:func:`_run_fused`): there a
#: step's Python calls cost more than its arithmetic; above it the per-step kernels are memory-bound.
_FUSED_MAX = 1 << 16


def _fusable(problem, be, kind, on_step) -> bool:
    return (getattr(be, "NAME", "") == "numba" and problem.kind == "least_squares" and problem.H is not None
            and problem.A is not None and kind == "stream" and on_step is None
            and problem.n * problem.d <= _FUSED_MAX)


def _run_fused(problem, plans, state, *, steps, lr, beta, sigma, schedule, k0, record_every, blowup, draw,
               msgs_of, bpm) -> Trace:
    """:func:`run_dsgd` as chunks of compiled steps (:mod:`simcomm.backends._numba.dsgd_run`); same records."""
    from simcomm.backends._numba.dsgd_run import layer_rows, ls_dsgd_chunk

    n, d = problem.n, problem.d
    X, M = np.ascontiguousarray(state.x), np.ascontiguousarray(state.m)
    names = ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt")
    rec_steps = record_steps(steps, record_every)
    rec_index = np.full(steps + 1, -1, np.int64)
    rec_index[rec_steps] = np.arange(rec_steps.size)
    vals = np.full((rec_steps.size, 4), DIVERGED_ERROR)
    vals[0] = _measure(problem, X)
    limits = (blowup * (1.0 + vals[0, 0]), blowup * (1.0 + vals[0, 1]))
    rowptr, cols, wts, mean = layer_rows(plans, n)
    lrs = np.array([step_size(lr, k, schedule, k0, steps) for k in range(steps)], dtype=np.float64)
    A, y, H, xs = (np.ascontiguousarray(a, dtype=np.float64) for a in (problem.A, problem.y, problem.H,
                                                                       problem.x_star))
    Y, G = np.empty_like(X), np.empty_like(X)
    chunk = draw.block if draw is not None else max(1, min(steps, 1 << 14))
    quiet = np.zeros((1, n, d))
    at = -1
    with np.errstate(all="ignore"):
        for start in range(0, steps, chunk):
            count = min(chunk, steps - start)
            noise = draw.next_block(count) if draw is not None else quiet
            at = ls_dsgd_chunk(A, y, H, xs, X, M, Y, G, noise, float(sigma), lrs, float(beta), start, count,
                               rowptr, cols, wts, mean, rec_index, vals, *limits)
            if at >= 0:
                break
    records = {name: vals[:, c].copy() for c, name in enumerate(names)}
    msgs = messages_sent(msgs_of, rec_steps)
    records.update({"messages": msgs, "bytes": msgs * bpm})
    return Trace(rec_steps, records, X, np.array([at]))


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
    from simcomm.backends import get_backend

    check_hyper(lr, beta)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UserError(f"run_dsgd: seed = {seed!r} is not allowed; pass a non-negative integer (the root of the "
                        "data and noise streams)")
    steps = integer(steps, "steps", low=0)
    real(sigma, "noise sigma", low=0.0)
    positive_int(record_every, "record_every")
    step_size(lr, 0, schedule, k0, steps)  # validates the schedule name
    from simcomm.models._decentralized import node_gradients, problem_to

    be = get_backend(backend)
    xp = namespace_of_backend(be)
    kind = noise_kind(noise, xp)
    n, d = problem.n, problem.d
    topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "DSGD")
    plans = _plans(topo, xp)
    per_layer = messages_per_step(topo, n)
    bpm = _bytes_per_message(topo, n, d)
    if sigma > 0:
        draw = _Noise(seed, n, d, steps) if kind == "stream" else _CounterNoise(seed, n, be, xp)
    else:
        draw = None

    state = dsgd_init(problem.x0 if x0 is None else x0, n, xp)
    problem = problem_to(problem, xp)  # once: the data live where the state does
    if _fusable(problem, be, kind, on_step):
        return _run_fused(problem, plans, state, steps=steps, lr=lr, beta=beta, sigma=sigma, schedule=schedule,
                          k0=k0, record_every=record_every, blowup=blowup, draw=draw, msgs_of=per_layer, bpm=bpm)
    X, M = state.x, state.m
    out = xp.empty_like(X)
    G = xp.empty_like(X)
    names = ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt")
    rec = Recorder(steps, record_every, errors=names)
    msgs = messages_sent(per_layer, rec.step)
    limits = None

    def advance(k):
        nonlocal X, out, G
        G = node_gradients(problem, X, out=G)
        if draw is not None:
            draw.add(G, k, sigma)
        out = _apply(plans[k % len(plans)], X, M, G, step_size(lr, k, schedule, k0, steps), float(beta), out, be)
        X, out = out, X

    def check(k):
        # measured (and watched) at the recorded steps only: a measurement costs as much as a step
        nonlocal limits
        if rec.due != k:
            return False
        values = np.array(_measure(problem, X))
        if limits is None:  # the start: limits are blowup times (1 + the initial consensus / gradient)
            limits = np.array([blowup * (1.0 + values[0]), blowup * (1.0 + values[1]), np.inf, np.inf])
        elif diverged(values, limits).any():
            rec.diverge(k, [True])
            return True
        rec.put(dict(zip(names, values[:, None])))
        return False

    with np.errstate(all="ignore"):
        drive(steps, advance, check, on_step=on_step)
    records = {name: rec.records[name][0] for name in names}
    records.update({"messages": msgs, "bytes": msgs * bpm})
    return Trace(rec.step, records, to_host(X), rec.diverged_at)
