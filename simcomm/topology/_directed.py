r"""Directed and random topologies: shift patterns with per-node weights, random matchings, s-out graphs.

Weight convention as everywhere: ``W[i, j]`` is the weight node ``i`` puts on node ``j``'s model.

Directed shift patterns (``directed_ring``, ``directed_exponential``)
--------------------------------------------------------------------
Node ``i`` listens to the nodes ``i + h_t`` (mod ``n``), ``h_0 = 0`` (itself); equivalently node ``j``
sends to ``j - h_t``. With node-dependent self-weights :math:`a_j` two weightings exist:

* ``weighting="push"`` (column stochastic): SENDER ``j`` keeps :math:`a_j` and splits
  :math:`1 - a_j` equally among its ``m`` out-neighbours, so
  :math:`W_{i, i+h_t} = (1 - a_{i+h_t})/m` and every column sums to 1 (the sum of the models is
  kept: push-sum mixing);
* ``weighting="pull"`` (row stochastic): RECEIVER ``i`` keeps :math:`a_i` and spreads
  :math:`1 - a_i` over its ``m`` in-neighbours, :math:`W_{i, i+h_t} = (1 - a_i)/m`: every row sums to 1
  (consensus, but on the weighted average :math:`\pi^\top x` of the left Perron vector).

With equal self-weights both are the circulant :math:`a I + \frac{1-a}{m}\sum_t S^{h_t}`, doubly
stochastic; the node-dependent case is what push-sum is for. They are stored as sparse topologies
(every generic function sees the CSR matrix) with ``node_shifts``/``node_weights`` for the
``node_shift_mix`` kernels, which mix in ``O(n d m)`` without an ``n x n`` matrix.

Random topologies (one draw per call; a run draws one per step from its stream)
-------------------------------------------------------------------------------
* :func:`random_matching`: a uniform perfect matching of the nodes (one node left out when ``n`` is
  odd); matched pairs average, :math:`W = (I + P)/2`: symmetric, doubly stochastic, one peer per node.
* :func:`s_out`: Epidemic Learning's s-out sampling (de Vos et al., NeurIPS 2023): every node sends
  its model to ``s`` distinct other nodes drawn uniformly, and every node averages its own model with
  all it received, :math:`x_i' = (x_i + \sum_{j \to i} x_j)/(1 + \deg^-_i)`: row stochastic.
  ``weighting="push"`` gives its push-sum twin (each node splits its mass equally over itself and its
  ``s`` targets): column stochastic.

Both are built as CSR in ``O(n s)`` (never an ``n x n`` array).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm._validate import generator
from simcomm.topology._graphs import Topology, _check_n, _readonly
from simcomm.topology._registry import topology

__all__ = ["directed_ring", "directed_exponential", "random_matching", "s_out", "WEIGHTINGS"]

#: How node-dependent weights are normalised: by the sender (column stochastic) or the receiver (row).
WEIGHTINGS = ("push", "pull")


def _check_weighting(weighting: str) -> str:
    if weighting not in WEIGHTINGS:
        raise UserError(f"unknown weighting '{weighting}'; use 'push' (column stochastic) or 'pull' (row stochastic)")
    return weighting


def _self_weights(self_weights, n: int, m: int) -> np.ndarray:
    """``self_weights`` as an ``(n,)`` array in ``[0, 1)`` (default: ``1/(m+1)`` everywhere)."""
    if self_weights is None:
        return np.full(n, 1.0 / (m + 1))
    a = np.asarray(self_weights, dtype=np.float64)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise UserError(f"self_weights must be one number or one per node, shape ({n},); got shape {a.shape}")
    if not np.all(np.isfinite(a)) or a.min() < 0.0 or a.max() >= 1.0:
        raise UserError("self_weights must lie in [0, 1): a node that keeps everything never sends, "
                        "and the graph is no longer strongly connected")
    return a


def _shift_pattern(name: str, n: int, hops, self_weights, weighting: str) -> Topology:
    """Sparse topology on the shift pattern {0} + hops with per-node weights (module doc)."""
    _check_weighting(weighting)
    hops = np.asarray(hops, dtype=np.int64)
    m = hops.size
    a = _self_weights(self_weights, n, m)
    shifts = np.concatenate([[0], hops]).astype(np.int64)
    i = np.arange(n)
    Wn = np.empty((m + 1, n))
    Wn[0] = a
    for t, h in enumerate(hops, start=1):
        # push: the sender (i + h) fixes the weight; pull: the receiver i does
        Wn[t] = (1.0 - a[(i + h) % n]) / m if weighting == "push" else (1.0 - a) / m
    rows = np.tile(i, m + 1)
    cols = ((i[None, :] + shifts[:, None]) % n).ravel()
    W = sp.csr_array(sp.coo_array((Wn.ravel(), (rows, cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    uniform = bool(np.all(a == a[0]))
    stochasticity = "doubly" if uniform else ("column" if weighting == "push" else "row")
    return Topology(n=n, name=name, directed=True, rule=weighting, matrix=W, stochasticity=stochasticity,
                    node_shifts=_readonly(shifts), node_weights=_readonly(Wn))


@topology("directed_ring", symmetric=False)
def directed_ring(n: int, *, self_weights=None, weighting: str = "push") -> Topology:
    r"""Directed ring: node ``i`` listens to ``i + 1`` only (node ``j`` sends to ``j - 1``).

    :math:`W_{ii} = a_i`; ``push``: :math:`W_{i,i+1} = 1 - a_{i+1}` (column stochastic), ``pull``:
    :math:`W_{i,i+1} = 1 - a_i` (row stochastic); module doc. Strongly connected for ``n >= 2``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    self_weights : float or array_like of shape (n,), optional
        :math:`a_i \in [0, 1)`; default 1/2 everywhere (then doubly stochastic).
    weighting : {"push", "pull"}

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import directed_ring
    >>> t = directed_ring(4, self_weights=[0.5, 0.2, 0.5, 0.2])
    >>> t.stochasticity, np.asarray(t.matrix.sum(axis=0)).round(12).tolist()
    ('column', [1.0, 1.0, 1.0, 1.0])
    """
    n = _check_n(n)
    return _shift_pattern("directed_ring", n, [1], self_weights, weighting)


@topology("directed_exponential", symmetric=False)
def directed_exponential(n: int, *, self_weights=None, weighting: str = "push") -> Topology:
    r"""Static exponential digraph with per-node weights: node ``i`` listens to ``i + 2^t``, :math:`2^t < n`.

    The pattern of :func:`simcomm.topology.exponential` (:math:`\tau = \lceil\log_2 n\rceil`
    out-neighbours per node); with the default self-weights :math:`1/(\tau+1)` it IS that graph
    (doubly stochastic), with node-dependent ones it is column (``push``) or row (``pull``)
    stochastic (module doc).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import directed_exponential, exponential, mixing_matrix
    >>> bool(np.allclose(mixing_matrix(directed_exponential(8)), mixing_matrix(exponential(8))))
    True
    """
    n = _check_n(n)
    hops, h = [], 1
    while h < n:
        hops.append(h)
        h *= 2
    return _shift_pattern("directed_exponential", n, hops, self_weights, weighting)


@topology("random_matching", params=("rng",), random=True)
def random_matching(n: int, *, rng) -> Topology:
    r"""One uniform random (near-)perfect matching; matched pairs average, :math:`W = (I + P)/2`.

    A uniform permutation is cut into consecutive pairs; with ``n`` odd its last node is left out
    (keeps its model). Doubly stochastic, symmetric, one peer per node.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    rng : numpy.random.Generator or seed
        Required (one matching per call).

    Examples
    --------
    >>> from simcomm.topology import random_matching, is_doubly_stochastic
    >>> t = random_matching(6, rng=0)
    >>> is_doubly_stochastic(t), t.matrix.nnz
    (True, 12)
    """
    n = _check_n(n)
    rng = generator(rng, "random_matching")
    perm = rng.permutation(n)
    partner = np.arange(n)
    a, b = perm[0 : n - 1 : 2], perm[1:n:2]
    partner[a], partner[b] = b, a
    i = np.arange(n)
    alone = partner == i
    rows = np.concatenate([i, i[~alone]])
    cols = np.concatenate([i, partner[~alone]])
    data = np.concatenate([np.where(alone, 1.0, 0.5), np.full(int((~alone).sum()), 0.5)])
    W = sp.csr_array(sp.coo_array((data, (rows, cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    pairs = np.sort(np.stack([a, b], axis=1), axis=1)
    return Topology(n=n, name="random_matching", directed=False, rule="one_peer", matrix=W, edges=_readonly(pairs))


def _distinct_targets(n: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, s)`` targets: row ``i`` is ``s`` distinct nodes other than ``i``, uniform (Floyd's algorithm).

    Vectorised over nodes, a loop over ``s`` only: step ``j = N - s + r`` draws ``t`` uniform in
    ``0..j`` and keeps it unless already taken, else takes ``j`` (uniform ``s``-subsets of
    ``0..N-1``, ``N = n - 1``); index ``t`` then names the ``t``-th node other than ``i``.
    """
    N = n - 1
    out = np.empty((n, s), dtype=np.int64)
    for r in range(s):
        j = N - s + r
        t = rng.integers(0, j + 1, size=n)
        taken = (out[:, :r] == t[:, None]).any(axis=1) if r else np.zeros(n, dtype=bool)
        out[:, r] = np.where(taken, j, t)
    i = np.arange(n)[:, None]
    return out + (out >= i)  # skip node i itself


@topology("s_out", params={"s": Param("int", low=1, doc="targets per node, 1 <= s <= n - 1"), "rng": None,
                            "weighting": Param("str", choices=WEIGHTINGS, doc="pull or push")},
          stochasticity="row", symmetric=False, random=True)
def s_out(n: int, s: int = 1, *, rng, weighting: str = "pull") -> Topology:
    r"""One Epidemic Learning s-out round: every node sends to ``s`` distinct uniform others (module doc).

    ``pull`` (EL's rule, row stochastic): :math:`W_{ii} = W_{ij} = 1/(1 + \deg^-_i)` for every
    :math:`j` that sent to :math:`i`. ``push`` (column stochastic): node :math:`j` puts
    :math:`1/(s+1)` on itself and on each of its targets.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    s : int, default 1
        Targets per node, ``1 <= s <= n - 1``.
    rng : numpy.random.Generator or seed
        Required (one draw per call).
    weighting : {"pull", "push"}

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import s_out
    >>> t = s_out(10, 3, rng=0)
    >>> t.stochasticity, bool(np.allclose(t.matrix.sum(axis=1), 1.0))
    ('row', True)
    """
    n = _check_n(n)
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or not (1 <= s <= n - 1):
        raise UserError(f"s-out needs 1 <= s <= n - 1 = {n - 1} targets per node, got s={s!r}")
    _check_weighting(weighting)
    rng = generator(rng, "s_out")
    s = int(s)
    targets = _distinct_targets(n, s, rng)
    senders = np.repeat(np.arange(n), s)
    receivers = targets.ravel()
    i = np.arange(n)
    if weighting == "pull":
        indeg = np.bincount(receivers, minlength=n)
        w_in = 1.0 / (1.0 + indeg)
        data = np.concatenate([w_in, w_in[receivers]])
        stochasticity = "row"
    else:
        data = np.full(n * (s + 1), 1.0 / (s + 1))
        stochasticity = "column"
    rows = np.concatenate([i, receivers])
    cols = np.concatenate([i, senders])
    W = sp.csr_array(sp.coo_array((data, (rows, cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    return Topology(n=n, name="s_out", directed=True, rule=weighting, matrix=W, stochasticity=stochasticity)
