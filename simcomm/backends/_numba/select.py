"""Selection kernels, numba: radix (histogram) select for top-k, Floyd's sampling with a hash set.

Same names, signatures and results as :mod:`simcomm.backends._numpy.select` (see its docstring for
the tie and ordering conventions). Top-k never sorts: the magnitude of a finite float, read as an
unsigned integer with the sign bit cleared, is monotone in ``|x|``, so the k-th largest magnitude is
found digit by digit from histograms (11 bits per digit), and one last pass over the row writes the
kept indices in ascending order (ties to the lower index).

Rows of ``2**15`` keys and more take the sampled path instead: a histogram of a block sample brackets
the k-th largest key, one branch-free pass lists every key at or above the bracket (and reads the
row's largest key, the finiteness check; in vector compress instructions where LLVM has them,
:mod:`simcomm.backends._numba.simd`), and the exact selection runs on that short list; the exact
path is the fallback when the sample misleads. Rows run in parallel (one chunk of rows per thread);
a single row of ``2**22`` keys and more is scanned in parallel segments instead.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from simcomm.backends._numba.simd import HAVE_COMPRESS, collect_keys

__all__ = ["topk_indices", "topk_select", "floyd_sample", "rtopk_indices"]

_RADIX = 11
_NBINS = 1 << _RADIX
_BLOCK = 256  # sample blocks of contiguous keys (whole cache lines) ...
_STEP = 16  # ... one block in 16: the sample reads 1/16 of the row ...
_STEP_BIG = 64  # ... or one in 64 from _BIG_D keys (10^5 sample keys and more: a histogram costs ~1 ns a key)
_BIG_D = 1 << 22
_SAMPLED_MIN_D = 1 << 15  # below this the exact three-pass path is as fast
_SCAN_GROUPS = 128  # the one-pass scan takes blocks of 8 (or 4) x 128 keys (at most 8 KiB: in L1)
_DENSE_SCAN = 0.015  # share of listed keys above which the scan takes blocks of 4 x 128 keys


@njit(cache=True)
def _kth_key(row, k, mask, nbits, hist, cand):
    """Return (T, take): the k-th largest masked key T, and how many keys equal to T are kept.

    ``hist`` is a zeroed scratch of at least ``2**11`` counts (left zeroed); ``cand`` a uint64 scratch for
    the keys of the k-th largest's top bin (a larger one is allocated when it is too small).
    """
    # All key arithmetic in uint64: mixing signed and unsigned 64-bit ints would promote to float.
    d = row.shape[0]
    low = np.uint64(_NBINS - 1)
    shift = np.uint64(nbits - _RADIX)
    for j in range(d):
        hist[(np.uint64(row[j] & mask) >> shift) & low] += 1
    # Bin of the k-th largest: walk down from the top bin.
    kk = k
    b = _NBINS - 1
    while hist[b] < kk:
        kk -= hist[b]
        b -= 1
    prefix = np.uint64(b)
    if cand.shape[0] < hist[b]:
        cand = np.empty(hist[b], np.uint64)
    c = 0
    for j in range(d):
        key = np.uint64(row[j] & mask)
        if (key >> shift) == prefix:
            cand[c] = key
            c += 1
    # Refine on the (usually small) candidate set, one digit at a time.
    rest = nbits - _RADIX
    while rest > 0:
        width = _RADIX if rest >= _RADIX else rest
        rest -= width
        shift = np.uint64(rest)
        nb = 1 << width
        digit = np.uint64(nb - 1)
        hist[:nb] = 0
        for i in range(c):
            hist[(cand[i] >> shift) & digit] += 1
        b = nb - 1
        while hist[b] < kk:
            kk -= hist[b]
            b -= 1
        prefix = (prefix << np.uint64(width)) | np.uint64(b)
        c2 = 0
        for i in range(c):
            if (cand[i] >> shift) == prefix:
                cand[c2] = cand[i]
                c2 += 1
        c = c2
    hist[:_NBINS] = 0
    return cand[0], kk


@njit(cache=True)
def _topk_row_exact(row, k, mask, nbits, out, hist, cand):
    # Three passes over the row: histogram, candidate gather (inside _kth_key), output.
    t, take = _kth_key(row, k, mask, nbits, hist, cand)
    c = 0
    for j in range(row.shape[0]):
        key = np.uint64(row[j] & mask)
        if key > t:
            out[c] = j
            c += 1
        elif key == t and take > 0:
            out[c] = j
            c += 1
            take -= 1


@njit(cache=True)
def _bracket(row, k, mask, nbits, hist):
    """Bracket the k-th largest key from a histogram of a block sample of the row (1/16, or 1/64 of long rows).

    ``hist`` is a zeroed scratch of ``2**16`` counts (left zeroed on return: only the bins the sample
    touched are used and cleared). Returns ``(lo_key, hi_key, n_lo)``: keys ``>= hi_key`` are (very
    likely) kept, keys in ``[lo_key, hi_key)`` are candidates, and ``n_lo`` is the sample's estimate of
    how many keys ``>= lo_key`` the row holds. The bracket has a 6-sigma binomial margin on the sample's
    rank; a wrong bracket (possible only for adversarially ordered rows) is detected by the caller,
    which then falls back to the exact three-pass path.
    """
    d = row.shape[0]
    sbits = 16
    nb = 1 << sbits
    sshift = np.uint64(nbits - sbits)
    ns = 0
    bmin = nb - 1
    bmax = 0
    step = _STEP_BIG if d >= _BIG_D else _STEP
    for blk in range(0, d // _BLOCK, step):
        for j in range(blk * _BLOCK, (blk + 1) * _BLOCK):
            b = np.int64(np.uint64(row[j] & mask) >> sshift)
            hist[b] += 1
            bmin = min(bmin, b)
            bmax = max(bmax, b)
        ns += _BLOCK
    q = k * ns / d  # expected number of sample keys at or above the k-th largest key
    margin = 6.0 * np.sqrt(q + 1.0) + 8.0
    b_hi = nb - 1 if q - margin < 0 else -1  # no sure keeps when the margin spans the whole top
    b_lo = 0
    cum = 0
    for b in range(bmax, bmin - 1, -1):  # the bins above bmax and below bmin are empty
        cum += hist[b]
        if b_hi < 0 and cum > q - margin:
            b_hi = b
        if cum >= q + margin:
            b_lo = b
            break
    hist[bmin : bmax + 1] = 0
    return np.uint64(b_lo) << sshift, np.uint64(b_hi + 1) << sshift, cum * d / ns


@njit(cache=True, inline="never")
def _group_max(seg, mask, gm):
    """``gm[g]`` = the largest masked key of group ``g`` = ``{g, g + G, g + 2 G, ...}`` of ``seg`` (``G = len(gm)``).

    ``len(seg) / G`` vertical maxima over contiguous slices (one vectorised loop each, no horizontal
    reduction); returns the largest masked key of the whole ``seg``.
    """
    G = gm.shape[0]
    for g in range(G):
        gm[g] = seg[g] & mask
    for r in range(1, seg.shape[0] // G):
        sub = seg[r * G : (r + 1) * G]
        for g in range(G):
            gm[g] = max(gm[g], sub[g] & mask)
    top = gm[0]
    for g in range(G):
        top = max(top, gm[g])
    return top


@njit(cache=True)
def _slices(n_lo, d):
    """Slices per scan block for about ``n_lo`` listed keys of ``d`` (see :func:`_scan`)."""
    return 4 if n_lo > _DENSE_SCAN * d else 8


@njit(cache=True)
def _scan_tail(row, mask, lo, cidx, ckey, start, n, top):
    """The scan one key at a time from ``start`` (branch-free): ``(n, top)`` after the last key."""
    for i in range(start, row.shape[0]):
        key = row[i] & mask
        top = max(top, np.uint64(key))
        cidx[n] = i
        ckey[n] = key
        n += key >= lo
    return n, top


@njit(cache=True)
def _scan_groups(row, mask, lo_key, cidx, ckey, slices, gm, hit):
    """One pass over ``row``: every key ``>= lo_key`` and its index, in ascending index order.

    Returns ``(n, top)``: how many keys went to ``cidx``/``ckey`` and the largest masked key of the
    row (a non-finite value has a key at or above the exponent mask, so ``top`` is the finiteness
    check, read in the same pass), or ``(-1, top)`` when ``cidx`` could overflow (the bracket was
    wrong; ``top`` is then incomplete).

    The row goes by in blocks of ``S G`` keys (``G = len(gm)``, ``S = slices``), split into ``S`` slices
    of ``G``: group ``g`` is key ``g`` of every slice. A vectorised loop takes each group's largest key;
    only the groups reaching ``lo_key`` are visited, slice after slice and group after group, which is
    ascending index order. Both the list of groups and the visits are branch-free: every visited key is
    written and the count advances by ``key >= lo_key``. With 1% of the keys listed about 8% of the
    groups of 8 are visited; with 4% (rTop-k's top-4k set) 30% of them, but 16% of the groups of 4, which
    cost twice the group lists: :func:`_slices` takes 4 slices above 1.5% (the scan then runs 25% faster).
    ``gm`` (the key dtype) and ``hit`` (int64) are scratch of ``G`` entries.
    """
    n = 0
    cap = cidx.shape[0]
    d = row.shape[0]
    G = gm.shape[0]
    B = slices * G
    lo = row.dtype.type(lo_key)  # lo_key <= mask: it is a key's prefix, so it fits the key dtype
    top = row.dtype.type(0)
    j = 0
    while j + B <= d:
        if n + B > cap:
            return -1, np.uint64(top)
        top = max(top, _group_max(row[j : j + B], mask, gm))
        nh = 0
        for g in range(G):
            hit[nh] = g
            nh += gm[g] >= lo
        for r in range(slices):
            base = j + r * G
            for h in range(nh):
                i = base + hit[h]
                key = row[i] & mask
                cidx[n] = i
                ckey[n] = key
                n += key >= lo
        j += B
    if n + (d - j) > cap:
        return -1, np.uint64(top)
    return _scan_tail(row, mask, lo, cidx, ckey, j, n, np.uint64(top))


_SCAN_CHUNK = 1024  # keys per call of the vector scan, and the margin its capacity check keeps


@njit(cache=True)
def _scan_simd(row, mask, lo_key, cidx, ckey, slices, gm, hit):
    """:func:`_scan_groups` in vector instructions (:func:`.simd.collect_keys`): the same list and ``top``.

    Eight keys at a time, compared with ``lo_key`` and compressed into the lists with no branch, so the
    cost does not depend on how many keys are listed; ``slices``, ``gm`` and ``hit`` are not used. It
    checks the capacity per chunk of ``_SCAN_CHUNK`` keys, so near a full list it may refuse (``-1``)
    where the group scan would not; the row then takes the exact path, with the same result.
    """
    n = 0
    cap = cidx.shape[0]
    d = row.shape[0]
    lo = row.dtype.type(lo_key)
    top = np.zeros(1, np.uint64)
    j = 0
    while j + _SCAN_CHUNK <= d:
        if n + _SCAN_CHUNK > cap:
            return -1, top[0]
        n = collect_keys(row[j : j + _SCAN_CHUNK], mask, lo, cidx, ckey, n, j, top)
        j += _SCAN_CHUNK
    if n + (d - j) > cap:
        return -1, top[0]
    e = j + (d - j) // 8 * 8
    n = collect_keys(row[j:e], mask, lo, cidx, ckey, n, j, top)
    return _scan_tail(row, mask, lo, cidx, ckey, e, n, top[0])


#: The scan the rows use: vector compress where LLVM has it (and the JIT is on), else the group scan.
_scan = _scan_simd if HAVE_COMPRESS else _scan_groups


@njit(cache=True)
def _cands(lo_key, hi_key, ckey, n, cand, c):
    """Append ``key - lo_key`` for the listed keys ``ckey[:n]`` below ``hi_key`` to ``cand`` from ``c``.

    Branch-free (every key is written, the count advances for the candidates): ``cand`` holds at least
    ``c + n + 1`` entries. Returns ``(c, nw)``: the new count and how many keys were ``>= hi_key``
    (sure keeps).
    """
    lo = ckey.dtype.type(lo_key)
    hi = ckey.dtype.type(hi_key)
    c0 = c
    for i in range(n):
        key = ckey[i]
        cand[c] = key - lo
        c += key < hi
    return c, n - (c - c0)


@njit(cache=True)
def _emit(t, take, k, cidx, ckey, n, base, out, c):
    """Append ``cidx + base`` of the listed keys above ``t`` and of the first ``take`` equal to it to ``out[c:]``.

    The list is ascending, so ``out`` is too and ties go to the lower index. Branch-free but for the stop
    at ``k``. Returns ``(c, take)``, both updated.
    """
    tt = ckey.dtype.type(t)
    i = 0
    while i < n and c < k:
        key = ckey[i]
        eq = key == tt
        keep = (key > tt) | (eq & (take > 0))
        out[c] = cidx[i] + base
        c += keep
        take -= eq & keep
        i += 1
    return c, take


@njit(cache=True)
def _threshold(k, nbits, lo_key, hi_key, nw, cand, nc, hist, work):
    """``(t, take, ok)``: the k-th largest listed key and how many keys equal to it are kept.

    ``nw`` keys are ``>= hi_key`` (sure keeps); ``cand[:nc]`` the offsets from ``lo_key`` of the others (the
    candidates, all in ``[lo_key, hi_key)``), so the radix select runs on offsets narrower than the keys (two
    digits instead of three). ``ok`` is False when the bracket was wrong (more than ``k`` sure keeps, or too
    few keys listed). ``hist`` (zeroed, left zeroed) and ``work`` are :func:`_kth_key`'s scratch.
    """
    need = k - nw
    if need < 0 or need > nc:
        return np.uint64(0), 0, False
    if need == 0:  # exactly the sure keeps: every key above hi_key - 1, no tie taken
        return np.uint64(hi_key) - np.uint64(1), 0, True
    span = np.uint64(hi_key) - np.uint64(lo_key)
    rbits = _RADIX
    while rbits < nbits and (span - np.uint64(1)) >> np.uint64(rbits) > 0:
        rbits += 1
    t_rel, take = _kth_key(cand[:nc], need, np.uint64(0xFFFFFFFFFFFFFFFF), rbits, hist, work)
    return t_rel + np.uint64(lo_key), take, True


@njit(cache=True)
def _finish(k, nbits, lo_key, hi_key, out, cidx, ckey, n, cand, hist, work):
    """The top-k of a row from its scan's list (keys ``>= lo_key``, ascending) into ``out``; False if impossible."""
    nc, nw = _cands(lo_key, hi_key, ckey, n, cand, 0)
    t, take, ok = _threshold(k, nbits, lo_key, hi_key, nw, cand, nc, hist, work)
    if not ok:
        return False
    c, _ = _emit(t, take, k, cidx, ckey, n, 0, out, 0)
    return c == k


@njit(cache=True)
def _row_top(row, mask):
    """The largest masked key of ``row`` (>= the exponent mask iff the row holds NaN or inf)."""
    top = row[0] ^ row[0]  # 0 in the key dtype
    for j in range(row.shape[0]):
        top = max(top, row[j] & mask)
    return np.uint64(top)


@njit(cache=True)
def _topk_row(row, k, mask, nbits, out, dense, hist, gm, hit, cidx, ckey, cand, work):
    """Top-k of one row into ``out`` (ascending): sampled one-pass path, exact three-pass path if the sample fails.

    ``hist`` is the zeroed ``2**16`` scratch of :func:`_bracket` (left zeroed); ``gm``/``hit``/``cidx``/
    ``ckey`` the scan's scratch, ``cand``/``work`` the selection's, the last four replaced by larger ones
    when the bracket needs more. Returns ``(top, cidx, ckey, cand, work)``: the largest masked key of the
    row (the caller's finiteness check) and the scratch. A non-empty
    ``dense`` is zeroed (by one fill, a memset: cheaper than zeroing inside the scan, whose stores would
    first read every line of ``dense``); :func:`_pick` writes the kept values into it.
    """
    d = row.shape[0]
    if dense.shape[0] > 0:
        dense[:] = 0
    if d >= _SAMPLED_MIN_D:
        lo_key, hi_key, n_lo = _bracket(row, k, mask, nbits, hist)
        cap = int(2.0 * n_lo) + 8 * _SCAN_GROUPS + 4096
        if cidx.shape[0] < cap:
            cidx = np.empty(cap, np.int64)
            ckey = np.empty(cap, row.dtype)
            cand = np.empty(cap + 1, row.dtype)
            work = np.empty(cap, np.uint64)
        n, top = _scan(row, mask, lo_key, cidx, ckey, _slices(n_lo, d), gm, hit)
        if n >= 0 and _finish(k, nbits, lo_key, hi_key, out, cidx, ckey, n, cand, hist, work):
            return top, cidx, ckey, cand, work
    _topk_row_exact(row, k, mask, nbits, out, hist, work)
    return _row_top(row, mask), cidx, ckey, cand, work


@njit(cache=True)
def _floyd_row_bitmap(u, d, out, seen):
    """:func:`_floyd_row` with a bitmap of ``d`` bits (``seen``, at least ``ceil(d / 64)`` words) as the set.

    The same draws (Floyd's algorithm is the same; only the membership test differs): the set for a
    ground set small enough that its bitmap (``d / 8`` bytes, in cache) beats hashing.
    """
    k = u.shape[0]
    seen[: (d + 63) >> 6] = 0
    for i in range(k):
        j = d - k + i
        t = np.int64(u[i] * (j + 1))
        if t > j:
            t = j
        bit = np.uint64(1) << np.uint64(t & 63)
        if seen[t >> 6] & bit:
            t = j  # Floyd: t was taken, so take j (never taken before this step)
            bit = np.uint64(1) << np.uint64(t & 63)
        seen[t >> 6] |= bit
        out[i] = t


_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_BIT = np.zeros(64, np.int64)  # the bit of a one-bit word b, by (b * _DEBRUIJN) >> 58
for _i in range(64):
    _DEBRUIJN_BIT[((1 << _i) * int(_DEBRUIJN) % 2**64) >> 58] = _i


@njit(cache=True)
def _pick(row, sel, u, out, dense, seen):
    """The kept indices of a row from its ascending top set ``sel``, and their values into ``dense``.

    With an empty ``u`` (top-k) they are ``sel`` itself (``out`` is ``sel``); else (rTop-k) the Floyd
    k-subset drawn by the uniforms ``u`` of the positions in ``sel``: ``out[i] = sel[pos_i]``, in draw
    order. A non-empty ``dense`` (zeroed) gets the bits of ``row`` on the kept indices, in ascending
    order (the set bits of Floyd's bitmap, one after the other: far fewer cache misses than draw order).
    """
    if u.shape[0] == 0:
        if dense.shape[0] > 0:
            for i in range(out.shape[0]):
                dense[out[i]] = row[out[i]]
        return
    _floyd_row_bitmap(u, sel.shape[0], out, seen)
    for i in range(out.shape[0]):
        out[i] = sel[out[i]]
    if dense.shape[0] > 0:
        for w in range((sel.shape[0] + 63) >> 6):
            bits = seen[w]
            while bits:
                low = bits & (~bits + np.uint64(1))
                j = sel[(w << 6) + _DEBRUIJN_BIT[(low * _DEBRUIJN) >> np.uint64(58)]]
                dense[j] = row[j]
                bits ^= low


@njit(cache=True)
def _topk_chunk(keys, r0, r1, k, mask, nbits, out, dense, top, u):
    """Rows ``r0:r1`` one after the other, sharing one set of scratch arrays.

    ``u`` of shape ``(m, 0)``: the top-k of each row into ``out`` (m, k); else the rTop-k subsets
    (:func:`_pick`) into ``out`` (m, u.shape[1]), the top-k set a per-chunk scratch.
    """
    d = keys.shape[1]
    hist = np.zeros(1 << 16, np.int64)
    gm = np.empty(_SCAN_GROUPS, keys.dtype)
    hit = np.empty(_SCAN_GROUPS, np.int64)
    cidx = np.empty(0, np.int64)
    ckey = np.empty(0, keys.dtype)
    cand = np.empty(0, keys.dtype)
    work = np.empty(d if d < _SAMPLED_MIN_D else 0, np.uint64)  # the exact path's candidates
    rtop = u.shape[1] > 0
    sel = np.empty(k if rtop else 0, np.int64)
    seen = np.empty((k + 63) >> 6 if rtop else 0, np.uint64)
    for i in range(r0, r1):
        s = sel if rtop else out[i]
        top[i], cidx, ckey, cand, work = _topk_row(keys[i], k, mask, nbits, s, dense[i], hist, gm, hit, cidx, ckey,
                                                   cand, work)
        _pick(keys[i], s, u[i], out[i], dense[i], seen)


@njit(cache=True, parallel=True)
def _topk_rows(keys, k, mask, nbits, out, dense, top, nchunks, u):
    m = keys.shape[0]
    for c in prange(nchunks):  # one contiguous chunk of rows per thread: scratch allocated once per chunk
        _topk_chunk(keys, c * m // nchunks, (c + 1) * m // nchunks, k, mask, nbits, out, dense, top, u)


@njit(cache=True, parallel=True)
def _scan_segments(row, mask, lo_key, slices, sidx, skey, ns, tops, dense):
    """:func:`_scan` over ``len(ns)`` contiguous segments of ``row`` in parallel (indices relative to each).

    With a non-empty ``dense`` each segment of it is zeroed too.
    """
    d = row.shape[0]
    nseg = ns.shape[0]
    for s in prange(nseg):
        a = s * d // nseg
        b = (s + 1) * d // nseg
        gm = np.empty(_SCAN_GROUPS, row.dtype)
        hit = np.empty(_SCAN_GROUPS, np.int64)
        n, t = _scan(row[a:b], mask, lo_key, sidx[s], skey[s], slices, gm, hit)
        ns[s] = n
        tops[s] = t
        if dense.shape[0] > 0:
            dense[a:b] = 0


@njit(cache=True)
def _topk_long_row(row, k, mask, nbits, out, dense, nseg):
    """:func:`_topk_row` for one long row, its scan split into ``nseg`` segments run in parallel (they zero ``dense``).

    Each segment lists its keys ``>= lo_key`` in ascending order; the lists, concatenated in segment
    order, are the list of one scan over the whole row, so the result is :func:`_topk_row`'s.
    """
    d = row.shape[0]
    hist = np.zeros(1 << 16, np.int64)
    lo_key, hi_key, n_lo = _bracket(row, k, mask, nbits, hist)
    cap = int(2.0 * n_lo / nseg) + 8 * _SCAN_GROUPS + 4096
    sidx = np.empty((nseg, cap), np.int64)
    skey = np.empty((nseg, cap), row.dtype)
    ns = np.empty(nseg, np.int64)
    tops = np.zeros(nseg, np.uint64)
    _scan_segments(row, mask, lo_key, _slices(n_lo, d), sidx, skey, ns, tops, dense)
    n = 0
    top = np.uint64(0)
    for s in range(nseg):
        if ns[s] < 0:
            n = -1
            break
        n += ns[s]
        top = max(top, tops[s])
    if n >= 0:  # the segments' lists, one after the other, are the list of one scan
        cand = np.empty(n + 1, row.dtype)
        nc = 0
        nw = 0
        for s in range(nseg):
            nc, w = _cands(lo_key, hi_key, skey[s], ns[s], cand, nc)
            nw += w
        work = np.empty(nc, np.uint64)
        t, take, ok = _threshold(k, nbits, lo_key, hi_key, nw, cand, nc, hist, work)
        if ok:
            c = 0
            for s in range(nseg):
                c, take = _emit(t, take, k, sidx[s], skey[s], ns[s], s * d // nseg, out, c)
            if c == k:
                return top
    _topk_row_exact(row, k, mask, nbits, out, hist, np.empty(0, np.uint64))  # dense was zeroed by the scans
    return _row_top(row, mask)


# Small inputs (a simulation's (n, d) per step) run serially: waking the thread pool costs far more than
# the work (13 ms against ~10 us for 16 x 8 on a loaded 2-core machine). Same per-row function: same result.
@njit(cache=True)
def _topk_rows_serial(keys, k, mask, nbits, out, dense, top, u):
    _topk_chunk(keys, 0, keys.shape[0], k, mask, nbits, out, dense, top, u)


_TOPK_PARALLEL_MIN = 1 << 15  # entries m * d from which the threaded driver is used


def _keys(x):
    """``(keys, mask, nbits, inf_key)``: ``x``'s bits as unsigned ints, the magnitude mask and bits, the key of inf."""
    if x.dtype == np.float32:
        return np.ascontiguousarray(x).view(np.uint32), np.uint32(0x7FFFFFFF), 31, np.uint64(0x7F800000)
    x = np.ascontiguousarray(x, dtype=np.float64)
    return x.view(np.uint64), np.uint64(0x7FFFFFFFFFFFFFFF), 63, np.uint64(0x7FF0000000000000)


def _select(x, k, dense, u=None):
    """Run the row kernels: ``(idx, finite)``; ``dense`` an (m, d) array of ``x``'s dtype or None.

    ``u`` None: ``idx`` is the top-k of each row; else (float64 (m, kk)) the rTop-k subsets of the top-k sets
    drawn by ``u`` (:func:`_pick`).
    """
    m, d = x.shape
    keys, mask, nbits, inf_key = _keys(x)
    u = np.empty((m, 0)) if u is None else np.ascontiguousarray(u, dtype=np.float64)
    out = np.empty((m, u.shape[1] or k), dtype=np.int64)
    top = np.zeros(m, dtype=np.uint64)
    fused = dense is not None and dense.dtype.itemsize == keys.dtype.itemsize and dense.dtype == x.dtype
    dbits = dense.view(keys.dtype) if fused else np.empty((m, 0), keys.dtype)
    threads = numba.get_num_threads()
    if m == 1 and d >= _BIG_D and threads > 1:  # one long row: its scan in parallel segments
        rtop = u.shape[1] > 0
        sel = np.empty(k, np.int64) if rtop else out[0]
        top[0] = _topk_long_row(keys[0], k, mask, nbits, sel, dbits[0], threads)
        _pick(keys[0], sel, u[0], out[0], dbits[0], np.empty((k + 63) >> 6 if rtop else 0, np.uint64))
    elif m * d >= _TOPK_PARALLEL_MIN and m > 1:
        _topk_rows(keys, k, mask, nbits, out, dbits, top, min(m, threads), u)
    else:
        _topk_rows_serial(keys, k, mask, nbits, out, dbits, top, u)
    if dense is not None and not fused:  # float16 / longdouble input: its keys are a float64 copy
        dense[...] = 0
        np.put_along_axis(dense, out, np.take_along_axis(x, out, axis=1), axis=1)
    return out, bool(m == 0 or top.max() < inf_key)


def topk_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``|x|`` of each row, ascending; ties go to the lower index.

    Parameters
    ----------
    x : numpy.ndarray, shape (m, d)
        Finite float32 or float64.
    k : int
        ``1 <= k <= d``.

    Returns
    -------
    numpy.ndarray of int64, shape (m, k)

    Examples
    --------
    >>> topk_indices(np.array([[1.0, -3.0, 3.0, 2.0]]), 2).tolist()
    [[1, 2]]
    """
    m, d = x.shape
    if k == d:
        return np.broadcast_to(np.arange(d, dtype=np.int64), (m, d)).copy()
    return _select(x, k, None)[0]


def topk_select(x: np.ndarray, k: int, dense):
    """``(idx, finite)``: :func:`topk_indices` and whether ``x`` is finite, checked in the selection's pass.

    With ``dense`` (a C-contiguous array of ``x``'s dtype and shape) the same pass writes the dense
    top-k into it: ``x`` on ``idx``, +0.0 elsewhere. When ``finite`` is False, ``idx`` and ``dense``
    hold unspecified values (the selection of non-finite keys runs to completion, nothing more).

    Examples
    --------
    >>> x = np.array([[1.0, -3.0, 3.0, 2.0]]); y = np.empty_like(x)
    >>> idx, ok = topk_select(x, 2, y)
    >>> idx.tolist(), ok, y.tolist()
    ([[1, 2]], True, [[0.0, -3.0, 3.0, 0.0]])
    >>> topk_select(np.array([[1.0, np.nan]]), 1, None)[1]
    False
    """
    m, d = x.shape
    if k == d:
        finite = bool(np.isfinite(x).all())
        if dense is not None:
            dense[...] = x
        return np.broadcast_to(np.arange(d, dtype=np.int64), (m, d)).copy(), finite
    return _select(x, k, dense)


@njit(cache=True)
def _floyd_row(u, d, out, table, bits):
    # Open-addressing hash set of size 2**bits >= 2k: O(1) expected per step, O(k) per row.
    k = u.shape[0]
    size = table.shape[0]
    table[:] = -1
    for i in range(k):
        j = d - k + i
        t = np.int64(u[i] * (j + 1))
        if t > j:
            t = j
        for attempt in range(2):
            h = np.int64((np.uint64(t) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
            found = False
            while table[h] != -1:
                if table[h] == t:
                    found = True
                    break
                h = (h + 1) & (size - 1)
            if not found:
                table[h] = t
                break
            t = j  # Floyd: t was taken, so take j (never taken before this step)
        out[i] = t


@njit(cache=True)
def _floyd_rows(u, d, out, bits):
    # Serial on purpose: O(k) per row is microseconds, less than a parallel launch costs.
    table = np.empty(1 << bits, np.int64)
    for i in range(u.shape[0]):
        _floyd_row(u[i], d, out[i], table, bits)


def floyd_sample(u: np.ndarray, d: int) -> np.ndarray:
    """Uniform k-subsets of ``range(d)`` by Floyd's algorithm, one per row of ``u`` (O(k) per row).

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
    bits = max(1, int(2 * k - 1).bit_length())  # table size 2**bits >= 2k keeps the load <= 1/2
    out = np.empty((m, k), dtype=np.int64)
    _floyd_rows(np.ascontiguousarray(u, dtype=np.float64), d, out, bits)
    return out


@njit(cache=True)
def _put_rows(keys, mask, idx, dense):
    """The largest masked key of ``keys`` (the finiteness check); a non-empty ``dense``: ``keys`` on ``idx``, 0 else."""
    top = np.uint64(0)
    for i in range(keys.shape[0]):
        top = max(top, _row_top(keys[i], mask))
        if dense.shape[1] > 0:
            dense[i, :] = 0
            for j in range(idx.shape[1]):
                dense[i, idx[i, j]] = keys[i, idx[i, j]]
    return top


def rtopk_indices(x: np.ndarray, k: int, r: int, u: np.ndarray, dense=None):
    """``(idx, finite)``: rTop-k, a uniform k-subset (Floyd on ``u``) of each row's top-r indices; ``x`` finite or not.

    One kernel per row: the top-r selection (which reads the finiteness flag in its pass), Floyd's draw of
    the k positions in the ascending top-r list, and, with ``dense`` (a C-contiguous array of ``x``'s dtype
    and shape), the dense result: ``x`` on ``idx``, +0.0 elsewhere. When ``finite`` is False, ``idx`` and
    ``dense`` hold unspecified values.

    Parameters
    ----------
    x : numpy.ndarray, shape (m, d)
    k, r : int
        ``1 <= k <= r <= d``.
    u : numpy.ndarray of float64, shape (m, k)
        Uniforms in ``[0, 1)``.
    dense : numpy.ndarray, shape (m, d), optional

    Returns
    -------
    idx : numpy.ndarray of int64, shape (m, k)
        In Floyd's draw order.
    finite : bool

    Examples
    --------
    >>> x = np.array([[5.0, 0.1, 4.0, 0.2]])
    >>> idx, ok = rtopk_indices(x, 2, 2, np.array([[0.3, 0.9]]))
    >>> sorted(idx[0].tolist()), ok
    ([0, 2], True)
    """
    m, d = x.shape
    if r == d:  # every index is in the top set: the subset is Floyd's draw from range(d)
        idx = floyd_sample(u, d)
        keys, mask, _, inf_key = _keys(x)
        fused = dense is not None and dense.dtype.itemsize == keys.dtype.itemsize and dense.dtype == x.dtype
        top = _put_rows(keys, mask, idx, dense.view(keys.dtype) if fused else np.empty((m, 0), keys.dtype))
        if dense is not None and not fused:
            dense[...] = 0
            np.put_along_axis(dense, idx, np.take_along_axis(x, idx, axis=1), axis=1)
        return idx, bool(m == 0 or top < inf_key)
    return _select(x, r, dense, u)
