"""Error-feedback kernel, numpy reference: accumulate the memory and find each row's top-r set.

``ef_accumulate_topr(G, M, r)`` returns ``P = G + M`` (a new array), the indices of the ``r``
largest ``|P|`` of every row (ascending; ties to the lower index, the convention of
:mod:`simcomm.backends._numpy.select`) and the squared row norms of ``P``. The numba twin fuses the
three into one pass plus a candidate pass and must return the same indices.

``ef_send(P, idx, theta, lr)`` finishes the step once the sent coordinates are known: it reads the
messages out of ``P`` and zeroes them there (``P`` becomes the new memory ``p - C(p)``), sums the messages
on the server and takes the SGD step. The numba twin does the same arithmetic in one pass.
"""

from __future__ import annotations

import numpy as np

from simcomm.backends._numpy.select import topk_indices

__all__ = ["ef_accumulate_topr", "ef_send"]


def ef_accumulate_topr(G: np.ndarray, M: np.ndarray, r: int, out: np.ndarray | None = None):
    """``(P, top, sq)``: ``P = G + M``, top-r indices per row of ``P`` (ascending) and ``sum(P**2, axis=1)``.

    Parameters
    ----------
    G, M : numpy.ndarray of float64, shape (n, D)
        Gradients and memories.
    r : int
        ``1 <= r <= D``.
    out : numpy.ndarray, optional
        Receives ``P`` (same shape as ``G``; it may be ``G`` or ``M`` itself); a new array by default.

    Returns
    -------
    P : numpy.ndarray, shape (n, D)
    top : numpy.ndarray of int64, shape (n, r)
    sq : numpy.ndarray, shape (n,)

    Examples
    --------
    >>> P, top, sq = ef_accumulate_topr(np.array([[1.0, -3.0, 0.5]]), np.array([[0.0, 0.0, 2.0]]), 2)
    >>> top.tolist(), sq.tolist()
    ([[1, 2]], [16.25])
    """
    P = np.add(G, M, out=out)
    return P, topk_indices(P, int(r)), np.einsum("ij,ij->i", P, P)


def ef_send(P: np.ndarray, idx: np.ndarray, theta: np.ndarray, lr: float):
    """``(vals, upd, theta_new)`` for the sent coordinates ``idx``; ``P`` is updated in place.

    ``vals[i, j] = P[i, idx[i, j]]`` are the messages, and those entries of ``P`` are set to 0, so every
    coordinate of ``p_i`` ends up in exactly one of the message and the residual (``p_i = C(p_i) + m_i'``
    bit for bit). ``upd`` is the server's average of the sparse messages, summed in row-major order of
    ``idx`` (``np.bincount``), and ``theta_new = theta - lr * upd``.

    Parameters
    ----------
    P : numpy.ndarray of float64, shape (n, D)
        ``p_i = g_i + m_i`` per worker (overwritten with the new memories).
    idx : numpy.ndarray of int64, shape (n, k)
        Sent coordinates of every worker.
    theta : numpy.ndarray, shape (D,)
    lr : float

    Returns
    -------
    vals : numpy.ndarray, shape (n, k)
    upd : numpy.ndarray, shape (D,)
    theta_new : numpy.ndarray, shape (D,)

    Examples
    --------
    >>> P = np.array([[1.0, -3.0, 0.5], [2.0, 0.0, 4.0]])
    >>> vals, upd, th = ef_send(P, np.array([[1], [2]]), np.zeros(3), 0.5)
    >>> vals.ravel().tolist(), upd.tolist(), th.tolist(), P.tolist()
    ([-3.0, 4.0], [0.0, -1.5, 2.0], [0.0, 0.75, -1.0], [[1.0, 0.0, 0.5], [2.0, 0.0, 0.0]])
    """
    n, D = P.shape
    vals = np.take_along_axis(P, idx, axis=1)
    np.put_along_axis(P, idx, 0.0, axis=1)
    upd = np.bincount(idx.ravel(), weights=vals.ravel(), minlength=D)  # server: sum of sparse messages
    upd /= n
    step = np.multiply(upd, lr)  # theta - lr * upd, the same two roundings without two more (D,) temporaries
    return vals, upd, np.subtract(theta, step, out=step)
