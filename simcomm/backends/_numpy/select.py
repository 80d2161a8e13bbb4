"""Selection kernels, numpy reference: top-k by magnitude, Floyd's k-subset, rTop-k.

All kernels work on 2-D arrays, one problem per row, and return ``int64`` index arrays. Randomness
enters only as uniforms ``u`` in ``[0, 1)`` drawn by the caller, so every backend returns the same
indices on the same ``u``.

Conventions shared by every backend (the numba twin must match them exactly):

* ``topk_indices`` keeps the ``k`` largest ``|x|``; ties are broken by the LOWER index; the indices
  of each row come back in ascending order.
* ``floyd_sample`` is Floyd's algorithm: step ``i`` (``j = d - k + i``) draws
  ``t = min(floor(u[i] * (j + 1)), j)`` and takes ``j`` instead of ``t`` if ``t`` was already taken.
  The indices come back in the order they were drawn.
"""

from __future__ import annotations

import numpy as np

__all__ = ["topk_indices", "topk_select", "floyd_sample", "rtopk_indices"]


def topk_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``|x|`` of each row, ascending; ties go to the lower index.

    Parameters
    ----------
    x : numpy.ndarray, shape (m, d)
        Finite floats.
    k : int
        ``1 <= k <= d``.

    Returns
    -------
    numpy.ndarray of int64, shape (m, k)

    Examples
    --------
    >>> topk_indices(np.array([[1.0, -3.0, 3.0, 2.0]]), 2).tolist()
    [[1, 2]]
    >>> topk_indices(np.array([[1.0, 1.0, 1.0]]), 2).tolist()
    [[0, 1]]
    """
    a = np.abs(x)
    m, d = a.shape
    if k == d:
        return np.broadcast_to(np.arange(d, dtype=np.int64), (m, d)).copy()
    # t = the k-th largest magnitude of each row (a selection, not a sort).
    t = np.partition(a, d - k, axis=1)[:, d - k : d - k + 1]
    above = a > t
    tied = a == t
    # Every entry above t is kept; the remaining slots go to the first tied entries (lower index).
    need = k - above.sum(axis=1, keepdims=True)
    keep = above | (tied & (np.cumsum(tied, axis=1) <= need))
    return np.nonzero(keep)[1].reshape(m, k).astype(np.int64, copy=False)


def topk_select(x: np.ndarray, k: int, dense):
    """``(idx, finite)``: :func:`topk_indices` of ``x`` and whether every entry of ``x`` is finite.

    With ``dense`` (a C-contiguous array of ``x``'s shape and dtype, not overlapping ``x``) the dense
    top-k is written into it: ``x`` on ``idx``, +0.0 elsewhere. When ``finite`` is False, ``idx`` and
    ``dense`` hold unspecified values (here: ``idx`` is None and ``dense`` is untouched); the caller
    raises. The compiled backends check finiteness inside the selection's pass over ``x``.

    Examples
    --------
    >>> x = np.array([[1.0, -3.0, 3.0, 2.0]]); y = np.empty_like(x)
    >>> idx, ok = topk_select(x, 2, y)
    >>> idx.tolist(), ok, y.tolist()
    ([[1, 2]], True, [[0.0, -3.0, 3.0, 0.0]])
    >>> topk_select(np.array([[1.0, np.nan]]), 1, None)[1]
    False
    """
    if x.size and not bool(np.isfinite(x).all()):
        return None, False
    idx = topk_indices(x, k)
    if dense is not None:
        dense[...] = 0
        np.put_along_axis(dense, idx, np.take_along_axis(x, idx, axis=1), axis=1)
    return idx, True


def floyd_sample(u: np.ndarray, d: int) -> np.ndarray:
    """Uniform k-subsets of ``range(d)`` by Floyd's algorithm, one per row of ``u``.

    Parameters
    ----------
    u : numpy.ndarray of float64, shape (m, k)
        Uniforms in ``[0, 1)``; ``k <= d``.
    d : int
        Size of the ground set.

    Returns
    -------
    numpy.ndarray of int64, shape (m, k)
        Distinct indices per row, in the order Floyd's algorithm draws them.

    Examples
    --------
    >>> sorted(floyd_sample(np.array([[0.5, 0.5, 0.5]]), 3)[0].tolist())
    [0, 1, 2]
    """
    m, k = u.shape
    # Membership: a dense (m, d) mask when it is small, else a scan of the indices drawn so far
    # (O(k^2) per row); the numba kernel uses an O(k) hash set. All three give the same draws.
    taken = np.zeros((m, d), dtype=bool) if m * d <= 1 << 26 else None
    out = np.empty((m, k), dtype=np.int64)
    rows = np.arange(m)
    for i in range(k):  # O(k) steps, each vectorised over rows
        j = d - k + i
        t = np.minimum((u[:, i] * (j + 1)).astype(np.int64), j)
        seen = taken[rows, t] if taken is not None else (out[:, :i] == t[:, None]).any(axis=1)
        t = np.where(seen, j, t)
        if taken is not None:
            taken[rows, t] = True
        out[:, i] = t
    return out


def rtopk_indices(x: np.ndarray, k: int, r: int, u: np.ndarray, dense=None):
    """``(idx, finite)``: rTop-k, a uniform k-subset (Floyd on ``u``) of each row's top-r indices; ``x`` finite or not.

    Parameters
    ----------
    x : numpy.ndarray, shape (m, d)
    k, r : int
        ``1 <= k <= r <= d``.
    u : numpy.ndarray of float64, shape (m, k)
        Uniforms in ``[0, 1)``.
    dense : numpy.ndarray, shape (m, d), optional
        C-contiguous, ``x``'s dtype, not overlapping ``x``: receives the dense result, ``x`` on ``idx``
        and +0.0 elsewhere.

    Returns
    -------
    idx : numpy.ndarray of int64, shape (m, k)
        ``top_r[floyd_sample(u, r)]`` with ``top_r`` the ascending top-r indices of the row (Floyd's
        draw order). When ``finite`` is False, ``idx`` and ``dense`` hold unspecified values (here:
        ``idx`` is None and ``dense`` is untouched, as in :func:`topk_select`); the caller raises.
    finite : bool

    Examples
    --------
    >>> x = np.array([[5.0, 0.1, 4.0, 0.2]])
    >>> idx, ok = rtopk_indices(x, 2, 2, np.array([[0.3, 0.9]]))
    >>> sorted(idx[0].tolist()), ok
    ([0, 2], True)
    """
    if x.size and not bool(np.isfinite(x).all()):
        return None, False
    m, d = x.shape
    top = np.broadcast_to(np.arange(d, dtype=np.int64), (m, d)) if r == d else topk_indices(x, r)
    idx = np.take_along_axis(top, floyd_sample(u, r), axis=1)
    if dense is not None:
        dense[...] = 0
        np.put_along_axis(dense, idx, np.take_along_axis(x, idx, axis=1), axis=1)
    return idx, True
