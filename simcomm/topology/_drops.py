r"""Unreliable links and sleeping nodes: random edge failures on a symmetric graph, drawn from the rng streams.

A :class:`LinkFailures` model says which undirected edges of a symmetric doubly stochastic ``W``
carry their messages at a step:

* ``kind="bernoulli"``: every edge fails independently with probability ``q`` at every step;
* ``kind="gilbert_elliott"``: every edge is a two-state Markov chain (good/bad; good -> bad with
  probability ``p_gb``, bad -> good with ``p_bg`` per step, started from its stationary law) that
  fails with probability ``q_good`` in the good state and ``q_bad`` in the bad one: bursts of losses
  (the Gilbert-Elliott channel, decent-bench's bursty drops);
* ``activation < 1``: every node is awake with that probability at every step; a sleeping node
  neither sends nor receives, so all its edges fail at that step (random node activation).

A failed edge's weight stays with both endpoints (:func:`unreliable_mix`: ``x_i += sum over kept
edges of w_ij (x_j - x_i)``), so every realised :math:`W_t` is symmetric and doubly stochastic and the
average is kept; ``compensate=False`` instead drops the lost weight (a receiver that averages only
what arrived with the original weights), the negative control. Nothing builds an ``n x n`` array:
the edges are the CSR of ``W``'s off-diagonal part with an edge id per entry (:func:`edge_list`),
and one step costs ``O(E + nnz d)`` (the backend's ``edge_mix``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import one_of, real

__all__ = ["DROP_KINDS", "LinkFailures", "EdgeList", "edge_list", "unreliable_mix"]

#: Kinds of link failure (module doc).
DROP_KINDS = ("bernoulli", "gilbert_elliott")


class EdgeList(NamedTuple):
    """The off-diagonal part of a symmetric ``W`` as CSR with an undirected edge id per entry.

    Attributes
    ----------
    indptr, indices, eid : ndarray of int64
        CSR rows (both directions of every edge) and ``eid[p]`` the edge of entry ``p``.
    data : ndarray of float64
        ``W[i, j]`` of entry ``p``.
    u, v : ndarray of int64, shape (E,)
        The endpoints of every edge, ``u < v``.
    n : int
    """

    indptr: np.ndarray
    indices: np.ndarray
    eid: np.ndarray
    data: np.ndarray
    u: np.ndarray
    v: np.ndarray
    n: int

    @property
    def n_edges(self) -> int:
        """Number of undirected edges ``E``."""
        return int(self.u.size)


def edge_list(topology, k: int = 0) -> EdgeList:
    """The :class:`EdgeList` of a symmetric topology's layer ``k`` (sparse, ``O(nnz)``).

    Raises
    ------
    UserError
        If ``W`` is not symmetric (a failed edge would then not keep the average).

    Examples
    --------
    >>> from simcomm.topology import ring
    >>> e = edge_list(ring(4))
    >>> e.n_edges, e.u.tolist(), e.v.tolist()
    (4, [0, 0, 1, 2], [1, 3, 2, 3])
    """
    from simcomm.topology._mixing import sparse_matrix

    W = sparse_matrix(topology, k).tocsr()
    W.sort_indices()
    n = W.shape[0]
    if abs(W - W.T).max() > 1e-12:
        raise UserError(f"link failures need a symmetric W, but '{topology.name}' is not; use an undirected graph")
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(W.indptr))
    cols = W.indices.astype(np.int64)
    off = rows != cols
    rows, cols, data = rows[off], cols[off], W.data[off]
    keys = np.minimum(rows, cols) * n + np.maximum(rows, cols)
    uniq, eid = np.unique(keys, return_inverse=True)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]).astype(np.int64)
    return EdgeList(indptr, cols, eid.astype(np.int64), np.asarray(data, dtype=np.float64), uniq // n, uniq % n, n)


@dataclass(frozen=True)
class LinkFailures:
    r"""Random link failures and node sleep (module doc); ``draw`` returns which edges work at a step.

    Parameters
    ----------
    q : float, default 0
        Bernoulli failure probability per edge and step, in ``[0, 1)``.
    kind : {"bernoulli", "gilbert_elliott"}
    p_gb, p_bg : float
        Gilbert-Elliott transition probabilities good -> bad and bad -> good per step
        (``p_bg`` in ``(0, 1]``: a bad state that never ends is a cut link, not a burst).
    q_good, q_bad : float
        Gilbert-Elliott failure probabilities in the good and the bad state (``q_good`` in ``[0, 1)``).
    activation : float, default 1
        Probability that a node is awake at a step, in ``(0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring
    >>> f, e = LinkFailures(q=0.5), edge_list(ring(6))
    >>> kept, _ = f.draw(e, f.init(e, np.random.default_rng(0)), np.random.default_rng(1))
    >>> kept.shape, kept.dtype
    ((6,), dtype('bool'))
    >>> LinkFailures(q=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simcomm._errors.UserError: drop rate q must be a finite number in [0, 1), got 1.0; a link that always ...
    """

    q: float = 0.0
    kind: str = "bernoulli"
    p_gb: float = 0.0
    p_bg: float = 1.0
    q_good: float = 0.0
    q_bad: float = 1.0
    activation: float = 1.0

    def __post_init__(self):  # noqa: D105
        one_of(self.kind, DROP_KINDS, "link failure kind")
        real(self.q, "drop rate q", low=0.0, high=1.0, high_open=True, hint="a link that always fails is no link")
        real(self.p_gb, "Gilbert-Elliott p_gb (good -> bad)", low=0.0, high=1.0)
        real(self.p_bg, "Gilbert-Elliott p_bg (bad -> good)", low=0.0, high=1.0, low_open=True,
             hint="a bad state that never ends is a cut link")
        real(self.q_good, "Gilbert-Elliott q_good", low=0.0, high=1.0, high_open=True)
        real(self.q_bad, "Gilbert-Elliott q_bad", low=0.0, high=1.0)
        real(self.activation, "node activation probability", low=0.0, high=1.0, low_open=True,
             hint="a node that never wakes never averages")
        if self.kind == "gilbert_elliott" and self.q:
            raise UserError("q is the Bernoulli drop rate; a Gilbert-Elliott channel takes q_good and q_bad")

    @property
    def bad_fraction(self) -> float:
        """Stationary probability of the bad state, :math:`p_{gb}/(p_{gb} + p_{bg})` (0 for Bernoulli)."""
        return self.p_gb / (self.p_gb + self.p_bg) if self.kind == "gilbert_elliott" else 0.0

    @property
    def mean_drop(self) -> float:
        """Long-run probability that an edge fails at a step (sleep not counted)."""
        if self.kind == "bernoulli":
            return float(self.q)
        b = self.bad_fraction
        return b * self.q_bad + (1.0 - b) * self.q_good

    def init(self, edges: EdgeList, rng) -> np.ndarray:
        """The channel state of every edge (``True`` = bad), drawn from the stationary law."""
        if self.kind == "bernoulli":
            return np.zeros(edges.n_edges, dtype=bool)
        return np.random.default_rng(rng).random(edges.n_edges) < self.bad_fraction

    def draw(self, edges: EdgeList, state: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
        """``(kept, new_state)`` for one step: which edges carry their messages, and the channel states.

        Draws, in this order: the channel transitions (Gilbert-Elliott), one uniform per edge for its
        failure, one per node for its sleep (``activation < 1``).
        """
        rng = np.random.default_rng(rng)
        E = edges.n_edges
        if self.kind == "bernoulli":
            kept = rng.random(E) >= self.q
        else:
            u = rng.random(E)
            state = np.where(state, u >= self.p_bg, u < self.p_gb)  # bad stays bad unless it recovers
            kept = rng.random(E) >= np.where(state, self.q_bad, self.q_good)
        if self.activation < 1.0:
            awake = rng.random(edges.n) < self.activation
            kept &= awake[edges.u] & awake[edges.v]
        return kept, state


def unreliable_mix(edges: EdgeList, X, kept, *, compensate: bool = True, out=None) -> np.ndarray:
    r"""One gossip step over the kept edges: :math:`x_i + \sum_{\text{kept } (i,j)} w_{ij}(x_j - x_i)`.

    ``compensate=False``: the failed edges' weight is lost instead of kept by the endpoints
    (:math:`x_i \mathrel{-}= \sum_{\text{failed } (i,j)} w_{ij} x_i`): ``W_t`` is then substochastic and
    the average leaks away (the negative control). The kernels are the active backend's
    (:func:`simcomm.backends.use`). ``out`` (optional: a writeable C-contiguous array of ``X``'s shape
    and dtype that does not overlap ``X``) receives the result, so a loop that alternates two buffers
    allocates nothing per step.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring
    >>> e = edge_list(ring(4))
    >>> unreliable_mix(e, np.arange(4.0)[:, None], np.ones(4, dtype=bool)).ravel().round(6)
    array([1.333333, 1.      , 2.      , 1.666667])
    """
    from simcomm.backends import get_backend

    be = get_backend()
    X = np.asarray(X, dtype=np.float64)
    kept = np.asarray(kept, dtype=bool)
    if out is not None:
        _check_out(out, X)
    res = be.edge_mix(edges.indptr, edges.indices, edges.eid, edges.data, kept, X, out)
    if not compensate:
        lost = be.csr_mix(edges.indptr, edges.indices, np.where(kept[edges.eid], 0.0, edges.data),
                          np.ones((edges.n, 1)))
        loss = lost[:, 0] * X if X.ndim == 1 else lost * X
        res = res - loss if out is None else np.subtract(res, loss, out=out)
    return res


def _check_out(out, X) -> None:
    """A one-line error unless ``out`` can receive the mix of ``X`` (same shape, float64, C-contiguous, apart)."""
    if not (isinstance(out, np.ndarray) and out.shape == X.shape and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        raise UserError(f"out must be a writeable C-contiguous float64 array of shape {X.shape}")
    if np.may_share_memory(out, X):
        raise UserError("out overlaps X; pass a separate buffer (e.g. the iterate before the current one)")
