"""Error-feedback kernel on the GPU: ``P = G + M``, the top-r set of each row of ``P`` and its squared norms."""

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import like_input, to_device
from simcomm.backends._cupy.select import topk_indices

__all__ = ["ef_accumulate_topr", "ef_send"]


def ef_accumulate_topr(G, M, r: int, out=None):
    """``(P, top, sq)`` as in the numpy reference (same tie rule: lower index first); ``out`` receives ``P``."""
    Gd, Md = to_device(G, M)
    P = Gd + Md
    top, sq = like_input(topk_indices(P, int(r)), G), like_input((P * P).sum(axis=1), G)
    if out is None:
        return like_input(P, G), top, sq
    out[...] = like_input(P, out)
    return out, top, sq


def ef_send(P, idx, theta, lr: float):
    """``(vals, upd, theta_new)`` as in the numpy reference, ``P`` updated in place (host or device).

    The server sum uses ``cupy.bincount`` (atomic adds), so ``upd`` agrees with the reference to
    rounding, not bit for bit, when workers send the same coordinate.
    """
    Pd, idxd, thd = to_device(P, idx, theta)
    n, D = Pd.shape
    rows = cp.arange(n)[:, None]
    vals = Pd[rows, idxd]
    Pd[rows, idxd] = 0.0
    if isinstance(P, np.ndarray):
        P[...] = cp.asnumpy(Pd)
    upd = cp.bincount(idxd.ravel(), weights=vals.ravel(), minlength=D) / n
    return like_input(vals, P), like_input(upd, P), like_input(thd - upd * lr, P)
