"""Error-feedback kernel, numba: ``P = G + M``, row norms and the top-r set in two passes per row.

Same name, signature and results as :mod:`simcomm.backends._numpy.ef`. Per row (parallel over rows):
pass 1 writes ``P = G + M`` and accumulates ``||P||^2``; a strided sample of ``|P|`` gives a threshold
``t`` that about ``2r + 64`` entries exceed; pass 2 collects every index with ``|P| >= t`` (in
ascending order); a selection (``np.partition``) finds the r-th largest candidate magnitude and one
scan keeps the ``r`` largest with ties to the lower index, exactly as
:func:`simcomm.backends._numpy.select.topk_indices`. Since
every entry ``>= t`` is a candidate, the result is exact whenever there are at least ``r`` candidates;
otherwise ``t`` is lowered (ultimately to every index), so the answer never depends on the sample.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["ef_accumulate_topr"]

_SAMPLE = 256


@njit(cache=True)
def _row(g, m, p, r, out):
    d = g.shape[0]
    sq = 0.0
    for j in range(d):
        v = g[j] + m[j]
        p[j] = v
        sq += v * v
    if r == d:
        for j in range(d):
            out[j] = j
        return sq
    s = min(d, _SAMPLE)
    samp = np.empty(s)
    for q in range(s):
        samp[q] = abs(p[(q * d) // s])
    samp.sort()  # ascending
    want = 2 * r + 64  # expected candidates: enough margin that a second pass is rare
    q = int(np.ceil(want * s / d))
    cand = np.empty(d, np.int64)
    while True:
        t = samp[s - q] if q <= s else 0.0
        nc = 0
        if q > s:  # take every index (also guards rows with NaN, which compare false)
            for j in range(d):
                cand[nc] = j
                nc += 1
        else:
            for j in range(d):
                if abs(p[j]) >= t:
                    cand[nc] = j
                    nc += 1
        if nc >= r:
            break
        q = 2 * q if q <= s else s + 1
        if q > s:
            q = s + 1
    mags = np.empty(nc)
    for c in range(nc):
        mags[c] = abs(p[cand[c]])
    tr = np.partition(mags, nc - r)[nc - r]  # the r-th largest magnitude (a selection, not a sort)
    above = 0
    for c in range(nc):
        if mags[c] > tr:
            above += 1
    ties = r - above  # slots left for entries equal to tr: the lowest indices get them
    o = 0
    for c in range(nc):  # candidates are in ascending index order, so the output is too
        v = mags[c]
        if v > tr or (v == tr and ties > 0):
            if v == tr:
                ties -= 1
            out[o] = cand[c]
            o += 1
    return sq


@njit(cache=True, parallel=True)
def _rows(G, M, P, r, top, sq):
    for i in prange(G.shape[0]):
        sq[i] = _row(G[i], M[i], P[i], r, top[i])


def ef_accumulate_topr(G: np.ndarray, M: np.ndarray, r: int):
    """``(P, top, sq)``: ``P = G + M``, top-r indices per row of ``P`` (ascending) and ``sum(P**2, axis=1)``.

    Examples
    --------
    >>> P, top, sq = ef_accumulate_topr(np.array([[1.0, -3.0, 0.5]]), np.array([[0.0, 0.0, 2.0]]), 2)
    >>> top.tolist(), sq.tolist()
    ([[1, 2]], [16.25])
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    M = np.ascontiguousarray(M, dtype=np.float64)
    n, d = G.shape
    P = np.empty((n, d))
    top = np.empty((n, int(r)), np.int64)
    sq = np.empty(n)
    _rows(G, M, P, int(r), top, sq)
    return P, top, sq
