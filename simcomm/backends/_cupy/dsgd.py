r"""Decentralized SGD kernels on the GPU: the adapt-then-combine momentum step in two fused passes.

Pass 1 (adapt) reads ``X, M, G`` once and writes ``M`` and ``Y = X - lr M``; pass 2 mixes ``Y``
into ``out``. Same update and summation order as :mod:`simcomm.backends._numpy.dsgd`, no fused
multiply-add, so device arrays give numpy's values bit for bit. Host arrays are copied to the device
and back (``M`` and ``out`` are updated in place), which is correct but slow: keep the state on the
device (``run_dsgd(..., backend="cupy")`` does).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from simcomm.backends._cupy._host import grid_1d
from simcomm.backends._cupy._src import kernel
from simcomm.backends._cupy.gossip import csr_mix_into, shift_mix_into

__all__ = ["atc_shift_step", "atc_csr_step", "pushsum_shift_step", "choco_shift_step", "gt_shift_step",
           "choco_sparse_step", "choco_diff"]


def _adapt(X, M, G, lr, beta):
    """``(Md, Y)`` on the device; ``Md`` is ``M`` itself when ``M`` is a contiguous device array."""
    Xd, Gd = cp.ascontiguousarray(cp.asarray(X)), cp.ascontiguousarray(cp.asarray(G, dtype=X.dtype))
    Md = M if isinstance(M, cp.ndarray) and M.flags.c_contiguous else cp.ascontiguousarray(cp.asarray(M))
    Y = cp.empty_like(Xd)
    t = Xd.dtype.type
    if Xd.size:
        kernel("adapt", Xd.dtype)(*grid_1d(Xd.size), (Xd, Md, Gd, np.int64(Xd.size), t(lr), t(beta), Y))
    if Md is not M:
        M[...] = Md if isinstance(M, cp.ndarray) else cp.asnumpy(Md)
    return Y


def _target(out, like):
    return out if isinstance(out, cp.ndarray) and out.flags.c_contiguous else cp.empty_like(like)


def _store(res, out):
    if res is not out:
        out[...] = res if isinstance(out, cp.ndarray) else cp.asnumpy(res)
    return out


def atc_shift_step(X, M, G, lr, beta, shifts, weights, out):
    """ATC momentum step with a 1-D circulant ``W`` (see the numpy reference)."""
    Y = _adapt(X, M, G, lr, beta)
    return _store(shift_mix_into(Y, shifts, weights, _target(out, Y)), out)


def atc_csr_step(X, M, G, lr, beta, indptr, indices, data, out):
    """ATC momentum step with a CSR ``W`` (see the numpy reference)."""
    Y = _adapt(X, M, G, lr, beta)
    return _store(csr_mix_into(indptr, indices, data, Y, _target(out, Y)), out)


def pushsum_shift_step(X, w, G, lr, shifts, weights, out, wout):
    r"""Push-sum SGD step on a shift pattern with per-node weights; see the numpy backend (same order)."""
    from simcomm.backends._cupy.gossip import node_shift_mix

    Xd, Gd = cp.asarray(X), cp.asarray(G, dtype=X.dtype)
    Y = Gd * X.dtype.type(lr)
    Y = Xd - Y
    new_x, new_w = node_shift_mix(Y, shifts, weights), node_shift_mix(cp.asarray(w), shifts, weights)
    out[...] = new_x if isinstance(out, cp.ndarray) else cp.asnumpy(new_x)
    wout[...] = new_w if isinstance(wout, cp.ndarray) else cp.asnumpy(new_w)
    return out, wout


def choco_shift_step(Xh, Xhat, Q, gamma, shifts, weights, out):
    r"""CHOCO public-copy update and consensus step with a 1-D circulant ``W``; see the numpy backend (same order)."""
    Hd = Xhat if isinstance(Xhat, cp.ndarray) else cp.asarray(Xhat)
    Hd += cp.asarray(Q, dtype=Hd.dtype)
    M = shift_mix_into(Hd, shifts, weights, cp.empty_like(Hd))
    M -= Hd
    M *= Hd.dtype.type(gamma)
    res = cp.asarray(Xh) + M
    if Hd is not Xhat:
        Xhat[...] = cp.asnumpy(Hd)
    return _store(res, out)


def gt_shift_step(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout=None):
    r"""One ATC gradient-tracking step with a 1-D circulant ``W``; see the numpy backend (same order)."""
    Xd, Yd = cp.asarray(X), cp.asarray(Y)
    T = Yd + cp.asarray(G, dtype=Yd.dtype)
    T -= cp.asarray(Gp, dtype=Yd.dtype)
    ynew = shift_mix_into(cp.ascontiguousarray(T), shifts, weights, cp.empty_like(T))
    S = ynew * Xd.dtype.type(lr)
    S = Xd - S
    xnew = shift_mix_into(cp.ascontiguousarray(S), shifts, weights, cp.empty_like(S))
    _store(ynew, yout)
    _store(xnew, xout)
    if gout is not None:
        _store(cp.asarray(G, dtype=Yd.dtype), gout)
    return xout, yout


def choco_sparse_step(X, G, lr, Xhat, idx, vals, gamma, shifts, weights, hat_out, out):
    r"""CHOCO's step from a sparse message with a 1-D circulant ``W``; see the numpy backend (same order)."""
    Hd = cp.asarray(Xhat)
    Q = cp.zeros_like(Hd)
    Q[cp.arange(Q.shape[0])[:, None], cp.asarray(idx)] = cp.asarray(vals, dtype=Hd.dtype)
    Hn = Hd + Q
    M = shift_mix_into(Hn, shifts, weights, cp.empty_like(Hn))
    M -= Hn
    M *= Hd.dtype.type(gamma)
    Xd = cp.asarray(X)
    Xh = Xd if G is None else Xd - cp.asarray(G, dtype=Xd.dtype) * Xd.dtype.type(lr)
    _store(Hn, hat_out)
    _store(Xh + M, out)
    return out, hat_out


def choco_diff(X, G, lr, Xhat, r0, out):
    r"""Rows ``r0:r0 + m`` of CHOCO's difference ``(x - lr g) - xhat``; see the numpy backend (same order)."""
    r1 = r0 + out.shape[0]
    Xd = cp.asarray(X[r0:r1])
    Xh = Xd if G is None else Xd - cp.asarray(G[r0:r1], dtype=Xd.dtype) * Xd.dtype.type(lr)
    return _store(Xh - cp.asarray(Xhat[r0:r1], dtype=Xd.dtype), out)
