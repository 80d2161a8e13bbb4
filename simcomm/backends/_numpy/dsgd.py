r"""Decentralized SGD kernels, numpy reference: one fused adapt-then-combine (ATC) momentum step.

With local momentum (papers/exponential_graph.md (d)), for every node ``i``::

    m_i <- beta * m_i + g_i          # local buffer, NOT averaged
    y_i <- x_i - lr * m_i            # adapt
    x_i <- sum_j W_ij y_j            # combine

The combine sums the neighbours in the order the mixing weights are listed and starts from 0.0,
exactly like :func:`simcomm.backends._numpy.gossip.shift_mix` / ``csr_mix``, so a real process that
receives its neighbours' ``y_j`` and adds ``W_ij * y_j`` in that order reproduces the simulator.
``M`` is updated in place and the new iterates are written to ``out``.
"""

from __future__ import annotations

import numpy as np

from simcomm.backends._numpy.gossip import csr_mix, shift_mix

__all__ = ["atc_shift_step", "atc_csr_step", "pushsum_shift_step", "choco_shift_step", "gt_shift_step",
           "choco_sparse_step", "choco_diff"]


def _adapt(X, M, G, lr, beta):
    # m <- beta m + g (in place), y <- x - lr m; the same two roundings as the numba kernel
    np.multiply(M, beta, out=M)
    M += G
    Y = np.multiply(M, lr)
    np.subtract(X, Y, out=Y)
    return Y


def atc_shift_step(X, M, G, lr, beta, shifts, weights, out):
    r"""ATC momentum step with a 1-D circulant ``W`` (``W[i, i + h_t] = w_t``); see the module doc.

    Parameters
    ----------
    X, M, G : ndarray, shape (n, d)
        Iterates, momentum buffers (updated in place) and stochastic gradients, one row per node.
    lr, beta : float
        Step size and momentum.
    shifts : ndarray of int64, shape (m,)
        Offsets :math:`h_t` (reduced mod n), self offset included.
    weights : ndarray of float64, shape (m,)
    out : ndarray, shape (n, d)
        Receives the new iterates (must not alias ``X``, ``M`` or ``G``).

    Returns
    -------
    ndarray
        ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> X, M, G = np.arange(4.0)[:, None], np.zeros((4, 1)), np.ones((4, 1))
    >>> atc_shift_step(X, M, G, 0.5, 0.0, np.array([0, 1]), np.array([0.5, 0.5]), np.empty((4, 1))).ravel()
    array([0., 1., 2., 1.])
    """
    out[...] = shift_mix(_adapt(X, M, G, lr, beta), shifts, weights)
    return out


def atc_csr_step(X, M, G, lr, beta, indptr, indices, data, out):
    r"""ATC momentum step with a CSR ``W``; see :func:`atc_shift_step`.

    Examples
    --------
    >>> import numpy as np
    >>> X, M, G = np.array([[0.0], [2.0]]), np.zeros((2, 1)), np.ones((2, 1))
    >>> atc_csr_step(X, M, G, 1.0, 0.0, np.array([0, 2, 4]), np.array([0, 1, 0, 1]), np.full(4, 0.5),
    ...              np.empty((2, 1))).ravel()
    array([0., 0.])
    """
    out[...] = csr_mix(indptr, indices, data, _adapt(X, M, G, lr, beta))
    return out


def pushsum_shift_step(X, w, G, lr, shifts, weights, out, wout):
    r"""One push-sum SGD step on a shift pattern with per-node weights (column stochastic ``W``).

    Numerators and weights are mixed by the same ``W`` (Kempe et al. 2003; SGP, Assran et al. 2019)::

        x_i <- sum_t W[i, i + h_t] (x_{i+h_t} - lr g_{i+h_t})      # numerators: adapt, then push
        w_i <- sum_t W[i, i + h_t] w_{i+h_t}                        # push-sum weights

    and the de-biased model is the ratio ``z_i = x_i / w_i`` (computed by the caller).

    Parameters
    ----------
    X, G : ndarray, shape (n, d)
        Numerators and the gradients at the de-biased models ``z`` (zero for plain consensus).
    w : ndarray, shape (n,)
        Push-sum weights.
    lr : float
    shifts : ndarray of int64, shape (m,)
    weights : ndarray of float64, shape (m, n)
        ``W[i, i + h_t] = weights[t, i]``.
    out : ndarray, shape (n, d)
        Receives the new numerators (must not alias ``X`` or ``G``).
    wout : ndarray, shape (n,)
        Receives the new weights (must not alias ``w``).

    Returns
    -------
    (ndarray, ndarray)
        ``out, wout``.

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[0.5, 0.5], [0.5, 0.5]])   # n = 2, self and the other node
    >>> x, wt = pushsum_shift_step(np.array([[0.0], [4.0]]), np.ones(2), np.zeros((2, 1)), 0.1,
    ...                            np.array([0, 1]), W, np.empty((2, 1)), np.empty(2))
    >>> x.ravel(), wt
    (array([2., 2.]), array([1., 1.]))
    """
    from simcomm.backends._numpy.gossip import node_shift_mix

    Y = np.multiply(G, lr)
    np.subtract(X, Y, out=Y)
    out[...] = node_shift_mix(Y, shifts, weights)
    wout[...] = node_shift_mix(w, shifts, weights)
    return out, wout


def choco_shift_step(Xh, Xhat, Q, gamma, shifts, weights, out):
    r"""CHOCO's public-copy update and consensus step with a 1-D circulant ``W`` (Koloskova et al. 2019).

    ::

        xhat_i <- xhat_i + q_i                                       # in place: every copy of node i
        x_i    <- xh_i + gamma * (sum_t w_t xhat_{i+h_t} - xhat_i)    # sum from 0.0 in shifts order

    Parameters
    ----------
    Xh : ndarray, shape (n, d)
        The adapted iterates :math:`x^{(t+1/2)} = x - lr\,g` (``x`` itself for CHOCO-Gossip).
    Xhat : ndarray, shape (n, d)
        Public copies, updated in place.
    Q : ndarray, shape (n, d)
        The compressed differences :math:`Q(x^{(t+1/2)} - \hat x)` every node sent.
    gamma : float
        Consensus step.
    shifts : ndarray of int64, shape (m,)
    weights : ndarray of float64, shape (m,)
    out : ndarray, shape (n, d)
        Receives the new iterates (must not alias the inputs).

    Returns
    -------
    ndarray
        ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> Xhat = np.zeros((2, 1))
    >>> choco_shift_step(np.array([[0.0], [4.0]]), Xhat, np.array([[0.0], [4.0]]), 0.5, np.array([0, 1]),
    ...                  np.array([0.5, 0.5]), np.empty((2, 1))).ravel(), Xhat.ravel()
    (array([1., 3.]), array([0., 4.]))
    """
    Xhat += Q
    M = shift_mix(Xhat, shifts, weights)
    M -= Xhat
    M *= gamma
    np.add(Xh, M, out=out)
    return out


def gt_shift_step(X, Y, G, Gp, lr, shifts, weights, xout, yout, gout=None):
    r"""One ATC gradient-tracking step with a 1-D circulant ``W`` (:func:`simcomm.optim.gt_update`).

    ::

        y_i <- sum_t w_t ((y + g) - g_prev)_{i+h_t}       # tracker
        x_i <- sum_t w_t (x - lr y_new)_{i+h_t}

    each sum from 0.0 in the order of ``shifts`` (as :func:`shift_mix`).

    Parameters
    ----------
    X, Y, G, Gp : ndarray, shape (n, d)
        Iterates, trackers, gradients at ``X`` and the gradients of the previous step.
    lr : float
    shifts : ndarray of int64, shape (m,)
    weights : ndarray of float64, shape (m,)
    xout, yout : ndarray, shape (n, d)
        Receive the new iterates and trackers (must not alias the inputs).
    gout : ndarray, shape (n, d), optional
        Receives a copy of ``G`` (the next step's ``Gp``; the numba kernel writes it in the same pass).

    Returns
    -------
    (ndarray, ndarray)
        ``xout, yout``.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros((2, 1))
    >>> x, y = gt_shift_step(z, z, np.array([[2.0], [0.0]]), z, 1.0, np.array([0, 1]), np.array([0.5, 0.5]),
    ...                      np.empty((2, 1)), np.empty((2, 1)))
    >>> x.ravel(), y.ravel()
    (array([-1., -1.]), array([1., 1.]))
    """
    T = Y + G
    T -= Gp
    yout[...] = shift_mix(T, shifts, weights)
    S = np.multiply(yout, lr)
    np.subtract(X, S, out=S)
    xout[...] = shift_mix(S, shifts, weights)
    if gout is not None:
        gout[...] = G
    return xout, yout


def choco_sparse_step(X, G, lr, Xhat, idx, vals, gamma, shifts, weights, hat_out, out):
    r"""CHOCO's step from a sparse message with a 1-D circulant ``W``: :func:`choco_shift_step` without a dense ``Q``.

    ::

        xhat'_i = xhat_i + q_i            # q_i: vals[i] at idx[i], +0.0 elsewhere (as a dense top-k)
        x_i    <- (x_i - lr g_i) + gamma * (sum_t w_t xhat'_{i+h_t} - xhat'_i)

    the same operations in the same order as ``xh = x - lr g``, a dense ``Q`` and :func:`choco_shift_step`,
    so the same values bit for bit.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Iterates.
    G : ndarray, shape (n, d), or None
        Gradients at ``X`` (``None``: CHOCO-Gossip, ``xh = x``).
    lr : float
    Xhat : ndarray, shape (n, d)
        Public copies (read only).
    idx : ndarray of int64, shape (n, k)
        Every row's sent coordinates, ascending, distinct.
    vals : ndarray, shape (n, k)
        The sent values.
    gamma : float
    shifts : ndarray of int64, shape (m,)
    weights : ndarray of float64, shape (m,)
    hat_out, out : ndarray, shape (n, d)
        Receive the new public copies and the new iterates (must not alias the inputs or each other).

    Returns
    -------
    (ndarray, ndarray)
        ``out, hat_out``.

    Examples
    --------
    >>> import numpy as np
    >>> x, h = choco_sparse_step(np.array([[0.0, 1.0], [4.0, 0.0]]), None, 0.0, np.zeros((2, 2)),
    ...                          np.array([[1], [0]]), np.array([[1.0], [4.0]]), 0.5, np.array([0, 1]),
    ...                          np.array([0.5, 0.5]), np.empty((2, 2)), np.empty((2, 2)))
    >>> x.tolist(), h.tolist()
    ([[1.0, 0.75], [3.0, 0.25]], [[0.0, 1.0], [4.0, 0.0]])
    """
    Q = np.zeros_like(Xhat)
    np.put_along_axis(Q, idx, vals, axis=1)
    np.add(Xhat, Q, out=hat_out)
    M = shift_mix(hat_out, shifts, weights)
    M -= hat_out
    M *= gamma
    Xh = X if G is None else X - lr * G
    np.add(Xh, M, out=out)
    return out, hat_out


def choco_diff(X, G, lr, Xhat, r0, out):
    r"""Rows ``r0:r0 + m`` of CHOCO's difference :math:`(x - lr\,g) - \hat x` into ``out`` (shape ``(m, d)``).

    ``G`` ``None``: :math:`x - \hat x`. The operations of the dense step (``xh = x - lr g``, then
    ``xh - xhat``), so the same bits. Returns ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> choco_diff(np.ones((3, 2)), np.ones((3, 2)), 0.5, np.zeros((3, 2)), 1, np.empty((2, 2))).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    r1 = r0 + out.shape[0]
    if G is None:
        return np.subtract(X[r0:r1], Xhat[r0:r1], out=out)
    np.multiply(G[r0:r1], lr, out=out)
    np.subtract(X[r0:r1], out, out=out)
    return np.subtract(out, Xhat[r0:r1], out=out)
