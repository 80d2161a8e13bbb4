r"""Decentralized SGD kernels, numba: one fused ATC momentum step, column-blocked.

Same names, signatures and arithmetic (operation order, summation order) as the numpy backend.
Each parallel task owns a block of columns for ALL nodes: it adapts the block into a small scratch
array (cache-resident) and combines from there, so a step reads ``X, M, G`` once and writes
``M, out`` once, which is the memory traffic a step must have (see the benchmark).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from simcomm.backends._numba.gossip import _axpy_row, _col_block

__all__ = ["atc_shift_step", "atc_csr_step", "pushsum_shift_step", "choco_shift_step", "gt_shift_step",
           "choco_sparse_step", "choco_diff"]

def _scratch(n: int, block: int, dtype) -> np.ndarray:
    # one (n, block) slab per thread; get_thread_id() is 0 in the serial build
    return np.empty((numba.get_num_threads(), n, block), dtype=dtype)


@njit(cache=True, inline="always")
def _adapt_block(X, M, G, lr, beta, c0, c1, Y):
    """Columns c0:c1 of every node: m <- beta m + g (in place), y <- x - lr m into the scratch Y."""
    for i in range(X.shape[0]):
        # 1-D contiguous views let LLVM vectorise the loops (2-D indexing did not)
        xi, mi, gi, yi = X[i, c0:c1], M[i, c0:c1], G[i, c0:c1], Y[i]
        for c in range(c1 - c0):
            mm = beta * mi[c] + gi[c]
            mi[c] = mm
            yi[c] = xi[c] - lr * mm


@njit(cache=True, inline="always")
def _adapted_slab(X, M, G, lr, beta, block, scratch, b):
    """Columns ``c0:c1`` of slab ``b``, adapted into this thread's scratch ``Y``: ``(c0, c1, Y)``."""
    c0 = b * block
    c1 = min(X.shape[1], c0 + block)
    # per-thread scratch allocated once by the caller: a fresh 256 KiB array per block would be
    # an mmap + page faults every time
    Y = scratch[numba.get_thread_id()]
    _adapt_block(X, M, G, lr, beta, c0, c1, Y)
    return c0, c1, Y


# The combine is the gossip kernels' row update (_axpy_row: first term written as 0.0 + w y, then
# accumulated in the listed order), applied to the cache-resident adapted slab instead of X.
@njit(cache=True, inline="always")
def _shift_slab(src, s0, shifts, weights, out, c0, c1):
    """``out[i, c0:c1] = sum_t w_t src[(i + shift_t) % n, s0:s0 + c1 - c0]``, from 0.0 in the listed order."""
    n = out.shape[0]
    for i in range(n):
        oi = out[i, c0:c1]
        for t in range(shifts.shape[0]):
            _axpy_row(oi, weights[t], src[(i + shifts[t]) % n, s0 : s0 + c1 - c0], t == 0)


# The same sums with up to four terms per pass over an output row: o = (((o + w0 a) + w1 b) + w2 c) + w3 e is
# the term-by-term sum (the same roundings in the same order, no fused multiply-add), but it loads and
# stores o once per four terms instead of once per term, and starts one loop per four (a 9-term slab
# mix took 0.66x the time at n = 256).
@njit(cache=True, inline="always")
def _terms_row(oi, src, s0, m, rows, w, t0, nt, first):
    """``oi[:m] (+)= sum_{t0 <= t < t0 + nt} w[t] src[rows[t], s0:s0 + m]``, ``nt`` in 1..4, left to right."""
    a, wa = src[rows[t0], s0:s0 + m], w[t0]
    if nt == 1:
        if first:
            for c in range(m):
                oi[c] = 0.0 + wa * a[c]
        else:
            for c in range(m):
                oi[c] += wa * a[c]
        return
    b, wb = src[rows[t0 + 1], s0:s0 + m], w[t0 + 1]
    if nt == 2:
        if first:
            for c in range(m):
                oi[c] = (0.0 + wa * a[c]) + wb * b[c]
        else:
            for c in range(m):
                oi[c] = (oi[c] + wa * a[c]) + wb * b[c]
        return
    e, we = src[rows[t0 + 2], s0:s0 + m], w[t0 + 2]
    if nt == 3:
        if first:
            for c in range(m):
                oi[c] = ((0.0 + wa * a[c]) + wb * b[c]) + we * e[c]
        else:
            for c in range(m):
                oi[c] = ((oi[c] + wa * a[c]) + wb * b[c]) + we * e[c]
        return
    f, wf = src[rows[t0 + 3], s0:s0 + m], w[t0 + 3]
    if first:
        for c in range(m):
            oi[c] = (((0.0 + wa * a[c]) + wb * b[c]) + we * e[c]) + wf * f[c]
    else:
        for c in range(m):
            oi[c] = (((oi[c] + wa * a[c]) + wb * b[c]) + we * e[c]) + wf * f[c]


@njit(cache=True, inline="always")
def _mix_row(oi, src, s0, m, rows, w):
    """``oi[:m] = sum_t w[t] src[rows[t], s0:s0 + m]`` from 0.0 in the listed order (``_shift_slab``'s values)."""
    T = rows.shape[0]
    t0 = 0
    while t0 < T:
        nt = min(4, T - t0)
        _terms_row(oi, src, s0, m, rows, w, t0, nt, t0 == 0)
        t0 += nt


@njit(cache=True, inline="always")
def _shift_slab4(src, s0, shifts, weights, out, c0, c1, rows):
    """:func:`_shift_slab` four terms per pass (``rows``: an int64 scratch of ``len(shifts)``); the same bits."""
    n = out.shape[0]
    for i in range(n):
        for t in range(shifts.shape[0]):
            rows[t] = (i + shifts[t]) % n
        _mix_row(out[i, c0:c1], src, s0, c1 - c0, rows, weights)


@njit(cache=True, inline="always")
def _shift_block(X, M, G, lr, beta, shifts, weights, out, block, scratch, b):
    c0, c1, Y = _adapted_slab(X, M, G, lr, beta, block, scratch, b)
    _shift_slab(Y, 0, shifts, weights, out, c0, c1)


@njit(cache=True, inline="always")
def _csr_block(X, M, G, lr, beta, indptr, indices, data, out, block, scratch, b):
    c0, c1, Y = _adapted_slab(X, M, G, lr, beta, block, scratch, b)
    for i in range(X.shape[0]):
        oi = out[i, c0:c1]
        if indptr[i] == indptr[i + 1]:  # a node with no in-neighbour (not doubly stochastic, but defined)
            oi[:] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            _axpy_row(oi, data[p], Y[indices[p], : c1 - c0], p == indptr[i])


# Threads only pay off on large steps (thread start-up costs ~100 us, far more than a small step), so
# each step has a threaded and a serial driver around the same block body: identical arithmetic.
# They must be two module-level functions: numba's on-disk cache keys entries by function name and
# signature, not by the parallel flag, so one body compiled twice made the threaded driver load the
# serial machine code (half the speed) or the reverse (a segfault).
@njit(cache=True, parallel=True)
def _atc_shift_par(X, M, G, lr, beta, shifts, weights, out, block, scratch):
    for b in prange((X.shape[1] + block - 1) // block):
        _shift_block(X, M, G, lr, beta, shifts, weights, out, block, scratch, b)
    return out


@njit(cache=True)
def _atc_shift_ser(X, M, G, lr, beta, shifts, weights, out, block, scratch):
    for b in range((X.shape[1] + block - 1) // block):
        _shift_block(X, M, G, lr, beta, shifts, weights, out, block, scratch, b)
    return out


@njit(cache=True, parallel=True)
def _atc_csr_par(X, M, G, lr, beta, indptr, indices, data, out, block, scratch):
    for b in prange((X.shape[1] + block - 1) // block):
        _csr_block(X, M, G, lr, beta, indptr, indices, data, out, block, scratch, b)
    return out


@njit(cache=True)
def _atc_csr_ser(X, M, G, lr, beta, indptr, indices, data, out, block, scratch):
    for b in range((X.shape[1] + block - 1) // block):
        _csr_block(X, M, G, lr, beta, indptr, indices, data, out, block, scratch, b)
    return out


# Push-sum: the same column slabs; the adapt is y = x - lr g (no momentum), the combine has per-node weights.
@njit(cache=True, inline="always")
def _pushsum_block(X, G, lr, shifts, weights, out, block, scratch, b):
    n = X.shape[0]
    c0 = b * block
    c1 = min(X.shape[1], c0 + block)
    Y = scratch[numba.get_thread_id()]
    for i in range(n):
        xi, gi, yi = X[i, c0:c1], G[i, c0:c1], Y[i]
        for c in range(c1 - c0):
            yi[c] = xi[c] - lr * gi[c]
    rows = np.empty(shifts.shape[0], np.int64)
    wi = np.empty(shifts.shape[0], weights.dtype)
    for i in range(n):
        for t in range(shifts.shape[0]):
            rows[t] = (i + shifts[t]) % n
            wi[t] = weights[t, i]
        _mix_row(out[i, c0:c1], Y, 0, c1 - c0, rows, wi)


@njit(cache=True, parallel=True)
def _pushsum_par(X, G, lr, shifts, weights, out, block, scratch):
    for b in prange((X.shape[1] + block - 1) // block):
        _pushsum_block(X, G, lr, shifts, weights, out, block, scratch, b)
    return out


@njit(cache=True)
def _pushsum_ser(X, G, lr, shifts, weights, out, block, scratch):
    for b in range((X.shape[1] + block - 1) // block):
        _pushsum_block(X, G, lr, shifts, weights, out, block, scratch, b)
    return out


_PARALLEL_MIN = 1 << 18  # elements n*d from which the threaded kernel is used


def atc_shift_step(X, M, G, lr, beta, shifts, weights, out):
    r"""ATC momentum step with a 1-D circulant ``W``; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> X, M, G = np.arange(4.0)[:, None], np.zeros((4, 1)), np.ones((4, 1))
    >>> atc_shift_step(X, M, G, 0.5, 0.0, np.array([0, 1]), np.array([0.5, 0.5]), np.empty((4, 1))).ravel()
    array([0., 1., 2., 1.])
    """
    n, d = X.shape
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    w = np.asarray(weights, dtype=np.float64).astype(X.dtype)
    if sh.size == 0:  # no term at all: the empty sum, as in the numpy backend (M is still updated)
        M *= beta
        M += G
        out[...] = 0.0
        return out
    kernel = _atc_shift_par if n * d >= _PARALLEL_MIN else _atc_shift_ser
    blk = _col_block(n, d)  # a (n, blk) slab is 256 KiB of float64, about an L2 cache
    return kernel(X, M, G, X.dtype.type(lr), X.dtype.type(beta), sh, w, out, blk, _scratch(n, blk, X.dtype))


def atc_csr_step(X, M, G, lr, beta, indptr, indices, data, out):
    r"""ATC momentum step with a CSR ``W``; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> X, M, G = np.array([[0.0], [2.0]]), np.zeros((2, 1)), np.ones((2, 1))
    >>> atc_csr_step(X, M, G, 1.0, 0.0, np.array([0, 2, 4]), np.array([0, 1, 0, 1]), np.full(4, 0.5),
    ...              np.empty((2, 1))).ravel()
    array([0., 0.])
    """
    n, d = X.shape
    w = np.asarray(data, dtype=np.float64).astype(X.dtype)
    kernel = _atc_csr_par if n * d >= _PARALLEL_MIN else _atc_csr_ser
    blk = _col_block(n, d)  # a (n, blk) slab is 256 KiB of float64, about an L2 cache
    return kernel(X, M, G, X.dtype.type(lr), X.dtype.type(beta), np.asarray(indptr, dtype=np.int64),
                    np.asarray(indices, dtype=np.int64), w, out, blk, _scratch(n, blk, X.dtype))


def pushsum_shift_step(X, w, G, lr, shifts, weights, out, wout):
    r"""Push-sum SGD step on a shift pattern with per-node weights; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> x, wt = pushsum_shift_step(np.array([[0.0], [4.0]]), np.ones(2), np.zeros((2, 1)), 0.1,
    ...                            np.array([0, 1]), W, np.empty((2, 1)), np.empty(2))
    >>> x.ravel(), wt
    (array([2., 2.]), array([1., 1.]))
    """
    from simcomm.backends._numba.gossip import node_shift_mix

    n, d = X.shape
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    W2 = np.ascontiguousarray(np.asarray(weights, dtype=np.float64).astype(X.dtype)).reshape(sh.size, n)
    if sh.size == 0:
        out[...] = 0.0
        wout[...] = 0.0
        return out, wout
    kernel = _pushsum_par if n * d >= _PARALLEL_MIN else _pushsum_ser
    # 1 MiB slabs, at least 8 of them: longer runs of each row (512 columns measured 0.83x the time of 128
    # at n = 256, d = 10^5); the sums are the same
    blk = max(_col_block(n, d), min((_SPARSE_SLAB_FLOATS // 2) // max(n, 1), d // 8))
    kernel(X, G, X.dtype.type(lr), sh, W2, out, blk, _scratch(n, blk, X.dtype))
    wout[...] = node_shift_mix(np.asarray(w, dtype=X.dtype), sh, W2)
    return out, wout


# CHOCO: per column slab, first the public copies of every node (xhat += q), then the consensus step from
# the cache-resident slab; the sum from 0.0 in the shifts' order, then xh + gamma (sum - xhat): numpy's order.
@njit(cache=True, inline="always")
def _choco_block(Xh, Xhat, Q, gamma, shifts, weights, out, block, b):
    n = Xh.shape[0]
    c0 = b * block
    c1 = min(Xh.shape[1], c0 + block)
    for i in range(n):
        hi, qi = Xhat[i, c0:c1], Q[i, c0:c1]
        for c in range(c1 - c0):
            hi[c] += qi[c]
    _shift_slab4(Xhat, c0, shifts, weights, out, c0, c1, np.empty(shifts.shape[0], np.int64))
    for i in range(n):
        oi, xi, hi = out[i, c0:c1], Xh[i, c0:c1], Xhat[i, c0:c1]
        for c in range(c1 - c0):
            oi[c] = xi[c] + gamma * (oi[c] - hi[c])


@njit(cache=True, parallel=True)
def _choco_par(Xh, Xhat, Q, gamma, shifts, weights, out, block):
    for b in prange((Xh.shape[1] + block - 1) // block):
        _choco_block(Xh, Xhat, Q, gamma, shifts, weights, out, block, b)
    return out


@njit(cache=True)
def _choco_ser(Xh, Xhat, Q, gamma, shifts, weights, out, block):
    for b in range((Xh.shape[1] + block - 1) // block):
        _choco_block(Xh, Xhat, Q, gamma, shifts, weights, out, block, b)
    return out


def choco_shift_step(Xh, Xhat, Q, gamma, shifts, weights, out):
    r"""CHOCO public-copy update and consensus step with a 1-D circulant ``W``; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> Xhat = np.zeros((2, 1))
    >>> choco_shift_step(np.array([[0.0], [4.0]]), Xhat, np.array([[0.0], [4.0]]), 0.5, np.array([0, 1]),
    ...                  np.array([0.5, 0.5]), np.empty((2, 1))).ravel(), Xhat.ravel()
    (array([1., 3.]), array([0., 4.]))
    """
    n, d = Xh.shape
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    w = np.asarray(weights, dtype=np.float64).astype(Xh.dtype)
    if sh.size == 0:  # the empty sum: x = xh - gamma xhat, as in numpy
        Xhat += Q
        np.subtract(Xh, Xh.dtype.type(gamma) * Xhat, out=out)
        return out
    kernel = _choco_par if n * d >= _PARALLEL_MIN else _choco_ser
    return kernel(Xh, Xhat, Q, Xh.dtype.type(gamma), sh, w, out, _col_block(n, d))


# Gradient tracking: per column slab, the tracker's argument for every node into the scratch, the new
# trackers from it, then (reusing the scratch) x - lr y_new for every node and the new iterates: X, Y, G,
# G_prev read once, both outputs written once. Same terms and order as the numpy reference.
@njit(cache=True, inline="always")
def _gt_block(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout, block, scratch, b):
    n = X.shape[0]
    c0 = b * block
    c1 = min(X.shape[1], c0 + block)
    T = scratch[numba.get_thread_id()]
    copy = gout.shape[0] > 0
    for i in range(n):
        yi, gi, pi, ti = Y[i, c0:c1], G[i, c0:c1], Gp[i, c0:c1], T[i]
        if copy:  # the gradients kept for the next step, written while G's slab is read anyway
            oi = gout[i, c0:c1]
            for c in range(c1 - c0):
                g = gi[c]
                oi[c] = g
                ti[c] = (yi[c] + g) - pi[c]
        else:
            for c in range(c1 - c0):
                ti[c] = (yi[c] + gi[c]) - pi[c]
    rows = np.empty(shifts.shape[0], np.int64)
    _shift_slab4(T, 0, shifts, weights, yout, c0, c1, rows)
    for i in range(n):
        xi, oi, ti = X[i, c0:c1], yout[i, c0:c1], T[i]
        for c in range(c1 - c0):
            ti[c] = xi[c] - lr * oi[c]
    _shift_slab4(T, 0, shifts, weights, xout, c0, c1, rows)


@njit(cache=True, parallel=True)
def _gt_par(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout, block, scratch):
    for b in prange((X.shape[1] + block - 1) // block):
        _gt_block(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout, block, scratch, b)
    return xout


@njit(cache=True)
def _gt_ser(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout, block, scratch):
    for b in range((X.shape[1] + block - 1) // block):
        _gt_block(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout, block, scratch, b)
    return xout


def gt_shift_step(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout=None):
    r"""One ATC gradient-tracking step with a 1-D circulant ``W``, column slabs; see the numpy backend.

    ``gout`` (optional) receives a copy of ``G`` in the same pass (no second read of ``G``).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros((2, 1))
    >>> x, y = gt_shift_step(z, z, np.array([[2.0], [0.0]]), z, 1.0, np.array([0, 1]), np.array([0.5, 0.5]),
    ...                      np.empty((2, 1)), np.empty((2, 1)))
    >>> x.ravel(), y.ravel()
    (array([-1., -1.]), array([1., 1.]))
    """
    from simcomm.backends._numpy.dsgd import gt_shift_step as reference

    n, d = X.shape
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    if sh.size == 0:
        return reference(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout)
    w = np.asarray(weights, dtype=np.float64).astype(X.dtype)
    kernel = _gt_par if n * d >= _PARALLEL_MIN else _gt_ser
    # 2 MiB slabs (8 KiB of each row at n = 256), at least 8 of them: the slab's rows are read as longer
    # runs (1024 columns measured 0.75x the time of 128 at n = 256, d = 10^5); the sums are the same
    blk = max(_col_block(n, d), min(_SPARSE_SLAB_FLOATS // max(n, 1), d // 8))
    g = np.empty((0, d), X.dtype) if gout is None else gout
    kernel(X, Y, G, Gp, X.dtype.type(lr), sh, w, xout, yout, g, blk, _scratch(n, blk, X.dtype))
    return xout, yout


# CHOCO from a sparse message: per column slab, the new public copies (xhat + 0.0, then xhat + v on the sent
# coordinates of the slab: the dense top-k's sum, +0.0 off the message), their mix from the cache-resident
# slab, then (x - lr g) + gamma (mix - xhat'): X, G, Xhat read once, the two outputs written once.
@njit(cache=True, inline="always")
def _choco_sparse_block(X, G, lr, Xhat, idx, vals, starts, gamma, shifts, weights, hat_out, out, block, b):
    n = X.shape[0]
    c0 = b * block
    c1 = min(X.shape[1], c0 + block)
    for i in range(n):
        hi, ho = Xhat[i, c0:c1], hat_out[i, c0:c1]
        for c in range(c1 - c0):
            ho[c] = hi[c] + 0.0
        ri, vi = idx[i], vals[i]
        for p in range(starts[i, b], starts[i, b + 1]):  # the message's entries in columns c0:c1
            ho[ri[p] - c0] = hi[ri[p] - c0] + vi[p]
    _shift_slab4(hat_out, c0, shifts, weights, out, c0, c1, np.empty(shifts.shape[0], np.int64))
    has_g = G.shape[0] > 0
    for i in range(n):
        oi, xi, ho = out[i, c0:c1], X[i, c0:c1], hat_out[i, c0:c1]
        if has_g:
            gi = G[i, c0:c1]
            for c in range(c1 - c0):
                oi[c] = (xi[c] - lr * gi[c]) + gamma * (oi[c] - ho[c])
        else:
            for c in range(c1 - c0):
                oi[c] = xi[c] + gamma * (oi[c] - ho[c])


@njit(cache=True, parallel=True)
def _choco_sparse_par(X, G, lr, Xhat, idx, vals, starts, gamma, shifts, weights, hat_out, out, block):
    for b in prange((X.shape[1] + block - 1) // block):
        _choco_sparse_block(X, G, lr, Xhat, idx, vals, starts, gamma, shifts, weights, hat_out, out, block, b)
    return out


@njit(cache=True)
def _choco_sparse_ser(X, G, lr, Xhat, idx, vals, starts, gamma, shifts, weights, hat_out, out, block):
    for b in range((X.shape[1] + block - 1) // block):
        _choco_sparse_block(X, G, lr, Xhat, idx, vals, starts, gamma, shifts, weights, hat_out, out, block, b)
    return out


def choco_sparse_step(X, G, lr, Xhat, idx, vals, gamma, shifts, weights, hat_out, out):
    r"""CHOCO's step from a sparse message with a 1-D circulant ``W``, column slabs; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> x, h = choco_sparse_step(np.array([[0.0, 1.0], [4.0, 0.0]]), None, 0.0, np.zeros((2, 2)),
    ...                          np.array([[1], [0]]), np.array([[1.0], [4.0]]), 0.5, np.array([0, 1]),
    ...                          np.array([0.5, 0.5]), np.empty((2, 2)), np.empty((2, 2)))
    >>> x.tolist(), h.tolist()
    ([[1.0, 0.75], [3.0, 0.25]], [[0.0, 1.0], [4.0, 0.0]])
    """
    from simcomm.backends._numpy.dsgd import choco_sparse_step as reference

    n, d = X.shape
    sh = np.mod(np.asarray(shifts, dtype=np.int64), n)
    if sh.size == 0:
        return reference(X, G, lr, Xhat, idx, vals, gamma, shifts, weights, hat_out, out)
    w = np.asarray(weights, dtype=np.float64).astype(X.dtype)
    g = np.empty((0, d), X.dtype) if G is None else G
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    # wider slabs than the other steps' (the per-row work of a slab is short: 2 MiB slabs measured 0.8x the
    # time of 256 KiB ones at n = 256, d = 10^5); starts[i, b]: the first entry of row i in slab b
    block = int(min(d, max(_col_block(n, d), _SPARSE_SLAB_FLOATS // max(n, 1))))
    nb = (d + block - 1) // block
    starts = np.zeros((n, nb + 1), dtype=np.int64)
    if idx.size:
        np.cumsum(_slab_counts(idx, block, n, nb), axis=1, out=starts[:, 1:])
    kernel = _choco_sparse_par if n * d >= _PARALLEL_MIN else _choco_sparse_ser
    kernel(X, g, X.dtype.type(lr), Xhat, idx, np.asarray(vals, dtype=X.dtype), starts, X.dtype.type(gamma), sh, w,
           hat_out, out, block)
    return out, hat_out


_SPARSE_SLAB_FLOATS = 1 << 18


def _slab_counts(idx, block, n, nb):
    """``(n, nb)``: how many of every row's indices fall in each slab of ``block`` columns."""
    flat = (np.arange(n, dtype=np.int64)[:, None] * nb + idx // block).ravel()
    return np.bincount(flat, minlength=n * nb).reshape(n, nb)



@njit(cache=True, inline="always")
def _choco_diff_row(X, G, lr, Xhat, r0, out, i):
    oi, xi, hi = out[i], X[r0 + i], Xhat[r0 + i]
    if G.shape[0] > 0:
        gi = G[r0 + i]
        for c in range(oi.shape[0]):
            oi[c] = (xi[c] - lr * gi[c]) - hi[c]
    else:
        for c in range(oi.shape[0]):
            oi[c] = xi[c] - hi[c]


@njit(cache=True, parallel=True)
def _choco_diff_par(X, G, lr, Xhat, r0, out):
    for i in prange(out.shape[0]):
        _choco_diff_row(X, G, lr, Xhat, r0, out, i)
    return out


@njit(cache=True)
def _choco_diff_ser(X, G, lr, Xhat, r0, out):
    for i in range(out.shape[0]):
        _choco_diff_row(X, G, lr, Xhat, r0, out, i)
    return out


def choco_diff(X, G, lr, Xhat, r0, out):
    r"""Rows ``r0:r0 + m`` of CHOCO's difference ``(x - lr g) - xhat`` in one pass; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> choco_diff(np.ones((3, 2)), np.ones((3, 2)), 0.5, np.zeros((3, 2)), 1, np.empty((2, 2))).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    g = np.empty((0, X.shape[1]), X.dtype) if G is None else G
    kernel = _choco_diff_par if out.size >= _PARALLEL_MIN and out.shape[0] > 1 else _choco_diff_ser
    return kernel(X, g, X.dtype.type(lr), Xhat, int(r0), out)
