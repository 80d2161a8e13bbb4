"""Error-feedback kernel, numba: ``P = G + M``, row norms and the top-r set in one pass per row.

Same name, signature and results as :mod:`simcomm.backends._numpy.ef`. Per row (rows on threads only
for very large inputs, see ``PARALLEL_MIN``): a strided sample of ``|G + M|`` gives a threshold ``t``
that about ``2r + 64`` entries exceed; one pass, eight entries at a time, writes ``P = G + M``,
accumulates ``||P||^2`` (eight partial sums, so it equals numpy's to rounding, not bit for bit) and
collects every index with ``|P| >= t`` (in ascending order; with a vector compress and no branch where
LLVM has one, :mod:`simcomm.backends._numba.simd`); a quickselect finds the r-th largest
candidate magnitude and one scan keeps the ``r`` largest with ties to the lower index, exactly as
:func:`simcomm.backends._numpy.select.topk_indices`. Since every entry ``>= t`` is a candidate, the
result is exact whenever there are at least ``r`` candidates; otherwise ``t`` is lowered (ultimately to
every index), so the answer never depends on the sample.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from simcomm.backends._numba.simd import HAVE_COMPRESS, add_sumsq_collect, collect

__all__ = ["ef_accumulate_topr", "ef_send"]

_SAMPLE = 256


@njit(cache=True)
def _collect_from(p, t, cand, mags, start, nc):
    """Append each ``j >= start`` with ``|p[j]| >= t`` (ascending) to ``cand``, ``|p[j]|`` to ``mags``; the count."""
    for j in range(start, p.shape[0]):
        a = abs(p[j])
        if a >= t:
            cand[nc] = j
            mags[nc] = a
            nc += 1
    return nc


@njit(cache=True)
def _collect_scalar(p, t, cand, mags):
    """Every index with ``|p| >= t`` (ascending) into ``cand``, the magnitudes into ``mags``; the count."""
    return _collect_from(p, t, cand, mags, 0, 0)


@njit(cache=True)
def _collect_simd(p, t, cand, mags):
    """:func:`_collect_scalar` in vector instructions (:func:`.simd.collect`)."""
    return _collect_from(p, t, cand, mags, p.shape[0] - p.shape[0] % 8, collect(p, t, cand, mags))


_collect = _collect_simd if HAVE_COMPRESS else _collect_scalar


@njit(cache=True)
def _candidates(p, samp, q, r, cand, mags):
    """Indices with ``|p| >= t`` and their magnitudes, ``t`` lowered from ``samp[s - q]`` until ``r`` qualify.

    ``samp`` is ascending. Past the sample every index is a candidate, a NaN magnitude as ``+inf`` (NaN
    compares false; such a row is one the caller skips).
    """
    s = samp.shape[0]
    while q <= s:
        nc = _collect(p, samp[s - q], cand, mags)
        if nc >= r:
            return nc
        q = 2 * q
    d = p.shape[0]
    for j in range(d):
        cand[j] = j
        v = abs(p[j])
        mags[j] = v if v == v else np.inf
    return d


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
def _kth_smallest(a, n, k):
    """The ``k``-th smallest (0-based) of ``a[:n]``, reordering ``a`` (Hoare quickselect, median-of-3 pivot).

    Equal values stop both scans, so runs of ties split evenly; expected ``O(n)``.
    """
    lo, hi = 0, n - 1
    while lo < hi:
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi]
        piv = max(min(x, y), min(max(x, y), z))  # the median of the three: a value in a[lo..hi]
        i, j = lo, hi
        while i <= j:
            while a[i] < piv:
                i += 1
            while piv < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    return a[k]


_BUCKETS = 1024


@njit(cache=True)
def _rth_largest(mags, nc, r, work, counts):
    """The ``r``-th largest of ``mags[:nc]`` (``mags`` untouched; ``work``, ``counts`` are scratch).

    A histogram of ``min(_BUCKETS, nc)`` equal-width buckets over ``[min, max]`` (the bucket of a value is
    monotone in the value, so every bucket above the one holding the answer holds only larger values)
    finds the bucket of the answer in two branch-light passes; a quickselect runs on that bucket's few
    values only. An infinite or degenerate range runs the quickselect on every value.
    """
    lo = np.inf
    hi = -np.inf
    for c in range(nc):
        v = mags[c]
        lo = min(lo, v)
        hi = max(hi, v)
    nb = min(_BUCKETS, nc)  # about one value per bucket on a small row, at most _BUCKETS
    scale = nb / (hi - lo) if hi > lo else np.inf
    if not (hi < np.inf and scale < np.inf):
        work[:nc] = mags[:nc]
        return _kth_smallest(work, nc, nc - r)
    counts[:nb] = 0
    top = nb - 1
    for c in range(nc):
        counts[min(int((mags[c] - lo) * scale), top)] += 1
    above = 0
    b = top
    while above + counts[b] < r:  # from the largest values down: the bucket where the r-th falls
        above += counts[b]
        b -= 1
    m = 0
    for c in range(nc):
        if min(int((mags[c] - lo) * scale), top) == b:
            work[m] = mags[c]
            m += 1
    return _kth_smallest(work, m, m - (r - above))


@njit(cache=True)
def _select(cand, mags, nc, r, out, work, counts):
    """The ``r`` largest of the ``nc`` candidates (ascending indices, magnitudes ``mags``), ties to the lower index.

    ``work`` (length >= ``nc``) and ``counts`` (``_BUCKETS``) are scratch; ``mags`` is read in order only.
    """
    tr = _rth_largest(mags, nc, r, work, counts)  # the r-th largest magnitude (a selection, not a sort)
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
def _pass_tail(g, m, p, t, cand, mags, start, nc):
    """The pass over the entries from ``start`` one by one (the tail past the groups of eight): ``(nc, sq)``."""
    sq = 0.0
    for j in range(start, g.shape[0]):
        v = g[j] + m[j]
        p[j] = v
        sq += v * v
        if abs(v) >= t:
            cand[nc] = j
            mags[nc] = abs(v)
            nc += 1
    return nc, sq


@njit(cache=True)
def _pass_scalar(g, m, p, t, cand, mags):
    """One pass: ``p = g + m``, ``||p||^2`` and the indices with ``|p| >= t`` (ascending) and their ``|p|``.

    Returns ``(nc, sq)``: the candidates are ``cand[:nc]``, their magnitudes ``mags[:nc]``.

    Eight entries at a time: eight partial sums of squares (lane ``j mod 8``), added pairwise at the end,
    and one compare of the eight against ``t``; only a group with a hit is scanned one by one. LLVM
    emits scalar code for this loop; :func:`_pass_simd` is the same pass in vector instructions.
    """
    d = g.shape[0]
    d8 = d - d % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    nc = 0
    for j in range(0, d8, 8):
        v0 = g[j] + m[j]
        v1 = g[j + 1] + m[j + 1]
        v2 = g[j + 2] + m[j + 2]
        v3 = g[j + 3] + m[j + 3]
        v4 = g[j + 4] + m[j + 4]
        v5 = g[j + 5] + m[j + 5]
        v6 = g[j + 6] + m[j + 6]
        v7 = g[j + 7] + m[j + 7]
        p[j] = v0
        p[j + 1] = v1
        p[j + 2] = v2
        p[j + 3] = v3
        p[j + 4] = v4
        p[j + 5] = v5
        p[j + 6] = v6
        p[j + 7] = v7
        s0 += v0 * v0
        s1 += v1 * v1
        s2 += v2 * v2
        s3 += v3 * v3
        s4 += v4 * v4
        s5 += v5 * v5
        s6 += v6 * v6
        s7 += v7 * v7
        if ((abs(v0) >= t) | (abs(v1) >= t) | (abs(v2) >= t) | (abs(v3) >= t)
                | (abs(v4) >= t) | (abs(v5) >= t) | (abs(v6) >= t) | (abs(v7) >= t)):
            for jj in range(j, j + 8):
                a = abs(p[jj])
                if a >= t:
                    cand[nc] = jj
                    mags[nc] = a
                    nc += 1
    nc, tail = _pass_tail(g, m, p, t, cand, mags, d8, nc)
    return nc, ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) + tail


@njit(cache=True)
def _pass_simd(g, m, p, t, cand, mags):
    """:func:`_pass_scalar` with the groups of eight in vector instructions (:mod:`.simd`).

    The same ``p``, the same lane sums added in the same order (so the same ``sq``, bit for bit) and the
    same candidates.
    """
    lanes = np.empty(8)
    nc = add_sumsq_collect(g, m, p, t, cand, mags, lanes)
    nc, tail = _pass_tail(g, m, p, t, cand, mags, g.shape[0] - g.shape[0] % 8, nc)
    s = lanes
    return nc, ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail


#: The pass the rows use: vector compress where LLVM has it (and the JIT is on), else the scalar loop.
_pass = _pass_simd if HAVE_COMPRESS else _pass_scalar


@njit(cache=True)
def _row(G, M, P, r, top, sq, i, cand, samp, best, mags, work, counts):
    """Row ``i``: the sampled threshold, one fused pass, the fallback if too few qualify, the selection."""
    d = G.shape[1]
    s = samp.shape[0]
    if r == d:
        _, sq[i] = _pass(G[i], M[i], P[i], np.inf, cand, mags)
        for j in range(d):
            top[i, j] = j
        return
    q, t = _sample_q(G[i], M[i], r, samp, best)  # q > s: t = inf, the fallback below finds the candidates
    nc, sq[i] = _pass(G[i], M[i], P[i], t, cand, mags)
    if q > s or nc < r:  # too few above the sampled threshold: lower it (ultimately to every index)
        q = 2 * q if q <= s else s + 1
        if q > s:
            q = s + 1
        srt = samp.copy()
        srt.sort()  # ascending, as the fallback thresholds expect
        nc = _candidates(P[i], srt, q, r, cand, mags)
    _select(cand, mags, nc, r, top[i], work, counts)


@njit(cache=True)
def _scratch(d, s):
    """A row's scratch: candidates, the sample, its top, magnitudes, the selection's work and histogram."""
    return np.empty(d, np.int64), np.empty(s), np.empty(s), np.empty(d), np.empty(d), np.empty(_BUCKETS, np.int64)


@njit(cache=True, parallel=True)
def _rows_parallel(G, M, P, r, top, sq, nblk):
    """Rows in ``nblk`` contiguous blocks, one per thread, each with its own scratch (allocated once)."""
    n, d = G.shape
    for b in prange(nblk):
        cand, samp, best, mags, work, counts = _scratch(d, min(d, _SAMPLE))
        for i in range(b * n // nblk, (b + 1) * n // nblk):
            _row(G, M, P, r, top, sq, i, cand, samp, best, mags, work, counts)


@njit(cache=True)
def _rows_serial(G, M, P, r, top, sq):
    n, d = G.shape
    cand, samp, best, mags, work, counts = _scratch(d, min(d, _SAMPLE))
    for i in range(n):
        _row(G, M, P, r, top, sq, i, cand, samp, best, mags, work, counts)


#: From this many entries (n * D) the rows run on the threads numba is given (the runner gives each cell
#: its share of the cores). Idle 2-core machine, numba's OpenMP layer, the vector pass: 16 x 101,770 takes
#: 1.2-1.5 ms on one thread and 0.8-0.9 ms on two; 16 x 4,810 0.2-0.27 ms on one and 0.1 ms on two. Below
#: the threshold a busy second core costs more than it saves: a thread that waits for it waits milliseconds.
PARALLEL_MIN = 1 << 20


def ef_accumulate_topr(G: np.ndarray, M: np.ndarray, r: int, out: np.ndarray | None = None):
    """``(P, top, sq)``: ``P = G + M``, top-r indices per row of ``P`` (ascending) and ``sum(P**2, axis=1)``.

    ``out`` (shape of ``G``; it may be ``G`` or ``M`` itself) receives ``P``: written in place when it is
    C-contiguous float64, else through a fresh array (the rows are written whole).

    Examples
    --------
    >>> P, top, sq = ef_accumulate_topr(np.array([[1.0, -3.0, 0.5]]), np.array([[0.0, 0.0, 2.0]]), 2)
    >>> top.tolist(), sq.tolist()
    ([[1, 2]], [16.25])
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    M = np.ascontiguousarray(M, dtype=np.float64)
    n, d = G.shape
    in_place = out is not None and out.dtype == np.float64 and out.flags.c_contiguous
    P = out if in_place else np.empty((n, d))
    top = np.empty((n, int(r)), np.int64)
    sq = np.empty(n)
    threads = min(n, numba.get_num_threads())
    if threads > 1 and n * d >= PARALLEL_MIN:
        _rows_parallel(G, M, P, int(r), top, sq, threads)
    else:
        _rows_serial(G, M, P, int(r), top, sq)
    if out is not None and not in_place:
        out[...] = P
        P = out
    return P, top, sq


@njit(cache=True)
def _send(P, idx, theta, lr, vals, upd, out):
    """The send step; returns False (and changes nothing) if an index lies outside ``[0, D)``."""
    n, k = idx.shape
    D = P.shape[1]
    for i in range(n):  # the range check, before anything is written: n k integers already in cache
        for j in range(k):
            c = idx[i, j]
            if c < 0 or c >= D:
                return False
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
    return True


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
    vals = np.empty(idx.shape, dtype=P.dtype)
    upd = np.zeros(D)
    out = np.empty(D)
    if not _send(P, idx, np.ascontiguousarray(theta, dtype=np.float64), float(lr), vals, upd, out):
        raise IndexError(f"ef_send: sent coordinates must lie in [0, {D}), got {idx.min()}..{idx.max()}")
    return vals, upd, out
