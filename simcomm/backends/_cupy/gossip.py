r"""Gossip kernels on the GPU: circulant mixing by shifted adds, sparse mixing by a device CSR product."""

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import like_input, to_device

__all__ = ["shift_mix", "csr_mix"]


def shift_mix(X, shifts, weights):
    r"""Circulant mixing :math:`Y_i = \sum_t w_t X_{(i + h_t) \bmod n}`, terms added in ``shifts`` order."""
    (Xd,) = to_device(X)
    n = Xd.shape[0]
    out = cp.zeros_like(Xd)
    for h, w in zip(np.mod(np.asarray(shifts), n).tolist(), np.asarray(weights).tolist()):
        out[: n - h] += w * Xd[h:]
        out[n - h :] += w * Xd[:h]
    return like_input(out, X)


def csr_mix(indptr, indices, data, X):
    r"""Sparse mixing :math:`Y = W X` with ``W`` given by CSR arrays (cupyx.scipy.sparse)."""
    import cupyx.scipy.sparse as csp

    Xd, ip, ix, dt = to_device(X, indptr, indices, data)
    X2 = Xd.reshape(Xd.shape[0], -1)
    n = ip.shape[0] - 1
    W = csp.csr_matrix((dt.astype(X2.dtype), ix, ip), shape=(n, X2.shape[0]))
    return like_input((W @ X2).reshape((n,) + Xd.shape[1:]), X)
