r"""Gossip (mixing) kernels, numpy reference: one step :math:`X \leftarrow W X` on an ``(n, d)`` array.

Weight convention: ``W[i, j]`` is the weight node ``i`` puts on node ``j``, so row ``i`` of the
result is :math:`\sum_j W_{ij} X_j`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["shift_mix", "csr_mix", "node_shift_mix", "edge_mix"]


def shift_mix(X: np.ndarray, shifts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Circulant mixing :math:`Y_i = \sum_t w_t X_{(i + h_t) \bmod n}` (no n x n matrix).

    Terms are added in the order of ``shifts`` (the numba kernel uses the same order).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        One row per node.
    shifts : ndarray of int64, shape (m,)
        Offsets :math:`h_t` (any integers; reduced mod n).
    weights : ndarray of float64, shape (m,)
        Weights :math:`w_t`.

    Returns
    -------
    ndarray, shape (n, d)
        The mixed array (same dtype as ``X``).

    Examples
    --------
    >>> import numpy as np
    >>> shift_mix(np.arange(4.0)[:, None], np.array([0, 1]), np.array([0.5, 0.5])).ravel()
    array([0.5, 1.5, 2.5, 1.5])
    """
    n = X.shape[0]
    out = np.zeros_like(X)
    tmp = np.empty_like(X)
    for h, w in zip(np.mod(shifts, n).tolist(), weights.tolist()):
        # rows i < n - h read X[i + h]; the last h rows wrap to X[i + h - n]
        np.multiply(X[h:], w, out=tmp[: n - h])
        np.multiply(X[:h], w, out=tmp[n - h :])
        out += tmp
    return out


def csr_mix(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Sparse mixing :math:`Y_i = \sum_p \mathrm{data}_p X_{\mathrm{indices}_p}` over row ``i`` of a CSR ``W``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR arrays of ``W`` (int64, int64, float64).
    X : ndarray, shape (n, d)

    Returns
    -------
    ndarray, shape (n, d)

    Examples
    --------
    >>> import numpy as np
    >>> csr_mix(np.array([0, 2, 4]), np.array([0, 1, 0, 1]), np.full(4, 0.5), np.array([[0.0], [2.0]])).ravel()
    array([1., 1.])
    """
    import scipy.sparse as sp

    X2 = X.reshape(X.shape[0], -1)
    n = len(indptr) - 1
    W = sp.csr_array((np.asarray(data, dtype=X2.dtype), indices, indptr), shape=(n, X2.shape[0]))
    # scipy's CSR product accumulates row i over p = indptr[i] .. indptr[i+1]-1 in order, from 0
    return np.asarray(W @ X2).reshape((n,) + X.shape[1:])


def node_shift_mix(X: np.ndarray, shifts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Shift-pattern mixing with per-node weights, :math:`Y_i = \sum_t w_{t,i} X_{(i + h_t) \bmod n}`.

    The directed ring and exponential graphs with node-dependent (push or pull) weights: ``W[i, i +
    h_t] = weights[t, i]``, no n x n matrix. Terms are added in the order of ``shifts``, from 0.0.

    Parameters
    ----------
    X : ndarray, shape (n,) or (n, d)
    shifts : ndarray of int64, shape (m,)
    weights : ndarray of float64, shape (m, n)

    Returns
    -------
    ndarray
        Same shape and dtype as ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> node_shift_mix(np.arange(3.0), np.array([0, 1]), np.array([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0]]))
    array([0. , 1.5, 0. ])
    """
    X2 = X.reshape(X.shape[0], -1)
    n = X2.shape[0]
    out = np.zeros_like(X2)
    idx = np.arange(n)
    for t, h in enumerate(np.mod(np.asarray(shifts, dtype=np.int64), n).tolist()):
        out += np.asarray(weights[t], dtype=X2.dtype)[:, None] * X2[(idx + h) % n]
    return out.reshape(X.shape)


def edge_mix(indptr, indices, eid, data, kept, X, out=None):
    r"""Gossip over the kept edges only: :math:`Y_i = x_i + \sum_{p:\ \mathrm{kept}[e_p]} w_p (x_{j_p} - x_i)`.

    A dropped edge's weight stays with both endpoints (their self-weights grow), so every realised
    ``W_t`` is symmetric and doubly stochastic when ``W`` is. ``indptr, indices, data`` are the CSR of
    the off-diagonal part of ``W`` (both directions), ``eid[p]`` the undirected edge of entry ``p``.
    Computed as ``X + (A_t X - deg_t X)`` with :math:`A_t` the kept entries (row sums from 0.0 in
    index order, as :func:`csr_mix`); no ``n x n`` array.

    Parameters
    ----------
    indptr, indices, eid : ndarray of int64
    data : ndarray of float64
    kept : ndarray of bool, shape (E,)
    X : ndarray, shape (n, d)
    out : ndarray, optional
        Receives the result (``X``'s shape and dtype, C-contiguous, not overlapping ``X``).

    Returns
    -------
    ndarray, shape (n, d)
        ``out`` if given.

    Examples
    --------
    >>> import numpy as np
    >>> ip, ix, e, w = np.array([0, 1, 2]), np.array([1, 0]), np.array([0, 0]), np.array([0.5, 0.5])
    >>> X = np.array([[0.0], [2.0]])
    >>> edge_mix(ip, ix, e, w, np.array([True]), X).ravel(), edge_mix(ip, ix, e, w, np.array([False]), X).ravel()
    (array([1., 1.]), array([0., 2.]))
    """
    d_t = np.where(np.asarray(kept, dtype=bool)[eid], np.asarray(data, dtype=X.dtype), 0.0)
    M = csr_mix(indptr, indices, d_t, X)
    deg = csr_mix(indptr, indices, d_t, np.ones((X.shape[0], 1), dtype=X.dtype))
    M -= deg * X
    return X + M if out is None else np.add(X, M, out=out)
