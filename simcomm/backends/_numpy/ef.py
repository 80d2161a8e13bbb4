"""Error-feedback kernel, numpy reference: accumulate the memory and find each row's top-r set.

``ef_accumulate_topr(G, M, r)`` returns ``P = G + M`` (a new array), the indices of the ``r``
largest ``|P|`` of every row (ascending; ties to the lower index, the convention of
:mod:`simcomm.backends._numpy.select`) and the squared row norms of ``P``. The numba twin fuses the
three into one pass plus a candidate pass and must return the same indices.
"""

from __future__ import annotations

import numpy as np

from simcomm.backends._numpy.select import topk_indices

__all__ = ["ef_accumulate_topr"]


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
