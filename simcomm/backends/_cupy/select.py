"""Selection kernels on the GPU, same names, signatures and tie rules as the numpy reference.

``topk_indices`` is a selection (``cupy.partition`` for the k-th magnitude, then a mask with the
lower-index tie rule). Floyd's algorithm is inherently sequential in ``k``; its inputs (uniforms) live
on the host, so it runs there with the numba kernel and only the indices are copied.
"""

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import like_input, to_device

__all__ = ["topk_indices", "floyd_sample", "rtopk_indices"]


def topk_indices(x, k: int):
    """Indices of the ``k`` largest ``|x|`` of each row, ascending; ties go to the lower index."""
    (xd,) = to_device(x)
    a = cp.abs(xd)
    m, d = a.shape
    if k == d:
        return like_input(cp.broadcast_to(cp.arange(d, dtype=cp.int64), (m, d)).copy(), x)
    t = cp.partition(a, d - k, axis=1)[:, d - k : d - k + 1]
    above = a > t
    tied = a == t
    need = k - above.sum(axis=1, keepdims=True)
    keep = above | (tied & (cp.cumsum(tied, axis=1) <= need))
    return like_input(cp.nonzero(keep)[1].reshape(m, k).astype(cp.int64, copy=False), x)


def floyd_sample(u, d: int):
    """Uniform k-subsets of ``range(d)`` by Floyd's algorithm (host numba kernel; see module doc)."""
    from simcomm.backends._numba.select import floyd_sample as host_floyd

    out = host_floyd(np.ascontiguousarray(cp.asnumpy(u) if isinstance(u, cp.ndarray) else u), d)
    return like_input(cp.asarray(out), u)


def rtopk_indices(x, k: int, r: int, u):
    """rTop-k: a uniform k-subset (Floyd on ``u``) of the top-r indices of each row."""
    (xd,) = to_device(x)
    m, d = xd.shape
    top = cp.broadcast_to(cp.arange(d, dtype=cp.int64), (m, d)) if r == d else topk_indices(xd, r)
    pick = cp.asarray(floyd_sample(cp.asnumpy(u) if isinstance(u, cp.ndarray) else u, r))
    return like_input(cp.take_along_axis(top, pick, axis=1), x)
