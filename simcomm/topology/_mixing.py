r"""Mixing: apply :math:`W^{(k)}` to an ``(n, d)`` array, dense/sparse matrices, degree and stochasticity.

``W[i, j]`` is the weight node ``i`` puts on node ``j``; a gossip step is ``X <- W @ X``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simcomm._errors import UserError
from simcomm.topology._graphs import Topology, _check_rule, _rule_weights

__all__ = ["mix", "mixing_matrix", "sparse_matrix", "max_degree", "is_doubly_stochastic", "DENSE_MAX", "FFT_OFFSETS",
           "to_networkx"]

#: Largest n for which a dense n x n matrix is ever built for a circulant or sparse topology.
DENSE_MAX = 4096

#: A 1-D circulant with more offsets than this is mixed through the FFT (e.g. the complete graph); the gossip
#: blocks of simcomm.optim shift the same circulants with their kernels up to it.
FFT_OFFSETS = 64


def _circulant_csr(topo: Topology) -> sp.csr_array:
    shape, n = topo.shape, topo.n
    rows = np.arange(n)
    multi = np.stack(np.unravel_index(rows, shape), axis=1)  # (n, q)
    cols = np.concatenate(
        [np.ravel_multi_index(tuple(np.mod(multi + h, shape).T), shape) for h in topo.offsets]
    )
    data = np.repeat(topo.weights, n)
    W = sp.csr_array(sp.coo_array((data, (np.tile(rows, len(topo.weights)), cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    return W


def sparse_matrix(topology: Topology, k: int = 0) -> sp.csr_array:
    r"""``W^(k)`` as a SciPy CSR matrix (cached on the topology).

    Examples
    --------
    >>> from simcomm.topology import ring, sparse_matrix
    >>> sparse_matrix(ring(5)).nnz
    15
    """
    layer = topology.layer(k)
    if layer.matrix is not None:
        return layer.matrix
    if "csr" not in layer._cache:
        layer._cache["csr"] = _circulant_csr(layer)
    return layer._cache["csr"]


def mixing_matrix(topology: Topology, k: int = 0, rule: str | None = None) -> np.ndarray:
    r"""Dense :math:`W^{(k)}` (small ``n`` only), ``W[i, j]`` = weight node ``i`` puts on node ``j``.

    Parameters
    ----------
    topology : Topology
    k : int
        Iteration (selects the layer of a time-varying topology).
    rule : {"metropolis", "max_degree"}, optional
        Re-weight an undirected graph built from edges with this rule; ``None`` (default) keeps the
        topology's own weights. Regular circulant graphs have the same weights under both rules.

    Raises
    ------
    UserError
        If ``n > DENSE_MAX`` (use :func:`mix` / :func:`rho` instead), or ``rule`` cannot apply.

    Examples
    --------
    >>> from simcomm.topology import ring, mixing_matrix
    >>> mixing_matrix(ring(4))[0]
    array([0.33333333, 0.33333333, 0.        , 0.33333333])
    """
    layer = topology.layer(k)
    if layer.n > DENSE_MAX:
        raise UserError(
            f"a dense {layer.n}x{layer.n} mixing matrix is not built above n={DENSE_MAX}; "
            "use mix() to apply W or rho() for its spectrum"
        )
    if rule is not None:
        _check_rule(rule)
        if layer.edges is not None:
            return _rule_weights(layer.n, layer.edges, rule).toarray()
        if not (layer.kind == "circulant" and not layer.directed and layer.rule == "uniform"):
            raise UserError(
                f"rule '{rule}' applies to undirected graphs; '{layer.name}' has fixed weights ({layer.rule})"
            )
    return sparse_matrix(layer).toarray()


def mix(topology: Topology, X, k: int = 0):
    r"""One gossip step :math:`X \leftarrow W^{(k)} X` without forming an ``n x n`` matrix.

    1-D circulant graphs (ring, exponential, one-peer) use the backend's ``shift_mix`` (a few shifted
    adds, ``O(n d m)``); circulants with many offsets (complete) use the FFT; shift patterns with
    per-node weights (directed ring and exponential graphs) use ``node_shift_mix``; everything else
    uses the backend's ``csr_mix``. The backend is the active one (:func:`simcomm.backends.use`; default
    ``numba``), or cupy for a device array: ``X`` says where it runs.

    Parameters
    ----------
    topology : Topology
    X : ndarray, shape (n,) or (n, d)
        One row per node.
    k : int
        Iteration index (layer ``k % period`` of a time-varying topology).

    Returns
    -------
    ndarray
        ``W^(k) X``, same shape as ``X``; same dtype for float input, float64 for integer or
        boolean input (averaging integers in integer arithmetic would truncate).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import one_peer_exponential, mix
    >>> topo = one_peer_exponential(4)
    >>> X = np.arange(4.0)[:, None]
    >>> mix(topo, mix(topo, X, 0), 1).ravel()   # exact average
    array([1.5, 1.5, 1.5, 1.5])
    """
    from simcomm.backends import array_namespace, backend_for

    if not isinstance(topology, Topology):
        raise UserError(f"mix: topology must be a Topology (e.g. ring(8)), got {type(topology).__name__}; "
                        "for a mixing matrix W, build one with from_matrix(W)")
    layer = topology.layer(k)
    xp = array_namespace(X)
    X = xp.asarray(X)  # a device (CuPy) array stays on the device
    if X.dtype.kind in "biu":  # integer or boolean input: mixing averages, so compute in float64
        X = X.astype(np.float64)
    elif X.dtype.kind == "c":
        raise UserError("mix: X is complex; pass real node values (mix the real and imaginary parts separately)")
    if X.shape[0] != layer.n:
        raise UserError(f"X has {X.shape[0]} rows but the topology has n={layer.n} nodes; use one row per node")
    be = backend_for(None, X)
    if layer.kind == "circulant" and len(layer.shape) == 1:
        shifts = layer.offsets[:, 0]
        if len(shifts) <= FFT_OFFSETS:
            return be.shift_mix(X, shifts, layer.weights)
        return _fft_mix(layer, X)
    if layer.node_shifts is not None:
        # a shift pattern with per-node weights (directed_ring, directed_exponential): O(n d m) shifted adds
        return be.node_shift_mix(X, layer.node_shifts, layer.node_weights)
    W = sparse_matrix(layer)
    return be.csr_mix(W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data, X)


def _fft_mix(layer: Topology, X: np.ndarray) -> np.ndarray:
    # Y_i = sum_h w_h X_{i+h}  <=>  F(Y) = conj(F(c)) * F(X) along the node axis (c = first row)
    import scipy.fft

    from simcomm.backends import array_namespace

    xp = array_namespace(X)
    fft = scipy.fft if xp is np else xp.fft
    n = layer.n
    c = np.zeros(n)
    c[layer.offsets[:, 0]] = layer.weights
    lam = xp.asarray(np.conj(scipy.fft.rfft(c)))
    Xf = fft.rfft(X, axis=0)
    Xf *= lam.reshape((-1,) + (1,) * (X.ndim - 1))
    return fft.irfft(Xf, n=n, axis=0).astype(X.dtype, copy=False)


def max_degree(topology: Topology) -> int:
    r"""Largest number of peers a node talks to in one step, self excluded.

    The maximum, over nodes and over the layers of a time-varying topology, of the off-diagonal
    nonzeros in a row or a column of ``W^(k)`` (messages received or sent per iteration).

    Examples
    --------
    >>> from simcomm.topology import exponential, one_peer_exponential, max_degree
    >>> max_degree(exponential(256)), max_degree(one_peer_exponential(256))
    (8, 1)
    """
    if topology.time_varying:
        return max(max_degree(t) for t in topology.layers)
    if topology.kind == "circulant":
        return int(np.count_nonzero(np.any(topology.offsets != 0, axis=1)))
    W = topology.matrix
    off = sp.coo_array(W)
    keep = off.row != off.col
    rows = np.bincount(off.row[keep], minlength=W.shape[0])
    cols = np.bincount(off.col[keep], minlength=W.shape[0])
    return int(max(rows.max(initial=0), cols.max(initial=0)))


def is_doubly_stochastic(W, atol: float = 1e-12) -> bool:
    r"""Whether ``W`` (a matrix or every layer of a topology) is nonnegative with unit row and column sums.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import is_doubly_stochastic, star
    >>> is_doubly_stochastic(star(6)), is_doubly_stochastic(np.array([[1.0, 0.0], [1.0, 0.0]]))
    (True, False)
    """
    if isinstance(W, Topology):
        if W.time_varying:
            return all(is_doubly_stochastic(t, atol) for t in W.layers)
        if W.kind == "circulant":
            return bool(W.weights.min() >= -atol and abs(W.weights.sum() - 1.0) <= atol)
        W = W.matrix
    M = sp.csr_array(W) if sp.issparse(W) else np.asarray(W, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        return False
    data = M.data if sp.issparse(M) else M
    if data.size and (not np.all(np.isfinite(data)) or data.min() < -atol):
        return False
    rows = np.asarray(M.sum(axis=1)).ravel()
    cols = np.asarray(M.sum(axis=0)).ravel()
    return bool(np.abs(rows - 1).max() <= atol and np.abs(cols - 1).max() <= atol)


def to_networkx(topology: Topology, k: int = 0):
    r"""networkx graph of :math:`W^{(k)}`: edge ``(i, j)`` carries ``weight = W[i, j]``; self-loops hold ``W[i, i]``.

    A ``DiGraph`` when ``W^(k)`` is not symmetric, else a ``Graph``.

    Examples
    --------
    >>> from simcomm.topology import ring, to_networkx
    >>> to_networkx(ring(5)).number_of_edges()   # 5 ring edges + 5 self-loops
    10
    """
    import networkx as nx

    layer = topology.layer(k)
    W = sparse_matrix(layer).tocoo()
    G = nx.DiGraph() if layer.directed else nx.Graph()
    G.add_nodes_from(range(layer.n))
    if layer.directed:
        G.add_weighted_edges_from(zip(W.row.tolist(), W.col.tolist(), W.data.tolist()))
    else:
        keep = W.row <= W.col
        G.add_weighted_edges_from(zip(W.row[keep].tolist(), W.col[keep].tolist(), W.data[keep].tolist()))
    return G
