"""Error-feedback kernel, numba: ``P = G + M``, row norms and the top-r set in one pass per row.

Same name, signature and results as :mod:`simcomm.backends._numpy.ef`. Per row (parallel over rows for
large inputs): a strided sample of ``|G + M|`` gives a threshold ``t`` that about ``2r + 64`` entries
exceed; one pass writes ``P = G + M``, accumulates ``||P||^2`` and collects every index with
``|P| >= t`` (in ascending order); a selection (``np.partition``) finds the r-th largest candidate magnitude and one
scan keeps the ``r`` largest with ties to the lower index, exactly as
:func:`simcomm.backends._numpy.select.topk_indices`. Since
every entry ``>= t`` is a candidate, the result is exact whenever there are at least ``r`` candidates;
otherwise ``t`` is lowered (ultimately to every index), so the answer never depends on the sample.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["ef_accumulate_topr", "ef_send"]

_SAMPLE = 256


@njit(cache=True)
def _candidates(p, samp, q, r, cand):
    """Indices with ``|p| >= t`` for thresholds lowered from ``samp[s - q]`` until ``r`` qualify."""
    d = p.shape[0]
    s = samp.shape[0]
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
            return nc
        q = 2 * q if q <= s else s + 1
        if q > s:
            q = s + 1


@njit(cache=True)
def _sample_q(g, m, r, samp, best):
    """Fill ``samp`` with a strided sample of ``|g + m|`` (the values P will hold); return ``(q, t)``.

    ``t`` is the ``q``-th largest sample (``inf`` when ``q`` exceeds the sample), found by keeping the
    ``q`` largest in ``best`` (sorted descending) instead of sorting the whole sample.
    """
    d = g.shape[0]
    s = samp.shape[0]
    want = 2 * r + 64  # expected candidates: enough margin that a second pass is rare
    q = int(np.ceil(want * s / d))
    for i in range(s):
        jj = (i * d) // s
        samp[i] = abs(g[jj] + m[jj])
    if q > s:
        return q, np.inf
    nb = 0
    nnan = 0
    for i in range(s):
        v = samp[i]
        if v != v:  # NaN: an ascending sort puts it last, i.e. above every number
            nnan += 1
            continue
        if nb == q and not v > best[q - 1]:
            continue
        c = nb if nb < q else q - 1
        while c > 0 and v > best[c - 1]:
            best[c] = best[c - 1]
            c -= 1
        best[c] = v
        if nb < q:
            nb += 1
    if nnan >= q:
        return q, np.nan  # as samp_sorted[s - q]: nothing compares >= NaN, so the fallback runs
    return q, best[q - 1 - nnan]


@njit(cache=True)
def _select(p, cand, nc, r, out):
    """The ``r`` largest ``|p|`` among the ``nc`` candidates (ascending indices), ties to the lower index."""
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


@njit(cache=True)
def _block(G, M, P, r, top, sq, i0, nb, cand, samp, best, qs, ts, ncs):
    """Rows ``i0 .. i0 + nb - 1`` (``nb <= 4``): one fused pass, four independent ``||p||^2`` chains.

    Each row's sum of squares is accumulated in index order exactly as a one-row loop would; running
    four rows side by side only overlaps their add latencies.
    """
    d = G.shape[1]
    s = samp.shape[1]
    if r == d:
        for b in range(nb):
            i = i0 + b
            acc = 0.0
            for j in range(d):
                v = G[i, j] + M[i, j]
                P[i, j] = v
                acc += v * v
            sq[i] = acc
            for j in range(d):
                top[i, j] = j
        return
    for b in range(nb):  # q > s: t = inf, the candidates come from the fallback below
        qs[b], ts[b] = _sample_q(G[i0 + b], M[i0 + b], r, samp[b], best)
    if nb == 4:
        g0, g1, g2, g3 = G[i0], G[i0 + 1], G[i0 + 2], G[i0 + 3]
        m0, m1, m2, m3 = M[i0], M[i0 + 1], M[i0 + 2], M[i0 + 3]
        p0, p1, p2, p3 = P[i0], P[i0 + 1], P[i0 + 2], P[i0 + 3]
        c0, c1, c2, c3 = cand[0], cand[1], cand[2], cand[3]
        t0, t1, t2, t3 = ts[0], ts[1], ts[2], ts[3]
        s0 = s1 = s2 = s3 = 0.0
        n0 = n1 = n2 = n3 = 0
        for j in range(d):
            v0 = g0[j] + m0[j]
            v1 = g1[j] + m1[j]
            v2 = g2[j] + m2[j]
            v3 = g3[j] + m3[j]
            p0[j] = v0
            p1[j] = v1
            p2[j] = v2
            p3[j] = v3
            s0 += v0 * v0
            s1 += v1 * v1
            s2 += v2 * v2
            s3 += v3 * v3
            c0[n0] = j  # branch-free: the slot is kept only when the entry qualifies
            n0 += abs(v0) >= t0
            c1[n1] = j  # branch-free: the slot is kept only when the entry qualifies
            n1 += abs(v1) >= t1
            c2[n2] = j  # branch-free: the slot is kept only when the entry qualifies
            n2 += abs(v2) >= t2
            c3[n3] = j  # branch-free: the slot is kept only when the entry qualifies
            n3 += abs(v3) >= t3
        sq[i0], sq[i0 + 1], sq[i0 + 2], sq[i0 + 3] = s0, s1, s2, s3
        ncs[0], ncs[1], ncs[2], ncs[3] = n0, n1, n2, n3
    else:
        for b in range(nb):
            g, m, p, c, t = G[i0 + b], M[i0 + b], P[i0 + b], cand[b], ts[b]
            acc = 0.0
            nc = 0
            for j in range(d):
                v = g[j] + m[j]
                p[j] = v
                acc += v * v
                if abs(v) >= t:
                    c[nc] = j
                    nc += 1
            sq[i0 + b] = acc
            ncs[b] = nc
    for b in range(nb):
        q, nc = qs[b], ncs[b]
        if q > s or nc < r:  # too few above the sampled threshold: lower it (ultimately to every index)
            q = 2 * q if q <= s else s + 1
            if q > s:
                q = s + 1
            srt = samp[b].copy()
            srt.sort()  # ascending, as the fallback thresholds expect
            nc = _candidates(P[i0 + b], srt, q, r, cand[b])
        _select(P[i0 + b], cand[b], nc, r, top[i0 + b])


@njit(cache=True)
def _scratch(d, s):
    return (np.empty((4, d), np.int64), np.empty((4, s)), np.empty(s), np.empty(4, np.int64), np.empty(4),
            np.empty(4, np.int64))


@njit(cache=True, parallel=True)
def _rows_parallel(G, M, P, r, top, sq):
    n, d = G.shape
    for blk in prange((n + 3) // 4):
        cand, samp, best, qs, ts, ncs = _scratch(d, min(d, _SAMPLE))
        i0 = 4 * blk
        _block(G, M, P, r, top, sq, i0, min(4, n - i0), cand, samp, best, qs, ts, ncs)


@njit(cache=True)
def _rows_serial(G, M, P, r, top, sq):
    n, d = G.shape
    cand, samp, best, qs, ts, ncs = _scratch(d, min(d, _SAMPLE))
    for i0 in range(0, n, 4):
        _block(G, M, P, r, top, sq, i0, min(4, n - i0), cand, samp, best, qs, ts, ncs)


#: Below this many entries (n * D) the rows run on one thread (the OpenMP launch costs more than the
#: work). Measured on 2 idle cores: 16 x 101,770 took 1.2 ms threaded vs 2.4 ms serial, and 16 x 4,810
#: 0.05 ms vs 0.14 ms. Under heavy outside load the threaded call can be slower (8 ms vs 3.5 ms was once
#: measured); inside sweeps the runner caps numba at one thread per cell when cells run concurrently.
PARALLEL_MIN = 1 << 16


def ef_accumulate_topr(G: np.ndarray, M: np.ndarray, r: int, out: np.ndarray | None = None):
    """``(P, top, sq)``: ``P = G + M``, top-r indices per row of ``P`` (ascending) and ``sum(P**2, axis=1)``.

    ``out`` (C-contiguous float64, shape of ``G``; it may be ``G`` or ``M`` itself) receives ``P``.

    Examples
    --------
    >>> P, top, sq = ef_accumulate_topr(np.array([[1.0, -3.0, 0.5]]), np.array([[0.0, 0.0, 2.0]]), 2)
    >>> top.tolist(), sq.tolist()
    ([[1, 2]], [16.25])
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    M = np.ascontiguousarray(M, dtype=np.float64)
    n, d = G.shape
    P = np.empty((n, d)) if out is None else out
    top = np.empty((n, int(r)), np.int64)
    sq = np.empty(n)
    (_rows_parallel if n * d >= PARALLEL_MIN else _rows_serial)(G, M, P, int(r), top, sq)
    return P, top, sq


@njit(cache=True)
def _send(P, idx, theta, lr, vals, upd, out):
    n, k = idx.shape
    for i in range(n):
        p, ix, v = P[i], idx[i], vals[i]
        for j in range(k):  # read every message before zeroing any (a repeated index reads p, not 0)
            v[j] = p[ix[j]]
        for j in range(k):
            p[ix[j]] = 0.0
    for i in range(n):  # row-major, like np.bincount over idx.ravel()
        ix, v = idx[i], vals[i]
        for j in range(k):
            upd[ix[j]] += v[j]
    for c in range(upd.shape[0]):
        u = upd[c] / n
        upd[c] = u
        out[c] = theta[c] - u * lr


def ef_send(P: np.ndarray, idx: np.ndarray, theta: np.ndarray, lr: float):
    """``(vals, upd, theta_new)``, ``P`` updated in place; see the numpy backend (same arithmetic, one call).

    Examples
    --------
    >>> P = np.array([[1.0, -3.0, 0.5], [2.0, 0.0, 4.0]])
    >>> vals, upd, th = ef_send(P, np.array([[1], [2]]), np.zeros(3), 0.5)
    >>> vals.ravel().tolist(), upd.tolist(), th.tolist()
    ([-3.0, 4.0], [0.0, -1.5, 2.0], [0.0, 0.75, -1.0])
    """
    n, D = P.shape
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= D):  # the kernel does not check its indices
        raise IndexError(f"ef_send: sent coordinates must lie in [0, {D}), got {idx.min()}..{idx.max()}")
    vals = np.empty(idx.shape, dtype=P.dtype)
    upd = np.zeros(D)
    out = np.empty(D)
    _send(P, idx, np.ascontiguousarray(theta, dtype=np.float64), float(lr), vals, upd, out)
    return vals, upd, out
