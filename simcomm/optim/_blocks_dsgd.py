r"""The building blocks of decentralized (momentum) SGD, each a :class:`~simcomm.optim.Transform` in one place.

Shapes: the iterate of a decentralized run is the nodes' models, one ``(n, d)`` array ``X`` (row ``i``
is node ``i``'s :math:`x_i`); a run is one trajectory. DmSGD in adapt-then-combine form with a LOCAL
momentum buffer (papers/exponential_graph.md (d) [C]: BlueFog's ``DistributedAdaptThenCombineOptimizer``)::

    g_i = grad f_i(x_i) + sigma * xi_i          # gradient_at_nodes
    m_i = beta * m_i + g_i                      # atc_momentum: local buffer, NOT averaged
    y_i = x_i - lr_k * m_i                      #   adapt
    x_i = sum_j W^(k)_ij y_j                    #   combine (static W, or one-peer W^(k))

=========================  ==========================================================================
block                      what it does
=========================  ==========================================================================
:func:`gradient_at_nodes`  starts a chain: every node's gradient :math:`\nabla f_i(x_i)` plus
                           :math:`\sigma\xi_{i,k}` from node ``i``'s own stream (or counter normals), ``(n, d)``:
                           the oracle of every decentralized method (DSGD, tracking, push-sum, CHOCO)
:func:`given_gradients`    starts a chain with gradients computed elsewhere (:func:`~simcomm.optim.dsgd_update`)
:func:`atc_momentum`       the ATC momentum gossip step: gradients in, the nodes' next models out
=========================  ==========================================================================

The combine never forms an ``n x n`` matrix: 1-D circulant layers (ring, exponential, one-peer) are
shifted adds and other graphs use CSR, in a fused backend kernel
(:func:`simcomm.backends._numba.dsgd.atc_shift_step`) that reads ``X, M, G`` and writes ``M`` and the new
``X`` once per step. For the same reason (an ``(n, d)`` array per step is memory traffic, not arithmetic)
three buffers are reused in place, and the loop never reads an old state again: the gradient buffer,
the momentum buffer, and a double buffer (the next models are written into the spare, and the
previous models' array becomes the spare). :func:`~simcomm.optim.dsgd_update` copies first, so it is pure.

Randomness (what :mod:`simcomm.mpi` reproduces on real processes): node ``i``'s gradient noise comes
from ``node_noise_rng(seed, i) = default_rng(SeedSequence(seed, spawn_key=(NOISE_KEY, i)))`` as
``"stream"`` (one ``standard_normal(d)`` per step, in order: host arrays) or ``"counter"`` (the
generator's first draw ``integers(0, 2**64, dtype=uint64)`` is the node's key, and step ``k`` adds the
counter normals of :func:`simcomm.backends._numpy.noise.add_counter_normals`, computed where the state
lives: the default on a device backend, where a host stream would copy ``n d`` floats per step).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import one_of
from simcomm.backends import array_namespace, backend_for, namespace_of_backend
from simcomm.optim._algebra import Method, Transform, assign, chain, stateless
from simcomm.optim._schedules import step_size

__all__ = ["gradient_at_nodes", "given_gradients", "atc_momentum", "dmsgd",
           "GossipState", "resolve_topology", "require_stochasticity", "node_noise_rng", "counter_keys",
           "noise_kind", "NOISES", "NOISE_KEY"]

NOISE_KEY = 1
#: Gradient-noise generators (module doc): ``auto`` is ``stream`` on a host backend, ``counter`` on a device.
NOISES = ("auto", "stream", "counter")


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


def plans(topo, xp=np) -> tuple:
    """Kernel arguments per layer; with a device ``xp`` the CSR arrays (O(nnz)) are moved there once.

    Shift offsets and weights (at most 64 scalars, kernel parameters) stay on the host.
    """
    if topo == "parallel":
        return (("mean",),)
    layers = topo.layers if topo.time_varying else (topo,)
    out = [_layer_plan(layer) for layer in layers]
    if xp is not np:
        out = [p if p[0] != "csr" else ("csr",) + tuple(xp.asarray(a) for a in p[1:]) for p in out]
    return tuple(out)


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

    def __init__(self, seed, n, xp):
        self.keys = counter_keys(seed, n) if xp is np else xp.asarray(counter_keys(seed, n))

    def add(self, G, k: int, sigma: float) -> None:
        backend_for(None, G).add_counter_normals(G, self.keys, k, sigma)


def noise_kind(noise: str, xp) -> str:
    """``"stream"`` or ``"counter"``: ``noise`` with ``"auto"`` resolved for the namespace ``xp`` (module doc)."""
    one_of(noise, NOISES, "noise")
    if noise == "auto":
        return "stream" if xp is np else "counter"
    return noise


# --------------------------------------------------------------------------- the blocks


class GradState(NamedTuple):
    """The oracle's state: the buffer the nodes' gradients are written into, their noise source (or ``None``)."""

    buffer: np.ndarray
    noise: Any


def gradient_at_nodes(sigma: float = 0.0, seed: int = 0, noise: str = "auto", at: str | None = None) -> Transform:
    r"""Starts a chain: every node's gradient at its own model and its noise, :math:`\nabla f_i(x_i) + \sigma\xi_{i,k}`.

    The one gradient oracle of the decentralized methods, ``(n, d)``, written into one buffer in place.
    The models are the iterate itself (``at=None``: the nodes' ``(n, d)`` array) or its field ``at``
    (``"x"`` of a :class:`~simcomm.optim.GTState` or :class:`~simcomm.optim.ChocoState`, push-sum's ratio
    ``"z"``). With ``sigma > 0`` node ``i``'s noise comes from its own stream of ``seed`` (module doc:
    ``noise`` is ``"stream"``, ``"counter"`` or ``"auto"``, :func:`noise_kind` of the backend's
    namespace), never from the run's ``rng``: every method with the same seed sees the same draws.
    """
    from simcomm.models import node_gradients

    sigma = float(sigma)

    def models(s):
        return s if at is None else getattr(s, at)

    def init(s, ctx):
        X = models(s)
        source = None
        if sigma > 0:
            xp = namespace_of_backend(backend_for(None, X))
            n, d = X.shape
            stream = noise_kind(noise, xp) == "stream"
            source = _Noise(seed, n, d, ctx.steps) if stream else _CounterNoise(seed, n, xp)
        return GradState(array_namespace(X).empty_like(X), source)

    def update(u, state, s, ctx):
        G = node_gradients(ctx.problem, models(s), out=state.buffer)
        if state.noise is not None:
            state.noise.add(G, ctx.k, sigma)
        return G, state

    return Transform(init, update)


def given_gradients(G) -> Transform:
    """Starts a chain with the gradients ``G`` (``(n, d)``, computed elsewhere)."""
    return stateless(lambda u, x, ctx: G)


class GossipState(NamedTuple):
    """The ATC step's state: the local momentum buffers, the spare, the combine's kernel arguments.

    ``m`` and ``spare`` are ``(n, d)``: the next models are written into the spare; ``plans`` holds one
    entry per layer of the topology (:func:`plans`).
    """

    m: np.ndarray
    spare: np.ndarray
    plans: tuple


def atc_combine(plan, X, M, G, lr, beta, out):
    r"""``M <- beta M + G``; ``out <- W (X - lr M)`` with ``W`` the layer ``plan`` (in place; returns ``out``).

    On the active backend's kernels (cupy's for device arrays).
    """
    be = backend_for(None, X)
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


def atc_momentum(topology, lr: float, beta: float = 0.0, schedule: str = "constant", k0: float = 10.0) -> Transform:
    r"""The ATC momentum gossip step: gradients ``G`` in, the nodes' next models out (module doc).

    :math:`M \leftarrow \beta M + G`, :math:`X \leftarrow W^{(k)}(X - \gamma_k M)` with
    :math:`\gamma_k` = :func:`simcomm.optim.step_size` ``(lr, k, schedule, k0, steps)`` and layer
    ``k mod period`` of a time-varying ``topology`` (a Topology, a name, ``"parallel"`` or a doubly
    stochastic matrix). The momentum buffers start at zero. The array of the models it is given becomes
    its spare once it has returned the next ones (module doc): the start of a run is overwritten after
    the first step, so a caller who keeps it passes a copy.
    """

    def init(x, ctx):
        n = getattr(ctx.problem, "n", x.shape[0])
        if x.ndim != 2 or x.shape[0] != n:
            raise UserError(f"the nodes' models are one (n, d) array with n = {n}, got shape {x.shape}; give "
                            "run() the common start x0 of shape (d,) and no watch (the method starts every node "
                            "there), or x0=dsgd_init(x0, n).x with a watch")
        topo = require_stochasticity(resolve_topology(topology, n), ("doubly",), "DSGD")
        xp = array_namespace(x)
        return GossipState(xp.zeros(x.shape), xp.empty_like(x), plans(topo, xp))

    def update(G, state, x, ctx):
        lr_k = step_size(lr, ctx.k, schedule, k0, ctx.steps)
        P = state.plans
        out = atc_combine(P[ctx.k % len(P)], x, state.m, G, lr_k, float(beta), state.spare)
        return out, GossipState(state.m, x, P)

    return Transform(init, update)


def dmsgd(oracle: Transform, topology, lr, beta=0.0, schedule="constant", k0=10.0, name="dsgd") -> Method:
    """DmSGD: the gradients of ``oracle`` through :func:`atc_momentum` (DSGD at ``beta = 0``)."""
    return assign(chain(oracle, atc_momentum(topology, lr, beta, schedule, k0)), name=name)
