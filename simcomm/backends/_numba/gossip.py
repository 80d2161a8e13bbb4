r"""Gossip (mixing) kernels, numba: same names, signatures and summation order as the numpy backend."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["shift_mix", "csr_mix"]

# Below this many entries (n * d) the serial kernel is used: starting the parallel threads costs
# tens of microseconds, more than the work itself (small simulations call the kernel every step).
PARALLEL_MIN = 1 << 15


@njit(cache=True)
def _shift_row(X, shifts, weights, out, i):
    n, d = X.shape
    for c in range(d):
        out[i, c] = 0.0
    for t in range(shifts.shape[0]):
        j = (i + shifts[t]) % n
        w = weights[t]
        for c in range(d):
            out[i, c] += w * X[j, c]


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


@njit(cache=True)
def _csr_row(indptr, indices, data, X, out, i):
    d = out.shape[1]
    for c in range(d):
        out[i, c] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        w = data[p]
        for c in range(d):
            out[i, c] += w * X[j, c]


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
    if X2.size < PARALLEL_MIN:
        return _shift_mix_serial(X2, sh, w, out).reshape(X.shape)
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
    kernel = _csr_mix if X2.size >= PARALLEL_MIN else _csr_mix_serial
    return kernel(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), w, X2, out).reshape((n,) + X.shape[1:])
