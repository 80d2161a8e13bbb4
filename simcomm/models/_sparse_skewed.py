r"""The sparse skewed gradient model (rtopk.md F1) and a continuous sparse heavy-tailed variant.

**Provenance.** The rTop-k paper's exact statistical model could not be read (rtopk.md section 0,
item B3 is [X]). This module implements the notes' stand-in model F1, tagged [N]: it is *derived and
checked here, not quoted from the paper*. It reproduces the seed summary's rate
:math:`O(s^2 \log d / (n k))` and is used only to exercise that scaling.

Model F1 [N]: a parameter :math:`\theta \in [0, 1]^d` with :math:`\sum_j \theta_j = s` and a skewed
profile: on a uniformly random support of :math:`m = \min(d, \lceil c\, s \rceil)` coordinates
(``support = c``), the :math:`j`-th largest entry is :math:`\min(1, \lambda j^{-\alpha})`, with
:math:`\lambda` chosen so that the entries sum to :math:`s` exactly (a water-filling: the largest
entries are capped at 1). Node :math:`i` observes :math:`X_i \in \{0, 1\}^d` with independent
:math:`X_{ij} \sim \mathrm{Bernoulli}(\theta_j)`, so :math:`\mathbb{E}|S_i| = s` for
:math:`S_i = \mathrm{supp}(X_i)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcomm._errors import UserError

__all__ = ["SparseSkewedModel", "skewed_profile", "sparse_skewed_model", "sample_bernoulli", "sparse_heavy_tailed"]


def _check_model_args(d, s, alpha, support) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise UserError(f"d must be an integer >= 1, got {d!r}")
    if not (isinstance(s, (int, float, np.integer, np.floating)) and 0 < s <= d):
        raise UserError(f"s = {s!r} is out of range; use 0 < s <= d = {d}")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise UserError(f"alpha = {alpha!r} must be a finite number >= 0")
    if not (math.isfinite(support) and support >= 1):
        raise UserError(f"support = {support!r} must be >= 1 (the support holds support * s coordinates)")
    return min(int(d), math.ceil(support * s))


def skewed_profile(m: int, s: float, alpha: float) -> np.ndarray:
    r"""Sorted skewed profile: :math:`\theta_{(j)} = \min(1, \lambda j^{-\alpha})`, summing to ``s``.

    Parameters
    ----------
    m : int
        Number of nonzero entries, ``m >= s``.
    s : float
        Their sum (the expected support size of an observation), ``0 < s <= m``.
    alpha : float
        Power-law exponent, ``alpha >= 0`` (0 is flat).

    Returns
    -------
    numpy.ndarray, shape (m,)
        Non-increasing entries in ``(0, 1]`` with sum ``s`` (to rounding).

    Examples
    --------
    >>> p = skewed_profile(8, 2.0, 1.0)
    >>> round(float(p.sum()), 12), bool(p[0] <= 1.0), bool(np.all(np.diff(p) <= 0))
    (2.0, True, True)
    >>> skewed_profile(4, 4, 2.0).tolist()  # s = m: every entry is capped at 1
    [1.0, 1.0, 1.0, 1.0]
    """
    w = np.arange(1, m + 1, dtype=np.float64) ** (-float(alpha))
    # Water-filling: with the first p entries capped at 1, lambda_p = (s - p) / sum_{j > p} w_j.
    # The answer is the smallest p with lambda_p * w_{p+1} <= 1 (lambda_p is increasing in p).
    tail = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])  # tail[p] = sum_{j >= p} w_j (0-based)
    for p in range(m):
        lam = (s - p) / tail[p]
        if lam * w[p] <= 1.0:
            return np.concatenate([np.ones(p), lam * w[p:]])
    return np.ones(m)


@dataclass(frozen=True)
class SparseSkewedModel:
    r"""A draw of model F1 [N]: the parameter ``theta`` and its support in skew order.

    Attributes
    ----------
    theta : numpy.ndarray, shape (d,)
        Bernoulli means, zero off the support, summing to ``s``.
    support : numpy.ndarray of int64, shape (m,)
        Support coordinates, largest ``theta`` first (the fixed skew ordering).
    s, alpha, support_factor : float
        The parameters the model was built from.
    """

    theta: np.ndarray
    support: np.ndarray
    s: float
    alpha: float
    support_factor: float

    @property
    def d(self) -> int:
        """Dimension."""
        return int(self.theta.shape[0])

    @property
    def order(self) -> np.ndarray:
        """All coordinates in skew order: the support first (largest theta first), then the rest."""
        rest = np.setdiff1d(np.arange(self.d), self.support, assume_unique=True)
        return np.concatenate([self.support, rest])


def sparse_skewed_model(d: int, s: float, *, alpha: float = 1.0, support: float = 4.0, rng) -> SparseSkewedModel:
    r"""Draw the sparse skewed model F1 [N]: :func:`skewed_profile` placed on a random support.

    Parameters
    ----------
    d : int
        Dimension.
    s : float
        Sparsity, :math:`\sum_j \theta_j = s`, ``0 < s <= d``.
    alpha : float, default 1.0
        Power-law exponent of the profile (skewness).
    support : float, default 4.0
        The support holds ``min(d, ceil(support * s))`` coordinates (rtopk.md F1 uses 4).
    rng : numpy.random.Generator or seed
        Draws the support's position.

    Returns
    -------
    SparseSkewedModel

    Raises
    ------
    UserError
        If ``s > d`` or another argument is out of range.

    Examples
    --------
    >>> model = sparse_skewed_model(100, 5, rng=0)
    >>> model.support.shape, round(float(model.theta.sum()), 12)
    ((20,), 5.0)
    """
    m = _check_model_args(d, s, alpha, support)
    rng = np.random.default_rng(rng)
    idx = rng.choice(int(d), size=m, replace=False).astype(np.int64)
    theta = np.zeros(int(d))
    theta[idx] = skewed_profile(m, float(s), float(alpha))
    return SparseSkewedModel(theta, idx, float(s), float(alpha), float(support))


def sample_bernoulli(model: SparseSkewedModel, n: int, *, rng, size: tuple = ()) -> np.ndarray:
    r"""Observations of ``n`` nodes: :math:`X_{ij} \sim \mathrm{Bernoulli}(\theta_j)` independently.

    Parameters
    ----------
    model : SparseSkewedModel
    n : int
        Number of nodes.
    rng : numpy.random.Generator or seed
    size : tuple of int, default ()
        Leading batch shape (e.g. replicates).

    Returns
    -------
    numpy.ndarray of bool, shape ``size + (n, d)``

    Examples
    --------
    >>> X = sample_bernoulli(sparse_skewed_model(50, 3, rng=0), 4, rng=1, size=(2,))
    >>> X.shape, X.dtype.name
    ((2, 4, 50), 'bool')
    """
    rng = np.random.default_rng(rng)
    return rng.random(tuple(size) + (int(n), model.d)) < model.theta


def sparse_heavy_tailed(d: int, nnz: int, *, alpha: float = 1.0, profile: str = "pareto", rng,
                        size: tuple = ()) -> np.ndarray:
    r"""Continuous sparse skewed vectors for operator-level experiments.

    ``nnz`` coordinates at uniformly random positions carry random signs and magnitudes:

    * ``profile="pareto"``: i.i.d. Pareto magnitudes :math:`|x| = U^{-1/\alpha}` (heavy tail; the
      variance is infinite for :math:`\alpha \le 2`);
    * ``profile="powerlaw"``: the deterministic magnitudes :math:`j^{-\alpha}`, ``j = 1..nnz`` (so
      :math:`\|x\|^2` and :math:`\|\mathrm{top}_r(x)\|^2` are known in closed form).

    Parameters
    ----------
    d : int
        Dimension.
    nnz : int
        Nonzero coordinates per vector, ``1 <= nnz <= d``.
    alpha : float, default 1.0
        Tail exponent (``> 0`` for pareto, ``>= 0`` for powerlaw).
    profile : {"pareto", "powerlaw"}
    rng : numpy.random.Generator or seed
    size : tuple of int, default ()
        Leading batch shape.

    Returns
    -------
    numpy.ndarray of float64, shape ``size + (d,)``

    Examples
    --------
    >>> x = sparse_heavy_tailed(10, 3, profile="powerlaw", alpha=1.0, rng=0)
    >>> sorted(np.abs(x[x != 0]).tolist())
    [0.3333333333333333, 0.5, 1.0]
    """
    if isinstance(nnz, bool) or not isinstance(nnz, (int, np.integer)) or not 1 <= nnz <= d:
        raise UserError(f"nnz = {nnz!r} is out of range; use 1 <= nnz <= d = {d}")
    if profile not in ("pareto", "powerlaw"):
        raise UserError(f"profile = {profile!r} is unknown; use 'pareto' or 'powerlaw'")
    if not (math.isfinite(alpha) and (alpha > 0 or (profile == "powerlaw" and alpha == 0))):
        raise UserError(f"alpha = {alpha!r} must be > 0 (>= 0 for the powerlaw profile)")
    rng = np.random.default_rng(rng)
    shape = tuple(size)
    rows = int(np.prod(shape, dtype=np.int64))
    if profile == "pareto":
        mags = (1.0 - rng.random((rows, nnz))) ** (-1.0 / alpha)  # 1 - U in (0, 1]: finite
    else:
        mags = np.broadcast_to(np.arange(1, nnz + 1, dtype=np.float64) ** (-float(alpha)), (rows, nnz))
    signs = np.where(rng.random((rows, nnz)) < 0.5, -1.0, 1.0)
    # Random positions: the nnz smallest of d uniform keys per row (a random nnz-subset).
    if nnz < d:
        pos = np.argpartition(rng.random((rows, d)), nnz - 1, axis=1)[:, :nnz]
    else:
        pos = np.tile(np.arange(d), (rows, 1))
    x = np.zeros((rows, d))
    np.put_along_axis(x, pos, mags * signs, axis=1)
    return x.reshape(shape + (d,))
