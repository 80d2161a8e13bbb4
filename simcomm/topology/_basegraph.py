r"""Finite-time exact averaging for every n: hyper-hypercubes and Base-(k+1) graphs.

Takezawa, Sato, Niwa and Yamada, "Beyond Exponential Graph: Communication-Efficient Topologies for
Decentralized Learning via Finite-time Convergence" (NeurIPS 2023) give, for every number of nodes
``n`` and every maximum degree ``k``, a finite sequence of symmetric doubly stochastic matrices whose
product is exactly :math:`J = \mathbf 1\mathbf 1^\top/n`. The constructions below follow the paper's
description (split, average inside, then across); the scheduling of the steps and the proofs in the
docstrings are our own.

Notation: :math:`b = k + 1` (the *base*), a *clique step* on a set of ``f <= b`` nodes gives every
member weight ``1/f`` on every member (itself included): afterwards they all hold the set's average.

**k-peer hyper-hypercube** (:func:`hyper_hypercube`). If every prime factor of ``n`` is at most ``b``,
write :math:`n = f_1 f_2 \cdots f_L` with :math:`2 \le f_t \le b` and label node ``i`` by its
mixed-radix digits :math:`(d_1, \dots, d_L)`. Layer ``t`` is a clique step on every set of nodes that
share all digits except :math:`d_t`. Each layer averages along one axis of an
:math:`f_1\times\dots\times f_L` array, so after the ``L`` layers (in ANY order: the layers are
:math:`I \otimes J_{f_t} \otimes I` and commute) every node holds the average. The factors are taken
greedily from ``b`` down to 2, so :math:`n = b^p` gives exactly ``p`` layers of degree ``k``.

**Simple Base-(k+1) graph** (:func:`simple_base_graph`). Write ``n`` in base ``b``:
:math:`n = \sum_{l=1}^{L} a_l b^{p_l}` with :math:`p_1 > \dots > p_L \ge 0`, :math:`1 \le a_l \le k`.
Split the nodes into consecutive groups :math:`V_l` of :math:`n_l = a_l b^{p_l}` nodes, and each
:math:`V_l` into :math:`a_l` *blocks* of :math:`b^{p_l}` nodes. Let :math:`T_l = V_l \cup \dots \cup
V_L` (:math:`S_l = |T_l|`, :math:`S_{l+1} < b^{p_l}` because base-``b`` digits are below ``b``).

1. Steps :math:`0 .. H-1` (:math:`H` = hyper-hypercube length of :math:`V_1`, the longest): every group
   runs its own hyper-hypercube (shorter ones then wait), so :math:`V_l` holds its average
   :math:`\mu_l`.
2. Step :math:`H + l - 1` for :math:`l = 1 .. L-1` (*absorb* :math:`V_l`): the ``t``-th node of
   :math:`T_{l+1}` is linked to the ``t``-th node of each of the :math:`a_l` blocks of :math:`V_l`
   with weight :math:`\beta_l = b^{p_l}/S_l`; it keeps :math:`S_{l+1}/S_l` on itself, a linked node of
   :math:`V_l` keeps :math:`1 - \beta_l`, every other node keeps 1. Then (a) every node of
   :math:`T_{l+1}` moves to :math:`(S_{l+1}/S_l)\,x_i + (n_l/S_l)\,\mu_l` -- the SAME affine map for all
   of them, so each :math:`V_{l'}`, :math:`l' > l`, stays in consensus and the average of
   :math:`T_{l+1}` becomes the average of :math:`T_l`; (b) each block of :math:`V_l` received exactly
   one term from every node of :math:`T_{l+1}`, so every block's average becomes
   :math:`(n_l \mu_l + S_{l+1} \bar x_{T_{l+1}})/S_l`, the average of :math:`T_l`.
3. Steps :math:`H + l .. H + l + p_l - 1`: each block of :math:`V_l` runs the ``p_l``-layer
   hyper-hypercube of :math:`b^{p_l}` nodes, so all of :math:`V_l` holds the average of :math:`T_l`.

By induction the average of every :math:`T_l` equals the global average :math:`\bar x` (step 2(a)),
so every block ends at :math:`\bar x`, and :math:`V_L` reaches :math:`\bar x` at the last absorb step.
The period is :math:`\max(H + L - 1,\ \max_l H + l + p_l) \le H + p_1 + 1 \le 2 p_1 + 2 \le
2\log_b n + 2` (:math:`p_l \le p_1 - l + 1`, :math:`L \le p_1 + 1`, :math:`H \le p_1 + 1`). Node
degrees: a clique step gives at most ``b - 1 = k``, an absorb step at most :math:`a_l \le k`.

**Base-(k+1) graph** (:func:`base_graph`). Let ``q`` be the largest divisor of ``n`` whose prime
factors are all at most ``b`` and :math:`r = n/q`. The nodes form a :math:`q \times r` array: the ``q``
rows run the simple Base-(k+1) graph on ``r`` nodes side by side, then the ``r`` columns run the
hyper-hypercube on ``q`` nodes. Rows end at their row averages, columns then average those: exact.
Of this and the simple graph on all ``n`` nodes the shorter sequence is kept (so the period is never
longer than the simple one's, and ``n`` with small prime factors gets the pure hyper-hypercube).

Exactness is for the product of one period from its first matrix, :math:`W^{(\tau-1)} \cdots
W^{(0)} = J`; any window of :math:`2\tau - 1` consecutive steps contains such a period, so gossip from
any phase is exact after at most :math:`2\tau - 1` steps (hyper-hypercubes: after :math:`\tau` steps
from every phase, since their layers commute).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simcomm._errors import UserError
from simcomm._validate import integer, positive_int
from simcomm.topology._graphs import MAX_NODES, Topology, circulant, time_varying
from simcomm.topology._registry import topology

__all__ = [
    "hyper_hypercube",
    "simple_base_graph",
    "base_graph",
    "one_peer_hypercube",
    "base_digits",
    "smooth_part",
    "hhc_factors",
]


# --------------------------------------------------------------------------- integer helpers


def _not_too_large(n: int) -> int:
    """``n``, or a one-line error when it cannot index nodes with 32-bit integers."""
    if n > MAX_NODES:
        raise UserError(f"number of nodes n = {n} is too large: a topology indexes nodes with 32-bit integers, so "
                        f"use at most {MAX_NODES:,} (2**31 - 1)")
    return n


def _check_nk(n, k) -> tuple[int, int]:
    return _not_too_large(positive_int(n, "number of nodes n")), positive_int(k, "maximum degree k")


def base_digits(n: int, b: int) -> list[tuple[int, int]]:
    r"""Nonzero digits of ``n`` in base ``b`` as ``(a_l, p_l)``, highest power first (integers only).

    Examples
    --------
    >>> base_digits(25, 3)     # 25 = 2*9 + 2*3 + 1
    [(2, 2), (2, 1), (1, 0)]
    """
    out, p = [], 0
    while n:
        n, a = divmod(n, b)
        if a:
            out.append((a, p))
        p += 1
    return out[::-1]


def smooth_part(n: int, b: int) -> int:
    """Largest divisor of ``n`` whose prime factors are all ``<= b`` (integer trial division).

    Examples
    --------
    >>> smooth_part(24, 2), smooth_part(100, 2), smooth_part(100, 5), smooth_part(7, 3)
    (8, 4, 100, 1)
    """
    q, rest = 1, n
    for f in range(2, b + 1):
        while rest % f == 0:
            rest //= f
            q *= f
    return q


def hhc_factors(n: int, b: int) -> list[int] | None:
    """Factors ``2 <= f <= b`` with product ``n``, taken greedily from ``b`` down; ``None`` if impossible.

    ``n = b^p`` gives ``[b] * p``; ``n = 1`` gives ``[]``.

    Examples
    --------
    >>> hhc_factors(12, 2), hhc_factors(12, 4), hhc_factors(27, 3), hhc_factors(14, 3)
    (None, [4, 3], [3, 3, 3], None)
    """
    out, rest = [], n
    for f in range(b, 1, -1):
        while rest % f == 0:
            out.append(f)
            rest //= f
    return out if rest == 1 else None


# --------------------------------------------------------------------------- layers as COO pieces


class _Layer:
    """One mixing matrix under construction: COO pieces; untouched nodes keep weight 1 on themselves."""

    def __init__(self, n: int):
        self.n = n
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.touched = np.zeros(n, dtype=bool)

    def cliques(self, groups: np.ndarray) -> None:
        """Clique step on each row of ``groups`` (shape (m, f)): weight 1/f between every two members."""
        m, f = groups.shape
        if f < 2:
            return
        self.rows.append(np.repeat(groups, f, axis=1).ravel())
        self.cols.append(np.tile(groups, (1, f)).ravel())
        self.vals.append(np.full(m * f * f, 1.0 / f))
        self.touched[groups.ravel()] = True

    def link(self, a: np.ndarray, c: np.ndarray, w: float, self_a: np.ndarray, self_c: float) -> None:
        """Symmetric edges ``a[t] -- c[t]`` of weight ``w``; self weights ``self_a`` (per a node) and ``self_c``."""
        self.rows += [a, c]
        self.cols += [c, a]
        self.vals += [np.full(a.size, w), np.full(a.size, w)]
        ua, idx = np.unique(a, return_index=True)
        self.rows += [ua, c]
        self.cols += [ua, c]
        self.vals += [np.asarray(self_a, dtype=float)[idx] if np.ndim(self_a) else np.full(ua.size, float(self_a)),
                      np.full(c.size, self_c)]
        self.touched[a] = True
        self.touched[c] = True

    def shifted(self, offset: int, n: int) -> "_Layer":
        out = _Layer(n)
        out.rows = [r + offset for r in self.rows]
        out.cols = [c + offset for c in self.cols]
        out.vals = list(self.vals)
        out.touched[offset:offset + self.n] = self.touched
        return out

    def merge(self, other: "_Layer") -> None:
        self.rows += other.rows
        self.cols += other.cols
        self.vals += other.vals
        self.touched |= other.touched

    def csr(self) -> sp.csr_array:
        idle = np.flatnonzero(~self.touched)
        rows = np.concatenate(self.rows + [idle]) if self.rows else idle
        cols = np.concatenate(self.cols + [idle]) if self.cols else idle
        vals = np.concatenate(self.vals + [np.ones(idle.size)]) if self.vals else np.ones(idle.size)
        W = sp.csr_array(sp.coo_array((vals, (rows, cols)), shape=(self.n, self.n)))
        W.sum_duplicates()
        W.sort_indices()
        return W


def _hhc_groups(nodes: np.ndarray, factors: list[int]) -> list[np.ndarray]:
    """Clique groups of each hyper-hypercube layer on ``nodes`` (labelled by mixed-radix digits)."""
    if not factors:
        return []
    arr = np.asarray(nodes).reshape(factors)
    return [np.moveaxis(arr, t, -1).reshape(-1, f) for t, f in enumerate(factors)]


def _simple_layers(n: int, b: int) -> list[_Layer]:
    """Layers of the simple Base-b graph on nodes 0..n-1 (module doc, steps 1-3)."""
    factors = hhc_factors(n, b)
    if factors is not None:  # n is b-smooth (includes n = 1 and every single digit): pure hyper-hypercube
        layers = []
        for groups in _hhc_groups(np.arange(n), factors):
            layer = _Layer(n)
            layer.cliques(groups)
            layers.append(layer)
        return layers or [_Layer(n)]
    digits = base_digits(n, b)
    L = len(digits)
    sizes = [a * b**p for a, p in digits]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    tails = [int(n - starts[g]) for g in range(L)]  # S_l
    group_factors = [hhc_factors(s, b) for s in sizes]
    H = len(group_factors[0])
    length = max([H + L - 1] + [H + (g + 1) + digits[g][1] for g in range(L - 1)])
    layers = [_Layer(n) for _ in range(length)]
    # 1. every group runs its own hyper-hypercube from step 0
    for g in range(L):
        for t, groups in enumerate(_hhc_groups(np.arange(starts[g], starts[g + 1]), group_factors[g])):
            layers[t].cliques(groups)
    # 2. absorb V_l into T_{l+1} at step H + g (g = l - 1), 3. then block hyper-hypercubes of V_l
    for g in range(L - 1):
        a, p = digits[g]
        block = b**p
        S_next, S_l = tails[g + 1], tails[g]
        tail = np.arange(starts[g + 1], n)
        blocks = np.arange(starts[g], starts[g + 1]).reshape(a, block)
        partners = blocks[:, :S_next]  # (a, S_next): the t-th node of every block
        beta = block / S_l
        step = H + g
        layers[step].link(np.tile(tail, a), partners.ravel(), beta, np.full(S_next * a, S_next / S_l), 1.0 - beta)
        if p:  # axis 0 of the (a, b, ..., b) array indexes the blocks, which are averaged separately
            arr = blocks.reshape((a, *([b] * p)))
            for t in range(p):
                layers[step + 1 + t].cliques(np.moveaxis(arr, t + 1, -1).reshape(-1, b))
    return layers


def _sequence(layers: list[_Layer], name: str, rule: str = "base") -> Topology:
    tops = []
    for t, layer in enumerate(layers):
        W = layer.csr()
        tops.append(Topology(n=layer.n, name=f"{name}[{t}]", directed=False, rule=rule, matrix=W))
    return time_varying(tops, name=name)


# --------------------------------------------------------------------------- public constructors


@topology("hyper_hypercube", params=("k",), time_varying=True, exact=True)
def hyper_hypercube(n: int, k: int = 1) -> Topology:
    r"""k-peer hyper-hypercube: exact averaging in one layer per factor of ``n`` (module doc).

    Needs every prime factor of ``n`` at most ``k + 1``. The factors ``2 <= f_t <= k + 1`` are taken
    greedily from ``k + 1`` down, so ``n = (k+1)^p`` gives ``p`` layers. Stored as circulant layers on
    :math:`\mathbb Z_{f_1}\times\dots\times\mathbb Z_{f_L}` (layer ``t``: self and the ``f_t - 1`` other
    residues along axis ``t``, weight ``1/f_t`` each), so spectra and products use the FFT.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    k : int
        Maximum number of peers per node and step, ``>= 1``.

    Raises
    ------
    UserError
        Bad ``n`` or ``k``, or a prime factor of ``n`` above ``k + 1`` (use :func:`base_graph`).

    Examples
    --------
    >>> from simcomm.topology import hyper_hypercube, product_deviation, max_degree
    >>> topo = hyper_hypercube(12, 3)     # 12 = 4 * 3: two layers
    >>> topo.period, max_degree(topo), product_deviation(topo) < 1e-12
    (2, 3, True)
    """
    n, k = _check_nk(n, k)
    if n < 2:
        raise UserError(f"hyper_hypercube needs n >= 2 nodes, got n={n}")
    b = k + 1
    factors = hhc_factors(n, b)
    if factors is None:
        big = n // smooth_part(n, b)
        p = next(f for f in range(2, big + 1) if big % f == 0)
        raise UserError(
            f"hyper_hypercube(n={n}, k={k}) needs every prime factor of n to be <= k+1={b}, but {p} divides n; "
            f"use base_graph(n, k) (any n) or k >= {p - 1}"
        )
    shape = tuple(factors)
    q = len(shape)
    layers = []
    for t, f in enumerate(shape):
        offs = np.zeros((f, q), dtype=np.int64)
        offs[:, t] = np.arange(f)
        layers.append(circulant(f"hyper_hypercube[{t}]", shape, offs, np.full(f, 1.0 / f), "base"))
    return time_varying(layers, name="hyper_hypercube")


@topology("one_peer_hypercube", time_varying=True, exact=True)
def one_peer_hypercube(n: int) -> Topology:
    r"""One-peer hypercube for :math:`n = 2^p`: at step ``t`` node ``i`` averages with ``i XOR 2^t``.

    The ``k = 1`` hyper-hypercube; ``p`` layers, each a perfect matching with weights 1/2, exact
    averaging after one period from every phase (the layers commute).

    Examples
    --------
    >>> from simcomm.topology import one_peer_hypercube, product_deviation
    >>> topo = one_peer_hypercube(16)
    >>> topo.period, product_deviation(topo, k0=3) < 1e-12
    (4, True)
    """
    n = _not_too_large(integer(n, "number of nodes n", low=2))
    if n & (n - 1):
        lo = 1 << (n.bit_length() - 1)
        raise UserError(
            f"one_peer_hypercube needs n = 2^p nodes, got n={n}; use n={lo} or n={2 * lo}, or base_graph(n, 1)"
        )
    topo = hyper_hypercube(n, 1)
    # layer t of the hyper-hypercube flips axis t of the C-ordered (2, ..., 2) array, i.e. bit p-1-t
    return time_varying(topo.layers[::-1], name="one_peer_hypercube")


@topology("simple_base_graph", params=("k",), time_varying=True, exact=True, aliases=("simple_base",))
def simple_base_graph(n: int, k: int = 1) -> Topology:
    r"""Simple Base-(k+1) graph: exact averaging for every ``n >= 1`` with at most ``k`` peers per step.

    Construction and proof in the module doc: the nodes are split by the base-(k+1) digits of ``n``,
    every part averages internally (hyper-hypercube), then the parts are absorbed from the largest
    down, each absorb step followed by block hyper-hypercubes of the absorbed part. Period at most
    :math:`2\log_{k+1}(n) + 2`; for ``n`` whose prime factors are all ``<= k + 1`` it is the
    hyper-hypercube.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 1``.
    k : int
        Maximum number of peers per node and step, ``>= 1``.

    Returns
    -------
    Topology
        Time-varying, sparse symmetric layers; ``W^(tau-1) ... W^(0) = J``.

    Examples
    --------
    >>> from simcomm.topology import simple_base_graph, product_deviation, max_degree
    >>> topo = simple_base_graph(12, 1)
    >>> topo.period, max_degree(topo), product_deviation(topo) < 1e-12
    (7, 1, True)
    """
    n, k = _check_nk(n, k)
    if n >= 2 and hhc_factors(n, k + 1) is not None:  # the same matrices, stored as circulants (FFT spectra)
        return time_varying(hyper_hypercube(n, k).layers, name="simple_base_graph")
    return _sequence(_simple_layers(n, k + 1), "simple_base_graph")


def _base_layers(n: int, b: int) -> list[_Layer]:
    simple = _simple_layers(n, b)
    q = smooth_part(n, b)
    r = n // q
    if q == 1 or r == 1:
        return simple
    inner = _simple_layers(r, b)
    cols = hhc_factors(q, b)
    if len(inner) + len(cols) >= len(simple):
        return simple
    layers = []
    for piece in inner:  # the q rows of the q x r array run the simple graph on r nodes side by side
        layer = _Layer(n)
        for c in range(q):
            layer.merge(piece.shifted(c * r, n))
        layers.append(layer)
    grid = np.arange(n).reshape(q, r).T  # (r, q): row t lists the t-th node of every copy
    for t, f in enumerate(cols):
        layer = _Layer(n)
        arr = grid.reshape((r, *cols))
        layer.cliques(np.moveaxis(arr, t + 1, -1).reshape(-1, f))
        layers.append(layer)
    return layers


@topology("base_graph", params=("k",), time_varying=True, exact=True, aliases=("base",))
def base_graph(n: int, k: int = 1) -> Topology:
    r"""Base-(k+1) graph (Takezawa et al., NeurIPS 2023): exact averaging for every ``n``, degree ``<= k``.

    Splits :math:`n = q r` with ``q`` the largest divisor of ``n`` whose prime factors are at most
    ``k + 1``: the simple Base-(k+1) graph on ``r`` nodes runs in ``q`` copies side by side, then a
    hyper-hypercube on ``q`` nodes joins the copies; the shorter of this and
    :func:`simple_base_graph` is returned (module doc). For ``n = (k+1)^p`` this is the
    hyper-hypercube with exactly ``p`` layers.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 1``.
    k : int
        Maximum number of peers per node and step, ``>= 1``.

    Returns
    -------
    Topology
        Time-varying (``period`` = sequence length), symmetric doubly stochastic sparse layers.

    Raises
    ------
    UserError
        ``n < 1``, ``k < 1`` or a non-integer.

    Examples
    --------
    >>> from simcomm.topology import base_graph, product_deviation, max_degree
    >>> topo = base_graph(25, 2)
    >>> max_degree(topo) <= 2, product_deviation(topo) < 1e-12
    (True, True)
    >>> base_graph(12, 1).period     # 12 = 4 * 3: simple graph on 3 nodes (3 steps), then 2 hypercube steps
    5
    """
    n, k = _check_nk(n, k)
    if n >= 2 and hhc_factors(n, k + 1) is not None:  # the same matrices, stored as circulants (FFT spectra)
        return time_varying(hyper_hypercube(n, k).layers, name="base_graph")
    return _sequence(_base_layers(n, k + 1), "base_graph")
