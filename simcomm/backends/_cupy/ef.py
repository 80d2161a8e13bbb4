r"""Error-feedback kernels on the GPU: ``P = G + M`` with its row norms in one pass, the top-r set, the send.

``ef_accumulate_topr`` writes ``P`` and the squared row norms in one fused pass (per-row partial sums
added atomically: equal to the reference within rounding), then selects the top-r set with the radix
select of :mod:`.select` (the reference's indices exactly). ``ef_send`` reads and zeroes the sent entries
and adds them into the server's sum in one pass (atomic adds: ``upd`` equals the reference within
rounding when workers send the same coordinate). Host arrays go to the numpy reference for the send
(it is O(n k + D) and deterministic there).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import ROWS_PER_LAUNCH, as_rows, col_blocks, grid_1d, like_input
from simcomm.backends._cupy._src import kernel
from simcomm.backends._cupy.select import _topk_device

__all__ = ["ef_accumulate_topr", "ef_send"]


def _accumulate(Gd, Md, P):
    n, D = Gd.shape
    sq = cp.zeros(n, dtype=cp.float64)
    if Gd.size:
        k = kernel("ef_accum", Gd.dtype)
        for r0 in range(0, n, ROWS_PER_LAUNCH):
            r1 = min(n, r0 + ROWS_PER_LAUNCH)
            k((col_blocks(D, r1 - r0), r1 - r0), (256,), (Gd[r0:r1], Md[r0:r1], np.int64(D), P[r0:r1], sq[r0:r1]))
    return sq


def ef_accumulate_topr(G, M, r: int, out=None):
    """``(P, top, sq)`` as in the numpy reference (same tie rule: lower index first); ``out`` receives ``P``."""
    Gd = as_rows(G)
    Md = as_rows(cp.asarray(M, dtype=Gd.dtype))
    on_device = isinstance(G, cp.ndarray)
    P = out if on_device and isinstance(out, cp.ndarray) and out.flags.c_contiguous else cp.empty_like(Gd)
    sq = _accumulate(Gd, Md, P)  # P may alias G or M: each element is read before it is written
    top = _topk_device(P, int(r))
    if out is not None and out is not P:
        out[...] = P if isinstance(out, cp.ndarray) else cp.asnumpy(P)
        P = out
    return like_input(P, G), like_input(top, G), like_input(sq, G)


_FINISH = cp.ElementwiseKernel("float64 s, float64 n, float64 lr, T theta", "float64 upd, float64 out",
                               "upd = s / n; double step = upd * lr; out = theta - step;",
                               "simcomm_ef_finish", options=("--fmad=false",))


def ef_send(P, idx, theta, lr: float):
    """``(vals, upd, theta_new)`` as in the numpy reference, ``P`` updated in place."""
    if not isinstance(P, cp.ndarray):
        from simcomm.backends._numpy.ef import ef_send as host_send

        return host_send(P, np.asarray(cp.asnumpy(idx)), np.asarray(cp.asnumpy(theta)), lr)
    n, D = P.shape
    idxd = cp.ascontiguousarray(cp.asarray(idx, dtype=cp.int64))
    thd = cp.asarray(theta)
    k = idxd.shape[1]
    vals = cp.empty((n, k), dtype=P.dtype)
    s = cp.zeros(D, dtype=cp.float64)
    if idxd.size:
        kernel("ef_send", P.dtype)(*grid_1d(idxd.size, 1), (P, idxd, np.int64(D), np.int64(k), np.float64(1.0 / k),
                                                            np.int64(idxd.size), vals, s))
    upd, theta_new = _FINISH(s, float(n), float(lr), thd)
    return vals, upd, theta_new
