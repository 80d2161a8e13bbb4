r"""A whole DmSGD run on least squares in one compiled loop (numba): many small steps without Python between them.

:func:`simcomm.optim.run_dsgd` on a small problem (``n d`` of a few thousand: the transient and
heterogeneity-floor experiments) spends most of a step in Python: the gradient, the noise, the step
kernel and the four measurements are separate calls of a few microseconds each. This kernel runs a
chunk of steps of the same algorithm (module doc of :mod:`simcomm.optim._blocks_dsgd`) in one call:
exact least-squares gradients, the node noise drawn beforehand from the same streams, the ATC momentum
step with every layer of the topology given as rows of weighted neighbours, and the measurements at the
recorded steps, with the divergence rule of :mod:`simcomm.optim._driver`. The arithmetic is the
per-step path's up to the summation order of the gradient's dot products (BLAS in the per-step path):
``tests/test_dsgd_fused.py`` checks the two agree to rounding.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ls_dsgd_chunk", "layer_rows"]


def layer_rows(plans, n: int):
    """The layers' neighbour rows as ``(rowptr (P, n + 1), cols, weights, is_mean (P,))``.

    A shift layer's row ``i`` lists ``(i + shift_t) % n`` in the order of its terms and a CSR layer its
    row as stored, so each output row is accumulated in the order the per-step kernels use; a
    ``mean`` layer (W = J) has no rows and is flagged.

    Examples
    --------
    >>> ptr, cols, w, mean = layer_rows([("shift", np.array([0, 1]), np.array([0.5, 0.5]))], 3)
    >>> ptr.tolist(), cols.tolist(), mean.tolist()
    ([[0, 2, 4, 6]], [0, 1, 1, 2, 2, 0], [False])
    """
    P = len(plans)
    rowptr = np.zeros((P, n + 1), np.int64)
    cols, wts, mean = [], [], np.zeros(P, np.bool_)
    pos = 0
    for p, plan in enumerate(plans):
        if plan[0] == "mean":
            mean[p] = True
            rowptr[p] = pos
            continue
        if plan[0] == "shift":
            sh = np.mod(np.asarray(plan[1], np.int64), n)
            c = (np.arange(n)[:, None] + sh[None, :]) % n
            w = np.broadcast_to(np.asarray(plan[2], np.float64), c.shape)
            counts = np.full(n, sh.size)
        else:  # csr
            indptr = np.asarray(plan[1], np.int64)
            c, w, counts = np.asarray(plan[2], np.int64), np.asarray(plan[3], np.float64), np.diff(indptr)
        rowptr[p] = pos + np.r_[0, np.cumsum(counts)]
        cols.append(np.ravel(c))
        wts.append(np.ravel(w))
        pos = int(rowptr[p, -1])
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    wts = np.concatenate(wts) if wts else np.zeros(0)
    return rowptr, cols.astype(np.int64), wts.astype(np.float64), mean


@njit(cache=True)
def _measure(H, x_star, X, out, e):
    """consensus, ||grad f(xbar)||^2, mean_i ||grad f(x_i)||^2, f(xbar) - f* into ``out`` (no allocation)."""
    n, d = X.shape
    for c in range(d):
        acc = 0.0
        for i in range(n):
            acc += X[i, c]
        e[c] = acc / n
    cons = 0.0
    for i in range(n):
        for c in range(d):
            t = X[i, c] - e[c]
            cons += t * t
    for c in range(d):
        e[c] -= x_star[c]
    g2 = 0.0
    sub = 0.0
    for a in range(d):  # grad f(xbar) = H e; f(xbar) - f* = e^T H e / 2
        acc = 0.0
        for c in range(d):
            acc += H[a, c] * e[c]
        g2 += acc * acc
        sub += acc * e[a]
    node = 0.0
    for i in range(n):  # grad f(x_i) = H (x_i - x*)
        for a in range(d):
            acc = 0.0
            for c in range(d):
                acc += H[a, c] * (X[i, c] - x_star[c])
            node += acc * acc
    out[0] = cons / n
    out[1] = g2
    out[2] = node / n
    out[3] = 0.5 * sub


@njit(cache=True)
def ls_dsgd_chunk(A, y, H, x_star, X, M, Y, G, noise, sigma, lrs, beta, k_start, count,
                  rowptr, cols, wts, is_mean, rec_index, vals, lim0, lim1):
    """Updates ``k_start .. k_start + count - 1`` in place on ``X, M``; returns the step it diverged at, or -1.

    ``noise[s]`` is the noise of update ``k_start + s``; ``lrs[k]`` the step of update ``k``;
    ``rec_index[k]`` the record slot of step ``k`` (-1: not recorded), filled into ``vals[slot]``
    (consensus, grad_norm_sq, node_grad_norm_sq, subopt) after the update that reaches ``k``.
    """
    n, m, q = A.shape
    P = is_mean.shape[0]
    v = np.empty(4)
    e = np.empty(q)
    res = np.empty(m)
    for s in range(count):
        k = k_start + s
        for i in range(n):  # exact gradients, plus the node's noise
            for r in range(m):
                acc = 0.0
                for c in range(q):
                    acc += A[i, r, c] * X[i, c]
                res[r] = acc - y[i, r]
            for c in range(q):
                acc = 0.0
                for r in range(m):
                    acc += A[i, r, c] * res[r]
                G[i, c] = acc / m
            if sigma > 0.0:
                for c in range(q):
                    G[i, c] += sigma * noise[s, i, c]
        lr = lrs[k]
        for i in range(n):  # adapt
            for c in range(q):
                mm = beta * M[i, c] + G[i, c]
                M[i, c] = mm
                Y[i, c] = X[i, c] - lr * mm
        p = k % P
        if is_mean[p]:  # combine
            for c in range(q):
                acc = 0.0
                for j in range(n):
                    acc += Y[j, c]
                acc /= n
                for i in range(n):
                    X[i, c] = acc
        else:
            for i in range(n):
                for c in range(q):
                    X[i, c] = 0.0
                for t in range(rowptr[p, i], rowptr[p, i + 1]):
                    w, j = wts[t], cols[t]
                    for c in range(q):
                        X[i, c] += w * Y[j, c]
        slot = rec_index[k + 1]
        if slot >= 0:
            _measure(H, x_star, X, v, e)
            bad = v[0] > lim0 or v[1] > lim1
            for t in range(4):
                bad = bad or not np.isfinite(v[t])
            if bad:
                return k + 1
            vals[slot, :] = v
    return -1
