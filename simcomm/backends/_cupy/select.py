r"""Selection kernels on the GPU: a radix select for top-k (no sort, no partition), same tie rule.

``topk_indices`` finds the k-th largest magnitude of every row exactly with histogram passes over the
bits of ``|x|`` (3 passes of 11 bits for float32, 6 for float64; only the first pass touches every key
with an atomic, later passes only the keys still matching the digits fixed so far), then a counting
pass and a writing pass emit the indices in ascending order, ties to the lower index (:mod:`._src`).

``rtopk_indices`` takes the top-r set, then a uniform k-subset of it (and returns whether ``x`` is
finite). With the Floyd uniforms ``u`` of the numpy reference (an array) the subset is drawn by Floyd's
algorithm on the host: the numpy reference's subset exactly. With an integer ``u`` (a counter key, what
the compressors pass for device arrays) the subset is drawn on the device: every member of the top-r
set gets a counter uniform and the k largest win. Both give every k-subset probability ``1 / C(r, k)``;
they are different draws.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import ROWS_PER_LAUNCH, as_rows, like_input
from simcomm.backends._cupy._src import BINS, SEG, kernel

__all__ = ["topk_indices", "topk_select", "floyd_sample", "rtopk_indices", "randk_indices"]

_CHUNK = 16384  # elements per block in a histogram pass


def _digits(dtype) -> list[tuple[int, int]]:
    """(shift, width) of each radix pass, most significant digit first (the sign bit is cleared)."""
    bits = 31 if np.dtype(dtype) == np.float32 else 63
    out = []
    while bits > 0:
        w = min(11, bits)
        bits -= w
        out.append((bits, w))
    return out


def _topk_rows(xd, k: int, out):
    """Radix select of one batch of at most ROWS_PER_LAUNCH rows into ``out`` (rows, k)."""
    m, d = xd.shape
    ktype = cp.uint32 if xd.dtype == cp.float32 else cp.uint64
    prefix = cp.zeros(m, dtype=ktype)
    mask = cp.zeros(m, dtype=ktype)
    need = cp.full(m, k, dtype=cp.int64)
    digits = _digits(xd.dtype)
    hist = cp.zeros((len(digits), m, BINS), dtype=cp.uint32)
    hist_k, find_k = kernel("radix_hist", xd.dtype), kernel("radix_find", xd.dtype)
    chunks = -(-d // _CHUNK)
    for p, (shift, width) in enumerate(digits):
        hist_k((chunks, m), (256,), (xd, np.int64(d), np.int64(_CHUNK), prefix, mask, np.int32(shift),
                                     np.int32(width), hist[p]))
        find_k((m,), (32,), (hist[p], prefix, mask, need, np.int32(shift), np.int32(width)))
    # prefix is now the k-th largest key T of each row and need the number of keys == T to take
    nseg = -(-d // SEG)
    cnt = cp.empty((m, nseg), dtype=cp.uint64)
    grid = (-(-nseg // 8), m)
    kernel("sel_count", xd.dtype)(grid, (256,), (xd, np.int64(d), np.int64(nseg), prefix, cnt))
    gt_before, eq_before = cp.empty_like(cnt), cp.empty_like(cnt)
    kernel("sel_scan")((m,), (32,), (cnt, np.int64(nseg), gt_before, eq_before))
    kernel("sel_write", xd.dtype)(grid, (256,), (xd, np.int64(d), np.int64(nseg), prefix, need,
                                                 gt_before, eq_before,
                                                 np.int64(k), out))
    return out


def _topk_device(xd, k: int):
    m, d = xd.shape
    if k == d:
        return cp.broadcast_to(cp.arange(d, dtype=cp.int64), (m, d)).copy()
    out = cp.empty((m, k), dtype=cp.int64)
    for r0 in range(0, m, ROWS_PER_LAUNCH):
        _topk_rows(xd[r0 : r0 + ROWS_PER_LAUNCH], k, out[r0 : r0 + ROWS_PER_LAUNCH])
    return out


def topk_indices(x, k: int):
    """Indices of the ``k`` largest ``|x|`` of each row, ascending; ties go to the lower index."""
    xd = as_rows(x)
    if xd.dtype not in (cp.float32, cp.float64):
        xd = xd.astype(cp.float64)
    return like_input(_topk_device(xd, int(k)), x)


def topk_select(x, k: int, dense):
    """``(idx, finite)``: top-k indices and whether ``x`` is finite; the dense top-k into ``dense`` if given."""
    xd = as_rows(x)
    if xd.size and not bool(cp.isfinite(xd).all()):
        return None, False
    idx = topk_indices(xd, k)
    if dense is not None:
        dense[...] = 0
        rows = cp.arange(xd.shape[0])[:, None]
        dense[rows, idx] = xd[rows, idx]
    return like_input(idx, x), True


def floyd_sample(u, d: int):
    """Uniform k-subsets of ``range(d)`` by Floyd's algorithm (host numba kernel: sequential in k)."""
    from simcomm.backends._numba.select import floyd_sample as host_floyd

    out = host_floyd(np.ascontiguousarray(cp.asnumpy(u) if isinstance(u, cp.ndarray) else u), d)
    return like_input(cp.asarray(out), u)


def _keyed_subset(key: int, m: int, r: int, k: int):
    """A uniform k-subset of range(r) per row (ascending): the k largest of m*r counter uniforms."""
    from simcomm.backends._cupy.quant import counter_uniforms

    u = counter_uniforms(int(key), m * r, np.float64).reshape(m, r)
    return _topk_device(u, k)


def rtopk_indices(x, k: int, r: int, u, dense=None):
    """``(idx, finite)``: a uniform k-subset of the top-r indices of each row and whether ``x`` is finite.

    ``u``: Floyd uniforms or a key (module doc); the dense result (``x`` on ``idx``, 0 elsewhere) goes into
    ``dense`` if given.
    """
    xd = as_rows(x)
    if xd.size and not bool(cp.isfinite(xd).all()):
        return None, False
    m, d = xd.shape
    top = cp.broadcast_to(cp.arange(d, dtype=cp.int64), (m, d)) if r == d else _topk_device(xd, int(r))
    if isinstance(u, (int, np.integer)):
        pick = _keyed_subset(int(u), m, int(r), int(k))
    else:
        pick = cp.asarray(floyd_sample(cp.asnumpy(u) if isinstance(u, cp.ndarray) else u, r))
    idx = cp.take_along_axis(top, pick, axis=1)
    if dense is not None:
        dense[...] = 0
        rows = cp.arange(m)[:, None]
        dense[rows, idx] = xd[rows, idx]
    return like_input(idx, x), True


def randk_indices(x, k: int, key: int):
    """Rand-k on the device: a uniform k-subset of ``range(d)`` per row of ``x`` from the counter ``key``."""
    m, d = x.shape
    return _keyed_subset(int(key), m, d, int(k))
