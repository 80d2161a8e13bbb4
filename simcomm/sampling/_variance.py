r"""Exact and empirical :math:`\mathrm{Tr\,Cov}` of the importance-sampled gradient estimator.

For one draw :math:`I \sim q`, :math:`\mathrm{Tr\,Cov}(\hat g) = \frac1{N^2}\sum_n \|g_n\|^2/q_n - \|\bar g\|^2`
(papers/importance_sampling.md B4, C2 [N]); a minibatch of :math:`M` i.i.d. draws divides it by
:math:`M` (C4). Only the per-example gradient *norms* and the full gradient enter, so the exact value
needs one pass of :func:`simcomm.models.per_example_grad_norms` over the data, not the gradients.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError

__all__ = ["trace_cov", "trace_cov_ideal", "empirical_trace_cov"]


def _check_m(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise UserError(f"batch_size = {batch_size!r} must be a positive integer")


def trace_cov(norms, q, mean_grad, *, batch_size: int = 1) -> float:
    r"""Exact :math:`\mathrm{Tr\,Cov}(\hat g_q^{(M)}) = (\frac1{N^2}\sum_n \|g_n\|^2/q_n - \|\bar g\|^2)/M`.

    Parameters
    ----------
    norms : array_like
        :math:`\|g_n\|` at the current parameters, shape ``(N,)``.
    q : array_like
        Proposal used for sampling and reweighting, shape ``(N,)``, positive.
    mean_grad : array_like
        :math:`\bar g`, flat.
    batch_size : int, default 1
        :math:`M` i.i.d. draws per minibatch.

    Returns
    -------
    float

    Examples
    --------
    >>> trace_cov([1.0, 3.0], [0.5, 0.5], [2.0])  # uniform: (1 + 9)/2 - 4
    1.0
    """
    _check_m(batch_size)
    a = np.asarray(norms, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    g = np.asarray(mean_grad, dtype=np.float64)
    n = a.size
    return float((np.sum(a * a / q) / (n * n) - np.vdot(g, g)) / batch_size)


def trace_cov_ideal(norms, mean_grad, *, batch_size: int = 1) -> float:
    r"""Minimum over proposals (C3 [N]): :math:`((\frac1N\sum_n\|g_n\|)^2 - \|\bar g\|^2)/M`.

    Examples
    --------
    >>> trace_cov_ideal([1.0, 3.0], [2.0])
    0.0
    """
    _check_m(batch_size)
    a = np.asarray(norms, dtype=np.float64)
    g = np.asarray(mean_grad, dtype=np.float64)
    return float((a.mean() ** 2 - np.vdot(g, g)) / batch_size)


def empirical_trace_cov(estimates, mean_grad) -> float:
    r"""Monte-Carlo :math:`\mathbb{E}\|\hat g - \bar g\|^2` from rows of sampled estimates ``(K, D)``.

    Examples
    --------
    >>> empirical_trace_cov([[1.0, 0.0], [-1.0, 0.0]], [0.0, 0.0])
    1.0
    """
    e = np.asarray(estimates, dtype=np.float64) - np.asarray(mean_grad, dtype=np.float64)
    return float(np.mean(np.einsum("kd,kd->k", e, e)))
