r"""Graph constructors and the :class:`Topology` record.

Weight convention (the only one used in simcomm)
------------------------------------------------
``W[i, j]`` is the weight node ``i`` puts on node ``j``'s model, so one gossip step is
:math:`x_i \leftarrow \sum_j W_{ij} x_j`, i.e. ``X <- W @ X`` for an ``(n, d)`` array ``X``.

Three storage kinds, chosen by the constructor so that mixing and spectra exploit structure:

* **circulant** (``ring``, ``torus``, ``hypercube``, ``complete``, ``exponential``): a Cayley graph
  of the abelian group :math:`\mathbb{Z}_{s_1} \times \dots \times \mathbb{Z}_{s_q}` (``shape``).
  Node ``i`` has multi-index ``np.unravel_index(i, shape)`` and ``W[i, i + h] = w_h`` for each
  offset ``h`` in ``offsets`` (self offset included), so mixing is a few shifts and the spectrum is
  the FFT of the first row.
* **sparse** (``star``, ``grid``, ``erdos_renyi``, ``from_matrix``, ``from_networkx``): ``W`` held
  as a SciPy CSR matrix.
* **time-varying** (``one_peer_exponential``, ``time_varying``): a periodic sequence of static
  layers, :math:`W^{(k)} = ` ``layers[k % period]``.

Stochasticity (declared by every topology, :data:`STOCHASTICITIES`): ``"doubly"`` (rows and columns
sum to 1: gossip keeps the average, the default of every undirected constructor and of circulants),
``"row"`` (:math:`W\mathbf 1 = \mathbf 1`, each node averages what it receives: consensus, but on a
weighted average) or ``"column"`` (:math:`\mathbf 1^\top W = \mathbf 1^\top`, each node splits its
mass among its out-neighbours: the sum is kept, push-sum mixing). A directed circulant *pattern*
with node-dependent weights (``directed_ring``, ``directed_exponential``) is stored as sparse with
``node_shifts``/``node_weights`` for the shift kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from simcomm._errors import UserError
from simcomm._validate import integer, one_of, real
from simcomm.topology._registry import topology

__all__ = [
    "Topology",
    "RULES",
    "ring",
    "star",
    "grid",
    "torus",
    "hypercube",
    "complete",
    "erdos_renyi",
    "exponential",
    "one_peer_exponential",
    "time_varying",
    "from_matrix",
    "from_networkx",
    "STOCHASTICITIES",
]

#: Weight rules for undirected graphs.
RULES = ("metropolis", "max_degree")
#: Declared stochasticity of a mixing matrix (module doc).
STOCHASTICITIES = ("doubly", "row", "column")


@dataclass(frozen=True, eq=False)
class Topology:
    r"""A communication graph with its mixing weights (frozen; build it with a constructor).

    Attributes
    ----------
    n : int
        Number of nodes.
    name : str
        Constructor name, e.g. ``"ring"``, ``"exponential"``, ``"custom"``.
    directed : bool
        ``True`` when ``W`` is not symmetric (for a time-varying topology: when some layer is not).
    rule : str
        Weight rule: ``"metropolis"``, ``"max_degree"``, ``"uniform"`` (circulant graphs with equal
        weights on self and neighbours), ``"one_peer"`` or ``"custom"``.
    shape : tuple of int or None
        Circulant only: the group :math:`\mathbb{Z}_{s_1}\times\dots`; ``prod(shape) == n``.
    offsets : ndarray of int64, shape (m, len(shape)), or None
        Circulant only: offsets ``h`` with ``W[i, i + h] = weights[t]`` (self offset included,
        all distinct modulo ``shape``).
    weights : ndarray of float64, shape (m,), or None
        Circulant only: the weights of ``offsets``.
    matrix : scipy.sparse.csr_array or None
        Sparse only: ``W`` itself.
    edges : ndarray of int64, shape (E, 2), or None
        Sparse undirected graphs built from edges: each edge once, ``i < j``.
    layers : tuple of Topology or None
        Time-varying only: the static layers visited cyclically, ``W^(k) = layers[k % period]``.
    stochasticity : {"doubly", "row", "column"}
        What the weights are declared (and validated) to be: unit row and column sums, unit row sums
        only, or unit column sums only (module doc).
    node_shifts : ndarray of int64, shape (m,), or None
        Sparse topologies on a 1-D shift pattern only: offsets ``h_t`` with
        ``W[i, (i + h_t) mod n] = node_weights[t, i]`` (self offset first), the fast path of the kernels.
    node_weights : ndarray of float64, shape (m, n), or None
        The weights of ``node_shifts``, one per node (they may differ between nodes).
    """

    n: int
    name: str
    directed: bool
    rule: str
    shape: tuple | None = None
    offsets: np.ndarray | None = field(default=None, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)
    matrix: object | None = field(default=None, repr=False)
    edges: np.ndarray | None = field(default=None, repr=False)
    layers: tuple | None = field(default=None, repr=False)
    stochasticity: str = "doubly"
    node_shifts: np.ndarray | None = field(default=None, repr=False)
    node_weights: np.ndarray | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def kind(self) -> str:
        """``"circulant"``, ``"sparse"`` or ``"time_varying"``."""
        if self.layers is not None:
            return "time_varying"
        return "circulant" if self.offsets is not None else "sparse"

    @property
    def period(self) -> int | None:
        """Number of layers of a time-varying topology; ``None`` for a static one."""
        return None if self.layers is None else len(self.layers)

    @property
    def time_varying(self) -> bool:
        """Whether ``W^(k)`` depends on ``k``."""
        return self.layers is not None

    def layer(self, k: int = 0) -> "Topology":
        """The static topology used at iteration ``k`` (itself when static)."""
        return self if self.layers is None else self.layers[int(k) % len(self.layers)]

    def __repr__(self) -> str:
        extra = f", period={self.period}" if self.layers is not None else ""
        sto = "" if self.stochasticity == "doubly" else f", stochasticity={self.stochasticity!r}"
        return (f"Topology(name={self.name!r}, n={self.n}, kind={self.kind!r}, directed={self.directed}{sto}"
                f"{extra})")


# --------------------------------------------------------------------------- helpers


def _ceil_log2(n: int) -> int:
    """``ceil(log2 n)`` in integer arithmetic (exact for every n >= 1)."""
    return (int(n) - 1).bit_length()


#: the most nodes a topology can have (sparse matrices index nodes with 32-bit integers)
MAX_NODES = 2**31 - 1


def _check_n(n, what: str = "n", low: int = 2) -> int:
    n = integer(n, what, low=low, hint=f"a graph needs at least {low} nodes" if what == "n" else "")
    if n > MAX_NODES:
        raise UserError(f"{what} = {n} is too large: a topology holds arrays of n entries indexed by 32-bit "
                        f"integers, so use {what} <= {MAX_NODES:,} (2**31 - 1)")
    return n


def _check_rule(rule: str) -> str:
    return one_of(rule, RULES, "weight rule")


def _parse_shape(shape, n: int, name: str) -> tuple[int, int]:
    """``(r, c)`` with ``r * c = n`` from ``"RxC"``, ``(r, c)`` or ``None`` (the most square factorisation)."""
    if shape is None:
        # the most square factorisation r <= c with r >= 2
        r = math.isqrt(n)
        while r >= 2 and n % r:
            r -= 1
        if r < 2:
            raise UserError(f"{name} needs n = r*c with both sides >= 2, and n={n} has no such factorisation; "
                            "choose another n")
        return r, n // r
    if isinstance(shape, str):
        parts = shape.lower().replace("*", "x").split("x")
        try:
            r, c = (int(s) for s in parts)
        except ValueError:
            raise UserError(f"shape must look like RxC (e.g. 4x8), got {shape!r}") from None
    else:
        try:
            r, c = (int(s) for s in shape)
        except (TypeError, ValueError):
            raise UserError(f"shape must be two integers (r, c), got {shape!r}") from None
    if r < 2 or c < 2:
        raise UserError(f"{name} sides must both be >= 2, got {r}x{c}")
    if r * c != n:
        raise UserError(f"{name} shape {r}x{c} has {r * c} nodes but n={n}; make r*c equal n")
    return r, c


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def circulant(name, shape, offsets, weights, rule="uniform") -> Topology:
    """A circulant topology on the integers modulo ``shape``: ``W[i, i + offsets[j]] = weights[j]``.

    ``offsets`` is one row per weight (``len(shape)`` integers each); offsets are reduced modulo
    ``shape`` and repeated offsets merged (their weights added). ``rule`` names how the weights were
    chosen (``"uniform"``, ``"base"``, ...), shown in the topology's description.

    >>> circulant("hops_1_2", (8,), [[0], [1], [2]], [0.5, 0.25, 0.25]).n
    8
    """
    shape = tuple(int(s) for s in shape)
    offsets = np.mod(np.asarray(offsets, dtype=np.int64).reshape(len(weights), len(shape)), shape)
    weights = np.asarray(weights, dtype=np.float64)
    flat = np.ravel_multi_index(tuple(offsets.T), shape)
    uniq, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    merged = np.zeros(len(uniq))
    np.add.at(merged, inv, weights)
    offsets = offsets[first]
    keep = merged != 0.0
    offsets, merged = offsets[keep], merged[keep]
    # symmetric iff the weight of h equals the weight of -h for every offset h
    neg = np.ravel_multi_index(tuple(np.mod(-offsets, shape).T), shape)
    pos = dict(zip(np.ravel_multi_index(tuple(offsets.T), shape).tolist(), merged.tolist()))
    directed = any(pos.get(j, 0.0) != w for j, w in zip(neg.tolist(), merged.tolist()))
    return Topology(
        n=math.prod(shape),
        name=name,
        directed=directed,
        rule=rule,
        shape=shape,
        offsets=_readonly(offsets),
        weights=_readonly(merged),
    )


def _uniform_circulant(name, shape, neighbour_offsets) -> Topology:
    """Self plus the DISTINCT neighbours (mod shape), equal weight 1/(deg+1) each.

    On a regular undirected graph this is both the Metropolis and the max-degree rule.
    """
    shape = tuple(shape)
    nb = np.mod(np.asarray(neighbour_offsets, dtype=np.int64).reshape(-1, len(shape)), shape)
    flat = np.unique(np.ravel_multi_index(tuple(nb.T), shape))
    flat = flat[flat != 0]  # an offset that wraps to self is not a neighbour
    nb = np.stack(np.unravel_index(flat, shape), axis=1)
    offs = np.vstack([np.zeros((1, len(shape)), dtype=np.int64), nb])
    w = np.full(len(offs), 1.0 / len(offs))
    return circulant(name, shape, offs, w, "uniform")


def _rule_weights(n: int, edges: np.ndarray, rule: str) -> sp.csr_array:
    """Symmetric doubly stochastic W from undirected edges (i < j, unique) and a weight rule.

    Metropolis–Hastings: w_ij = 1/(1 + max(deg_i, deg_j)); max-degree: w_ij = 1/(1 + max_k deg_k);
    w_ii = 1 - sum_{j != i} w_ij in both cases (papers/exponential_graph.md B3).
    """
    i, j = edges[:, 0], edges[:, 1]
    deg = np.bincount(np.concatenate([i, j]), minlength=n)
    if rule == "metropolis":
        w = 1.0 / (1.0 + np.maximum(deg[i], deg[j]))
    else:
        w = np.full(len(i), 1.0 / (1.0 + deg.max(initial=0)))
    rowsum = np.bincount(np.concatenate([i, j]), weights=np.concatenate([w, w]), minlength=n)
    rows = np.concatenate([i, j, np.arange(n)])
    cols = np.concatenate([j, i, np.arange(n)])
    data = np.concatenate([w, w, 1.0 - rowsum])
    W = sp.csr_array(sp.coo_array((data, (rows, cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    return W


def _edge_topology(name: str, n: int, edges, rule: str) -> Topology:
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[edges[:, 0] != edges[:, 1]]
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    return Topology(
        n=n,
        name=name,
        directed=False,
        rule=rule,
        matrix=_rule_weights(n, edges, rule),
        edges=_readonly(edges),
    )


# --------------------------------------------------------------------------- constructors


@topology("ring")
def ring(n: int) -> Topology:
    r"""Undirected ring (cycle) :math:`C_n` with weight :math:`1/3` on self and both neighbours.

    :math:`W = (I + S + S^{-1})/3` (BlueFog's ``RingGraph`` default, papers/exponential_graph.md B3);
    this equals the Metropolis and the max-degree weights. For ``n = 2`` the two neighbours coincide,
    so there is ONE neighbour and the weights are 1/2.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Returns
    -------
    Topology
        A circulant topology.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring, spectral_gap
    >>> bool(np.isclose(spectral_gap(ring(8)), (2 - np.sqrt(2)) / 3))
    True
    """
    n = _check_n(n)
    return _uniform_circulant("ring", (n,), [[1], [-1]])


def torus(r: int, c: int | None = None) -> Topology:
    r"""2-D torus :math:`C_r \times C_c` (grid with wrap-around), equal weights on self + neighbours.

    Node ``(a, b)`` is index ``a * c + b``. A side of 2 gives ONE neighbour in that direction (``+1``
    and ``-1`` coincide), so the degree is 4, 3 or 2; weights are ``1/(deg+1)`` (Metropolis, since
    the graph is regular).

    Parameters
    ----------
    r, c : int
        Side lengths, each ``>= 2``. With ``c`` omitted, ``r`` is the node count ``n`` of a square
        torus (``n = m^2``, sides ``m x m``), like ``ring(n)`` and ``exponential(n)``.

    Examples
    --------
    >>> from simcomm.topology import torus, max_degree
    >>> max_degree(torus(4, 4)), max_degree(torus(2, 5)), max_degree(torus(2, 2))
    (4, 3, 2)
    >>> torus(16).n   # a 4 x 4 torus
    16
    """
    if c is None:
        n = _check_n(r, "torus n", low=4)
        side = math.isqrt(n)
        if side * side != n:
            raise UserError(f"torus({n}): one argument is the node count of a square torus and {n} is not a "
                            f"square; pass both sides, torus(r, c) with r * c = n, or n = {side * side} or "
                            f"{(side + 1) ** 2}")
        r = c = side
    r = _check_n(r, "torus side r")
    c = _check_n(c, "torus side c")
    return _uniform_circulant("torus", (r, c), [[1, 0], [-1, 0], [0, 1], [0, -1]])


@topology("torus", params=("shape",))
def _torus_by_n(n: int, shape=None) -> Topology:
    """2-D torus on ``n = r*c`` nodes (``shape`` RxC, default the most square), equal weights (:func:`torus`)."""
    r, c = _parse_shape(shape, _check_n(n), "torus")
    return torus(r, c)


def hypercube(dim: int) -> Topology:
    r"""Hypercube :math:`Q_{dim}` on :math:`n = 2^{dim}` nodes, weights :math:`1/(dim+1)`.

    Nodes ``i`` and ``j`` are neighbours when their binary labels differ in one bit.

    Parameters
    ----------
    dim : int
        Dimension, ``>= 1``.

    Examples
    --------
    >>> from simcomm.topology import hypercube, rho
    >>> round(rho(hypercube(3)), 12)   # eigenvalues (1 + dim - 2j)/(dim + 1)
    0.5
    """
    dim = _check_n(dim, "hypercube dimension", low=1)
    return _uniform_circulant("hypercube", (2,) * dim, np.eye(dim, dtype=np.int64))


@topology("hypercube")
def _hypercube_by_n(n: int) -> Topology:
    """Hypercube on ``n = 2^dim`` nodes, weights ``1/(dim+1)`` (:func:`hypercube`)."""
    n = _check_n(n)
    if n & (n - 1):
        raise UserError(f"hypercube needs n = 2^dim nodes (a power of 2), got n={n}; "
                        f"try n={1 << _ceil_log2(n)} or n={1 << (_ceil_log2(n) - 1)}")
    return hypercube(n.bit_length() - 1)


@topology("complete", exact=True)
def complete(n: int) -> Topology:
    r"""Complete graph :math:`K_n` with :math:`W = J = \mathbf{1}\mathbf{1}^\top/n` (exact averaging).

    Examples
    --------
    >>> from simcomm.topology import complete, rho
    >>> rho(complete(5)) < 1e-12
    True
    """
    n = _check_n(n)
    return _uniform_circulant("complete", (n,), np.arange(1, n)[:, None])


@topology("exponential", symmetric=False)
def exponential(n: int, base: int = 2) -> Topology:
    r"""Static exponential graph: node i listens to :math:`i + b^t`, :math:`b^t < n` (directed).

    :math:`W = (I + \sum_{t=0}^{\tau-1} S^{b^t})/(\tau+1)` with :math:`\tau` the number of powers of
    ``base`` below ``n``; for ``base = 2``, :math:`\tau = \lceil \log_2 n \rceil` (papers B1 [C]).
    Powers are computed with integers.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    base : int
        Base of the hop lengths, ``>= 2``.

    Examples
    --------
    >>> from simcomm.topology import exponential, rho
    >>> round(rho(exponential(16)), 12)   # 1 - 2/(1 + log2 16), papers C1
    0.6
    """
    n = _check_n(n)
    base = _check_n(base, "base")
    hops = []
    h = 1
    while h < n:
        hops.append(h)
        h *= base
    offs = np.array([0] + hops, dtype=np.int64)[:, None]
    return circulant("exponential", (n,), offs, np.full(len(offs), 1.0 / len(offs)), "uniform")


# exact for n = 2^tau (papers C2); any other n leaves a deviation (one_peer_deviation)
@topology("one_peer_exponential", symmetric=False, time_varying=True, exact=lambda n: n & (n - 1) == 0)
def one_peer_exponential(n: int, order=None) -> Topology:
    r"""Time-varying one-peer exponential graph, :math:`W^{(k)} = (I + S^{2^{t_k}})/2`.

    Period :math:`\tau = \lceil\log_2 n\rceil` (integer arithmetic); at iteration ``k`` node ``i``
    averages with node ``i + 2^{t_k}``, :math:`t_k` = ``order[k % tau]`` (default ``k % tau``,
    papers B2). For :math:`n = 2^\tau` any :math:`\tau` consecutive layers multiply to ``J``
    (papers C2).

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    order : sequence of int, optional
        A permutation of ``range(tau)``: the order in which the hop lengths are visited.

    Examples
    --------
    >>> from simcomm.topology import one_peer_exponential, product_deviation
    >>> topo = one_peer_exponential(8)
    >>> topo.period, product_deviation(topo) < 1e-12
    (3, True)
    """
    n = _check_n(n)
    tau = _ceil_log2(n)
    order = list(range(tau)) if order is None else [int(t) for t in order]
    if sorted(order) != list(range(tau)):
        raise UserError(f"order must be a permutation of range({tau}) for n={n}, got {order}")
    layers = tuple(
        circulant(f"one_peer_exponential[2^{t}]", (n,), [[0], [1 << t]], [0.5, 0.5], "one_peer") for t in order
    )
    return time_varying(layers, name="one_peer_exponential")


def time_varying(layers, name: str = "time_varying") -> Topology:
    r"""A periodic sequence of static topologies, :math:`W^{(k)} =` ``layers[k % len(layers)]``.

    Examples
    --------
    >>> from simcomm.topology import ring, complete, time_varying
    >>> time_varying([ring(4), complete(4)]).period
    2
    """
    layers = tuple(layers)
    if not layers or not all(isinstance(t, Topology) and not t.time_varying for t in layers):
        raise UserError("time_varying needs a non-empty list of static Topology objects")
    n = layers[0].n
    if any(t.n != n for t in layers):
        raise UserError(f"all layers must have the same n; got {sorted({t.n for t in layers})}")
    kinds = {t.stochasticity for t in layers}
    return Topology(
        n=n,
        name=name,
        directed=any(t.directed for t in layers),
        rule=layers[0].rule if len({t.rule for t in layers}) == 1 else "custom",
        layers=layers,
        # the product of row- (column-) stochastic layers is row- (column-) stochastic; a mix is neither
        stochasticity=kinds.pop() if len(kinds) == 1 else _mixed_stochasticity(layers),
    )


def _mixed_stochasticity(layers) -> str:
    kinds = {t.stochasticity for t in layers}
    if kinds <= {"doubly", "row"}:
        return "row"
    if kinds <= {"doubly", "column"}:
        return "column"
    raise UserError("time_varying mixes row- and column-stochastic layers; their products are neither, "
                    "so no gossip on them has a known limit: use layers of one kind")


@topology("star", params=("rule",))
def star(n: int, rule: str = "metropolis") -> Topology:
    r"""Star: hub 0 linked to every other node (undirected).

    With Metropolis (or max-degree) weights every edge gets :math:`1/n`, so :math:`1-\rho = 1/n`
    (papers C5 table, [N]).

    Examples
    --------
    >>> from simcomm.topology import star, spectral_gap
    >>> round(spectral_gap(star(10)), 12)
    0.1
    """
    n = _check_n(n)
    _check_rule(rule)
    leaves = np.arange(1, n)
    return _edge_topology("star", n, np.stack([np.zeros_like(leaves), leaves], axis=1), rule)


def grid(r: int, c: int, rule: str = "metropolis") -> Topology:
    r"""2-D grid (no wrap-around) of ``r`` rows and ``c`` columns; node ``(a, b)`` is ``a * c + b``.

    Examples
    --------
    >>> from simcomm.topology import grid, max_degree
    >>> max_degree(grid(3, 3))
    4
    """
    r = _check_n(r, "grid side r")
    c = _check_n(c, "grid side c")
    _check_rule(rule)
    idx = np.arange(r * c).reshape(r, c)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return _edge_topology("grid", r * c, np.vstack([right, down]), rule)


@topology("grid", params=("shape", "rule"))
def _grid_by_n(n: int, shape=None, rule: str = "metropolis") -> Topology:
    """2-D grid (no wrap-around) on ``n = r*c`` nodes (``shape`` RxC, default the most square) (:func:`grid`)."""
    r, c = _parse_shape(shape, _check_n(n), "grid")
    return grid(r, c, rule=rule)


@topology("erdos_renyi", params=("p", "rng", "rule"), random=True)
def erdos_renyi(n: int, p: float = 0.5, *, rng=None, rule: str = "metropolis") -> Topology:
    r"""Erdős–Rényi graph :math:`G(n, p)`, one draw; raises :class:`UserError` when disconnected.

    Each of the :math:`n(n-1)/2` edges is present independently with probability ``p``
    (``p = 1/2`` is the paper's "½-random graph", papers B3).

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    p : float, default 0.5
        Edge probability in ``(0, 1]``.
    rng : numpy.random.Generator or seed, optional
        Anything :func:`numpy.random.default_rng` accepts.
    rule : {"metropolis", "max_degree"}
        Weight rule.

    Raises
    ------
    UserError
        If ``p`` is outside ``(0, 1]`` or the draw is disconnected.

    Examples
    --------
    >>> from simcomm.topology import erdos_renyi
    >>> erdos_renyi(20, 0.5, rng=0).n
    20
    """
    n = _check_n(n)
    _check_rule(rule)
    p = real(p, "edge probability p", low=0.0, high=1.0, low_open=True)
    rng = np.random.default_rng(rng)
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.random(len(iu)) < p
    edges = np.stack([iu[keep], ju[keep]], axis=1)
    from scipy.sparse.csgraph import connected_components

    adj = sp.coo_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    ncomp, _ = connected_components(adj, directed=False)
    if ncomp > 1:
        hint = math.log(n) / n
        raise UserError(
            f"the Erdos-Renyi draw with n={n}, p={p:g} is disconnected ({ncomp} components); "
            f"use p well above log(n)/n = {hint:.3g} or another seed"
        )
    return _edge_topology("erdos_renyi", n, edges, rule)


def check_stochasticity(stochastic: str) -> str:
    """Return ``stochastic`` if it is one of :data:`STOCHASTICITIES`, else raise a one-line :class:`UserError`."""
    return one_of(stochastic, STOCHASTICITIES, "stochasticity")


def validate_stochastic(M: sp.csr_array, stochastic: str, atol: float) -> None:
    """Raise a one-line :class:`UserError` unless ``M`` (CSR, nonnegative) has the declared unit sums."""
    sums = {"row": np.asarray(M.sum(axis=1)).ravel(), "column": np.asarray(M.sum(axis=0)).ravel()}
    need = ("row", "column") if stochastic == "doubly" else (stochastic,)
    for what in need:
        bad = np.abs(sums[what] - 1.0)
        if bad.max() > atol:
            i = int(np.argmax(bad))
            other = [k for k in ("row", "column") if k != what and np.abs(sums[k] - 1.0).max() <= atol]
            if other and stochastic == "doubly":
                hint = f"; it is {other[0]} stochastic: declare stochastic='{other[0]}'"
            else:
                hint = f"; every {what} of W must sum to 1"
            raise UserError(f"mixing matrix is not {stochastic} stochastic: {what} {i} sums to {sums[what][i]:.6g}, "
                            f"not 1{hint}")


def from_matrix(W, name: str = "custom", atol: float = 1e-10, stochastic: str = "doubly") -> Topology:
    r"""Topology with a user-given mixing matrix, validated nonnegative and of the declared stochasticity.

    Parameters
    ----------
    W : array_like or scipy.sparse matrix, shape (n, n)
        ``W[i, j]`` = weight node ``i`` puts on node ``j``.
    name : str
        Name shown by :func:`describe`.
    atol : float
        Tolerance on row/column sums and on negativity.
    stochastic : {"doubly", "row", "column"}
        What ``W`` is declared to be (module doc): ``"doubly"`` (default) needs unit row AND column
        sums, ``"row"`` unit row sums, ``"column"`` unit column sums (push-sum mixing). The check is
        never weakened: a matrix that is not what it declares is rejected.

    Raises
    ------
    UserError
        If ``W`` is not square, has non-finite or negative entries, or a sum the declaration needs is not 1.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import from_matrix
    >>> from_matrix(np.full((3, 3), 1 / 3)).directed
    False
    >>> from_matrix(np.array([[0.5, 0.0], [0.5, 1.0]]), stochastic="column").stochasticity
    'column'
    """
    check_stochasticity(stochastic)
    M = sp.csr_array(W, dtype=np.float64) if sp.issparse(W) else sp.csr_array(np.asarray(W, dtype=np.float64))
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise UserError(f"mixing matrix must be square (n, n), got shape {M.shape}")
    n = _check_n(M.shape[0], "matrix size n")
    M.sum_duplicates()
    M.sort_indices()
    if not np.all(np.isfinite(M.data)):
        raise UserError("mixing matrix has NaN or infinite entries; every W[i, j] must be a finite weight")
    if M.data.size and M.data.min() < -atol:
        k = int(np.argmin(M.data))
        i = int(np.searchsorted(M.indptr, k, side="right") - 1)
        raise UserError(f"mixing matrix has a negative entry W[{i}, {M.indices[k]}] = {M.data[k]:.3g}; "
                        "weights must be >= 0")
    validate_stochastic(M, stochastic, atol)
    M.eliminate_zeros()
    directed = bool((M - M.T).count_nonzero() > 0)
    return Topology(n=n, name=name, directed=directed, rule="custom", matrix=M, stochasticity=stochastic)


def from_networkx(G, *, rule: str = "metropolis", weight: str | None = None) -> Topology:
    r"""Topology from a networkx graph (nodes numbered in ``G.nodes`` order).

    Without ``weight`` the graph must be undirected and ``rule`` sets the weights (self-loops are
    ignored). With ``weight``, ``W[i, j]`` is read from that edge attribute (self-loops give the
    diagonal) and validated as in :func:`from_matrix`.

    Examples
    --------
    >>> import networkx as nx
    >>> from simcomm.topology import from_networkx, max_degree
    >>> max_degree(from_networkx(nx.path_graph(4)))
    2
    """
    import networkx as nx

    nodes = list(G.nodes)
    if weight is not None:
        W = nx.to_scipy_sparse_array(G, nodelist=nodes, weight=weight, format="csr")
        return from_matrix(W, name="networkx")
    if G.is_directed():
        raise UserError("a directed networkx graph needs weights: "
                        "pass weight='weight' (the edge attribute holding W[i, j])")
    n = _check_n(len(nodes), "number of nodes")
    _check_rule(rule)
    index = {v: k for k, v in enumerate(nodes)}
    edges = np.array([(index[u], index[v]) for u, v in G.edges()], dtype=np.int64).reshape(-1, 2)
    return _edge_topology("networkx", n, edges, rule)
