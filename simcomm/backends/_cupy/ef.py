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
    """``(vals, upd, theta_new)`` as in the numpy reference, ``P`` updated in place.

    Host arrays (what :func:`simcomm.optim.ef_sgd` passes) go to the numpy reference: the step is
    O(n k + D) and deterministic there. Device arrays stay on the device; the server sum then uses
    ``cupy.bincount`` (atomic adds), so ``upd`` agrees with the reference to rounding, not bit for bit,
    when workers send the same coordinate.
    """
    if isinstance(P, np.ndarray):
        from simcomm.backends._numpy.ef import ef_send as host_send

        return host_send(P, np.asarray(cp.asnumpy(idx)), np.asarray(cp.asnumpy(theta)), lr)
    idxd, thd = to_device(idx, theta)
    n, D = P.shape
    rows = cp.arange(n)[:, None]
    vals = P[rows, idxd]
    P[rows, idxd] = 0.0
    upd = cp.bincount(idxd.ravel(), weights=vals.ravel(), minlength=D) / n
    return vals, upd, thd - upd * lr
