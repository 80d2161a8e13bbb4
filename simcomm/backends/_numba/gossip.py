r"""Gossip (mixing) kernels, numba: same names, signatures and summation order as the numpy backend."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["shift_mix", "csr_mix", "node_shift_mix", "edge_mix"]

# Below this many entries (n * d) the serial kernel is used: starting the parallel threads costs
# tens of microseconds, more than the work itself (small simulations call the kernel every step).
PARALLEL_MIN = 1 << 15


@njit(cache=True, inline="always")
def _axpy_row(oi, w, xj, first):
    # oi <- 0.0 + w xj (first term) or oi <- oi + w xj: the numpy backend's sum from 0.0, term by term.
    # Writing the first term instead of zeroing oi saves a pass; "0.0 +" keeps the rounding and the sign
    # of zero. 1-D rows, so LLVM vectorises the loop (with 2-D indexing the mix ran 3x slower).
    if first:
        for c in range(oi.shape[0]):
            oi[c] = 0.0 + w * xj[c]
    else:
        for c in range(oi.shape[0]):
            oi[c] += w * xj[c]


@njit(cache=True)
def _shift_row(X, shifts, weights, out, i):
    n = X.shape[0]
    oi = out[i]
    if shifts.shape[0] == 0:
        oi[:] = 0.0
    for t in range(shifts.shape[0]):
        _axpy_row(oi, weights[t], X[(i + shifts[t]) % n], t == 0)


@njit(cache=True, parallel=True)
def _shift_mix(X, shifts, weights, out):
    for i in prange(X.shape[0]):
        _shift_row(X, shifts, weights, out, i)
    return out


@njit(cache=True)
def _shift_mix_serial(X, shifts, weights, out):
    for i in range(X.shape[0]):
        _shift_row(X, shifts, weights, out, i)
    return out


# Column slabs: each task mixes columns c0:c1 of every row, so the (n, block) slab of X it reads stays
# in cache for all the terms (a row-by-row pass re-reads each X row once per term from L3 or memory:
# 8.7 ms against 7.4 ms at n = 256, d = 20,000, 9 terms). Same terms in the same order, so the same bits.
_SLAB_FLOATS = 32768  # 256 KiB of float64 per slab
# Below 64 columns a slab reads each row of X in short strided pieces (at n = 4096 a 16-column slab
# reads X with an 80 KB stride): the row-parallel kernel is faster there (base_graph, n = 4096,
# d = 10^4: 1.5-3.9x the copy floor against 6.9-17x with slabs). Same terms, same order: same bits.
_MIN_SLAB = 64


def _col_block(n: int, d: int) -> int:
    return int(max(16, min(d, _SLAB_FLOATS // max(n, 1))))


def _use_slabs(block: int, d: int) -> bool:
    return block >= _MIN_SLAB and d >= 2 * block  # wide enough slabs, and enough of them for the threads


@njit(cache=True, parallel=True)
def _csr_mix_cols(indptr, indices, data, X, out, block):
    n, d = out.shape
    for b in prange((d + block - 1) // block):
        c0 = b * block
        c1 = min(d, c0 + block)
        for i in range(n):
            oi = out[i, c0:c1]
            if indptr[i] == indptr[i + 1]:
                oi[:] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                _axpy_row(oi, data[p], X[indices[p], c0:c1], p == indptr[i])
    return out


@njit(cache=True)
def _csr_row(indptr, indices, data, X, out, i):
    oi = out[i]
    if indptr[i] == indptr[i + 1]:
        oi[:] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        _axpy_row(oi, data[p], X[indices[p]], p == indptr[i])


@njit(cache=True, parallel=True)
def _csr_mix(indptr, indices, data, X, out):
    for i in prange(out.shape[0]):
        _csr_row(indptr, indices, data, X, out, i)
    return out


@njit(cache=True)
def _csr_mix_serial(indptr, indices, data, X, out):
    for i in range(out.shape[0]):
        _csr_row(indptr, indices, data, X, out, i)
    return out


def shift_mix(X: np.ndarray, shifts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Circulant mixing :math:`Y_i = \sum_t w_t X_{(i + h_t) \bmod n}`; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> shift_mix(np.arange(4.0)[:, None], np.array([0, 1]), np.array([0.5, 0.5])).ravel()
    array([0.5, 1.5, 2.5, 1.5])
    """
    X2 = X.reshape(X.shape[0], -1)
    n = X2.shape[0]
    out = np.empty_like(X2)
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    w = np.asarray(weights, dtype=np.float64).astype(X2.dtype)
    X2 = np.ascontiguousarray(X2)
    if X2.size < PARALLEL_MIN or sh.size == 0:
        return _shift_mix_serial(X2, sh, w, out).reshape(X.shape)
    block = _col_block(n, X2.shape[1])
    if _use_slabs(block, X2.shape[1]):
        # the circulant as CSR (row i: columns i + h_t in the listed order, so the same sum)
        m = sh.size
        indices = ((np.arange(n)[:, None] + sh[None, :]) % n).ravel()
        return _csr_mix_cols(np.arange(0, n * m + 1, m), indices, np.tile(w, n), X2, out, block).reshape(X.shape)
    return _shift_mix(X2, sh, w, out).reshape(X.shape)


def csr_mix(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Sparse mixing with a CSR ``W``; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> csr_mix(np.array([0, 2, 4]), np.array([0, 1, 0, 1]), np.full(4, 0.5), np.array([[0.0], [2.0]])).ravel()
    array([1., 1.])
    """
    X2 = np.ascontiguousarray(X.reshape(X.shape[0], -1))
    n = len(indptr) - 1
    out = np.empty((n, X2.shape[1]), dtype=X2.dtype)
    w = np.asarray(data, dtype=np.float64).astype(X2.dtype)
    args = (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), w, X2, out)
    block = _col_block(max(n, X2.shape[0]), X2.shape[1])
    if X2.size < PARALLEL_MIN:
        out = _csr_mix_serial(*args)
    elif _use_slabs(block, X2.shape[1]) and len(indices) > 2 * n:
        # slabs pay off where a row of X feeds several output rows from cache; with at most two terms a row
        # (a matching, a one-peer graph) whole rows stream faster (random matching, n = 256, d = 10^5:
        # 1.15x the copy floor against 1.77x with slabs)
        out = _csr_mix_cols(*args, block)
    else:
        out = _csr_mix(*args)
    return out.reshape((n,) + X.shape[1:])


@njit(cache=True)
def _node_shift_row(X, shifts, weights, out, i):
    n = X.shape[0]
    oi = out[i]
    if shifts.shape[0] == 0:
        oi[:] = 0.0
    for t in range(shifts.shape[0]):
        _axpy_row(oi, weights[t, i], X[(i + shifts[t]) % n], t == 0)


@njit(cache=True, parallel=True)
def _node_shift_mix(X, shifts, weights, out):
    for i in prange(X.shape[0]):
        _node_shift_row(X, shifts, weights, out, i)
    return out


@njit(cache=True)
def _node_shift_mix_serial(X, shifts, weights, out):
    for i in range(X.shape[0]):
        _node_shift_row(X, shifts, weights, out, i)
    return out


def node_shift_mix(X: np.ndarray, shifts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Shift-pattern mixing with per-node weights :math:`Y_i = \sum_t w_{t,i} X_{(i+h_t) \bmod n}`; see numpy.

    Examples
    --------
    >>> import numpy as np
    >>> node_shift_mix(np.arange(3.0), np.array([0, 1]), np.array([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0]]))
    array([0. , 1.5, 0. ])
    """
    X2 = np.ascontiguousarray(X.reshape(X.shape[0], -1))
    n = X2.shape[0]
    out = np.empty_like(X2)
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    w = np.ascontiguousarray(np.asarray(weights, dtype=np.float64).astype(X2.dtype)).reshape(sh.size, n)
    kernel = _node_shift_mix_serial if X2.size < PARALLEL_MIN else _node_shift_mix
    return kernel(X2, sh, w, out).reshape(X.shape)


@njit(cache=True)
def _edge_row(indptr, indices, eid, data, kept, X, out, i):
    oi, xi = out[i], X[i]
    deg = 0.0
    first = True
    for p in range(indptr[i], indptr[i + 1]):
        if kept[eid[p]]:
            deg += data[p]
            _axpy_row(oi, data[p], X[indices[p]], first)
            first = False
    if first:  # no kept edge: A_t x_i is the empty sum
        oi[:] = 0.0
    for c in range(oi.shape[0]):
        oi[c] = xi[c] + (oi[c] - deg * xi[c])


@njit(cache=True, parallel=True)
def _edge_mix(indptr, indices, eid, data, kept, X, out):
    for i in prange(X.shape[0]):
        _edge_row(indptr, indices, eid, data, kept, X, out, i)
    return out


@njit(cache=True)
def _edge_mix_serial(indptr, indices, eid, data, kept, X, out):
    for i in range(X.shape[0]):
        _edge_row(indptr, indices, eid, data, kept, X, out, i)
    return out


def edge_mix(indptr, indices, eid, data, kept, X, out=None):
    r"""Gossip over the kept edges only (row-parallel, no ``n x n`` array); see the numpy backend (same order).

    ``out`` (optional, C-contiguous, ``X``'s shape and dtype, not overlapping ``X``) receives the result.

    Examples
    --------
    >>> import numpy as np
    >>> ip, ix, e, w = np.array([0, 1, 2]), np.array([1, 0]), np.array([0, 0]), np.array([0.5, 0.5])
    >>> edge_mix(ip, ix, e, w, np.array([True]), np.array([[0.0], [2.0]])).ravel()
    array([1., 1.])
    """
    X2 = np.ascontiguousarray(X.reshape(X.shape[0], -1))
    res = np.empty_like(X2) if out is None else out.reshape(X2.shape)
    kernel = _edge_mix_serial if X2.size < PARALLEL_MIN else _edge_mix
    kernel(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), np.asarray(eid, dtype=np.int64),
           np.asarray(data, dtype=np.float64).astype(X2.dtype, copy=False), np.asarray(kept, dtype=np.bool_), X2, res)
    return res.reshape(X.shape) if out is None else out
