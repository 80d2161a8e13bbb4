r"""Gossip kernels on the GPU: circulant mixing and CSR mixing, one pass each, numpy's values bit for bit.

Each output element accumulates its terms in the reference's order from zero, with no fused
multiply-add (:mod:`._src`), so the results equal :mod:`simcomm.backends._numpy.gossip` exactly.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import ROWS_PER_LAUNCH, as_rows, like_input, small_device
from simcomm.backends._cupy._src import TILE, kernel

__all__ = ["shift_mix", "csr_mix", "shift_mix_into", "csr_mix_into", "node_shift_mix", "edge_mix"]


def _grid(n: int, d: int) -> tuple[int, int]:
    """One block per (row, column tile); rows vary fastest so concurrent blocks share column tiles in L2."""
    return (n, max(1, min(-(-d // TILE), ROWS_PER_LAUNCH)))


def shift_mix_into(Xd, shifts, weights, out):
    """``out = sum_t w_t X[(i + h_t) mod n]`` for device arrays (``out`` must not alias ``Xd``)."""
    n = Xd.shape[0]
    d = Xd.size // max(n, 1)
    h = small_device(np.mod(cp.asnumpy(shifts), max(n, 1)), np.int64)
    w = small_device(weights, np.float64)
    if Xd.size:
        kernel("shift_mix", Xd.dtype)(_grid(n, d), (256,), (Xd, np.int64(n), np.int64(d), h, w, np.int32(h.size), out))
    return out


def csr_mix_into(indptr, indices, data, Xd, out):
    """``out = W X`` for a CSR ``W`` and device arrays (``out`` must not alias ``Xd``)."""
    ip, ix, dt = small_device(indptr, np.int64), small_device(indices, np.int64), small_device(data, np.float64)
    n = ip.size - 1
    d = Xd.size // max(Xd.shape[0], 1)
    if n and d:
        kernel("csr_mix", Xd.dtype)(_grid(n, d), (256,), (ip, ix, dt, Xd, np.int64(d), out))
    return out


def shift_mix(X, shifts, weights):
    r"""Circulant mixing :math:`Y_i = \sum_t w_t X_{(i + h_t) \bmod n}`, terms added in ``shifts`` order."""
    Xd = as_rows(X)
    return like_input(shift_mix_into(Xd, shifts, weights, cp.empty_like(Xd)), X)


def csr_mix(indptr, indices, data, X):
    r"""Sparse mixing :math:`Y = W X` with ``W`` given by CSR arrays (rows accumulated in index order)."""
    Xd = as_rows(X)
    n = len(indptr) - 1
    out = cp.empty((n,) + Xd.shape[1:], dtype=Xd.dtype)
    return like_input(csr_mix_into(indptr, indices, data, Xd, out), X)


def node_shift_mix(X, shifts, weights):
    r"""Shift-pattern mixing with per-node weights, :math:`Y_i = \sum_t w_{t,i} X_{(i+h_t) \bmod n}`.

    Array operations in the reference's order (a product, then an add, per term: no fused multiply-add),
    so device arrays give numpy's values bit for bit.
    """
    Xd = as_rows(X)
    n = Xd.shape[0]
    X2 = Xd.reshape(n, -1)
    Wd = cp.asarray(np.asarray(cp.asnumpy(weights) if isinstance(weights, cp.ndarray) else weights,
                               dtype=np.float64)).astype(X2.dtype)
    out = cp.zeros_like(X2)
    idx = cp.arange(n)
    for t, h in enumerate(np.mod(np.asarray(cp.asnumpy(shifts), dtype=np.int64), max(n, 1)).tolist()):
        out += Wd[t][:, None] * X2[(idx + h) % n]
    return like_input(out.reshape(Xd.shape), X)


def edge_mix(indptr, indices, eid, data, kept, X, out=None):
    r"""Gossip over the kept edges only, :math:`X + (A_t X - \deg_t X)` (see the numpy backend, same order)."""
    Xd = as_rows(X)
    d_t = cp.where(cp.asarray(kept, dtype=cp.bool_)[cp.asarray(eid)], cp.asarray(data, dtype=Xd.dtype), 0.0)
    n = len(indptr) - 1
    M = csr_mix_into(indptr, indices, d_t, Xd, cp.empty_like(Xd))
    deg = csr_mix_into(indptr, indices, d_t, cp.ones((n, 1), dtype=Xd.dtype), cp.empty((n, 1), dtype=Xd.dtype))
    M -= deg * Xd
    if out is not None:
        return cp.add(Xd, M, out=out)
    return like_input(Xd + M, X)
