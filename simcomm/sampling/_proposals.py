r"""Sampling proposals over training examples and the importance-sampled minibatch.

A proposal is a probability vector :math:`q` over the :math:`N` training examples. The master draws
:math:`I_1, \dots, I_M \sim q` i.i.d. (with replacement) and reweights example :math:`I_m` by
:math:`1/(N q_{I_m})`, so that :math:`\hat g = \frac1M \sum_m g_{I_m}/(N q_{I_m})` is unbiased for
:math:`\bar g = \frac1N\sum_n g_n` whenever every :math:`q_n > 0` (papers/importance_sampling.md B1, C1 [N]).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError

__all__ = ["Minibatch", "uniform_proposal", "norm_proposal", "ideal_proposal", "sample_minibatch", "importance_weights"]


class Minibatch(NamedTuple):
    """Indices drawn from a proposal and their importance weights.

    Attributes
    ----------
    idx : numpy.ndarray
        Int64 example indices, shape ``(M,)`` (repeats possible: drawn with replacement).
    weights : numpy.ndarray
        :math:`1/(N q_{I_m})`, shape ``(M,)``; all ones for the uniform proposal.
    max_weight : float
        The largest weight in this minibatch (logged: large weights make steps on rare examples large).
    """

    idx: np.ndarray
    weights: np.ndarray
    max_weight: float


def uniform_proposal(n_examples: int) -> np.ndarray:
    """The uniform proposal :math:`q_n = 1/N` over ``n_examples`` = :math:`N` examples (plain SGD).

    Examples
    --------
    >>> uniform_proposal(4)
    array([0.25, 0.25, 0.25, 0.25])
    """
    if isinstance(n_examples, bool) or not isinstance(n_examples, (int, np.integer)) or n_examples < 1:
        raise UserError(f"n_examples = {n_examples!r} must be a positive number of examples")
    return np.full(int(n_examples), 1.0 / n_examples)


def norm_proposal(scores, *, smoothing: float = 0.0) -> np.ndarray:
    r"""Proposal proportional to ``scores + smoothing`` (B5, B6: :math:`q_n \propto \omega_n + c`).

    ``scores`` are per-example gradient norms, fresh (the ideal proposal) or stale (computed by workers
    at older parameters). The smoothing constant :math:`c \ge 0` keeps every :math:`q_n > 0` and bounds
    the largest weight by :math:`(S + Nc)/(Nc)` with :math:`S = \sum_n \omega_n`.

    Parameters
    ----------
    scores : array_like
        Non-negative finite scores, shape ``(N,)``.
    smoothing : float, default 0.0
        Additive constant :math:`c \ge 0`.

    Returns
    -------
    numpy.ndarray
        Probabilities, shape ``(N,)``, summing to 1, all positive.

    Raises
    ------
    UserError
        Negative smoothing; negative or non-finite scores; ``smoothing = 0`` while some score is 0
        (that example would get :math:`q_n = 0` and the estimator would be biased).

    Examples
    --------
    >>> norm_proposal([1.0, 3.0])
    array([0.25, 0.75])
    >>> norm_proposal([0.0, 2.0], smoothing=1.0)
    array([0.25, 0.75])
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise UserError(f"scores must be a non-empty 1-d array, got shape {s.shape}")
    if not (np.isfinite(smoothing) and smoothing >= 0):
        raise UserError(f"smoothing = {smoothing} must be a finite number >= 0 (it is added to every score)")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise UserError("scores must be finite and >= 0 (they are gradient norms)")
    w = s + smoothing
    if np.any(w <= 0):
        n0 = int(np.count_nonzero(w <= 0))
        raise UserError(
            f"{n0} example(s) have score 0 and smoothing is 0, so q_i = 0 would bias the estimator; use smoothing > 0"
        )
    return w / w.sum()


def ideal_proposal(norms) -> np.ndarray:
    r"""The variance-optimal proposal :math:`q^*_n = \|g_n\| / \sum_m \|g_m\|` (C3).

    Examples
    --------
    >>> ideal_proposal([1.0, 1.0, 2.0])
    array([0.25, 0.25, 0.5 ])
    """
    return norm_proposal(norms, smoothing=0.0)


def importance_weights(q) -> np.ndarray:
    r"""Reweighting factors :math:`1/(N q_n)` (all ones for the uniform proposal).

    Examples
    --------
    >>> importance_weights([0.25, 0.75])
    array([2.        , 0.66666667])
    """
    q = np.asarray(q, dtype=np.float64)
    return 1.0 / (q.size * q)


def sample_minibatch(q, batch_size: int, *, max_batch: int | None = None, rng=None) -> Minibatch:
    r"""Draw ``batch_size`` indices i.i.d. from ``q`` (with replacement) with weights :math:`1/(N q_I)`.

    Parameters
    ----------
    q : array_like
        Proposal, shape ``(N,)``, positive, summing to 1.
    batch_size : int
        :math:`M`, between 1 and ``max_batch``.
    max_batch : int, optional
        Largest allowed minibatch; default :math:`N`.
    rng : numpy.random.Generator or seed, optional
        Source of randomness (inverse-CDF sampling from ``rng.random``).

    Returns
    -------
    Minibatch

    Raises
    ------
    UserError
        ``batch_size`` outside ``1..max_batch``, or ``q`` not a positive probability vector.

    Examples
    --------
    >>> mb = sample_minibatch([0.25, 0.25, 0.25, 0.25], 3, rng=0)
    >>> mb.weights.tolist(), mb.max_weight
    ([1.0, 1.0, 1.0], 1.0)
    >>> sample_minibatch([0.2, 0.8], 2, rng=0).weights.round(3).tolist()
    [0.625, 0.625]
    """
    q = np.asarray(q, dtype=np.float64)
    n = q.size
    limit = n if max_batch is None else int(max_batch)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or not 1 <= batch_size <= limit:
        raise UserError(
            f"batch_size = {batch_size!r} must be an integer between 1 and {limit} (the largest allowed minibatch)"
        )
    if q.ndim != 1 or not np.all(q > 0) or abs(q.sum() - 1.0) > 1e-9:
        raise UserError("q must be a 1-d vector of positive probabilities summing to 1")
    rng = np.random.default_rng(rng)
    cdf = np.cumsum(q)
    idx = np.searchsorted(cdf, rng.random(batch_size) * cdf[-1], side="right")
    idx = np.minimum(idx, n - 1).astype(np.int64)  # guards u * cdf[-1] == cdf[-1] after rounding
    w = 1.0 / (n * q[idx])
    return Minibatch(idx, w, float(w.max()))
