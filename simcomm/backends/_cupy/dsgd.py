r"""Decentralized SGD kernels on the GPU: the fused adapt-then-combine momentum step.

Same update and summation order as :mod:`simcomm.backends._numpy.dsgd`; ``M`` is updated in place
(on the device when it is a CuPy array, else copied back) and the new iterates are written to ``out``.
"""

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import to_device
from simcomm.backends._cupy.gossip import csr_mix, shift_mix

__all__ = ["atc_shift_step", "atc_csr_step"]


def _adapt(X, M, G, gamma, beta):
    Xd, Md, Gd = to_device(X, M, G)
    Md *= beta
    Md += Gd
    if isinstance(M, np.ndarray):
        M[...] = cp.asnumpy(Md)
    return Xd - Md * gamma


def _store(Y, out):
    if isinstance(out, np.ndarray):
        out[...] = cp.asnumpy(Y)
    else:
        out[...] = Y
    return out


def atc_shift_step(X, M, G, gamma, beta, shifts, weights, out):
    """ATC momentum step with a 1-D circulant ``W`` (see the numpy reference)."""
    return _store(shift_mix(_adapt(X, M, G, gamma, beta), shifts, weights), out)


def atc_csr_step(X, M, G, gamma, beta, indptr, indices, data, out):
    """ATC momentum step with a CSR ``W`` (see the numpy reference)."""
    return _store(csr_mix(indptr, indices, data, _adapt(X, M, G, gamma, beta)), out)
