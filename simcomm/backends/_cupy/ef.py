"""Error-feedback kernel on the GPU: ``P = G + M``, the top-r set of each row of ``P`` and its squared norms."""

from simcomm.backends._cupy._host import like_input, to_device
from simcomm.backends._cupy.select import topk_indices

__all__ = ["ef_accumulate_topr"]


def ef_accumulate_topr(G, M, r: int, out=None):
    """``(P, top, sq)`` as in the numpy reference (same tie rule: lower index first); ``out`` receives ``P``."""
    Gd, Md = to_device(G, M)
    P = Gd + Md
    top, sq = like_input(topk_indices(P, int(r)), G), like_input((P * P).sum(axis=1), G)
    if out is None:
        return like_input(P, G), top, sq
    out[...] = like_input(P, out)
    return out, top, sq
