r"""Finite-sum problems :math:`f = \frac1n\sum_i f_i` with known constants :math:`L, \mu, x^\star, f^\star`.

Used by the compressed / delayed / incremental gradient methods of :mod:`simcomm.optim`. Every problem
is a :class:`Problem` record; gradients are batched: ``grad(X, idx)`` returns
:math:`\nabla f_{idx_b}(X_b)` for every row ``b`` (``X`` of shape ``(B, d)``, ``idx`` of shape ``(B,)``),
so a step of ``n`` workers over ``R`` replicates is one call on ``R*n`` rows.

Constructors (all take ``heterogeneous``: identical data on every worker, or not):

* :func:`quadratic`: :math:`f_i(x) = \frac12 (x-c_i)^\top H (x-c_i)` with a prescribed spectrum of
  ``H`` in ``[mu, L]`` (diagonal, or rotated by a random orthogonal matrix) and a prescribed
  heterogeneity :math:`\sigma_\star^2 = \frac1n\sum_i\|\nabla f_i(x^\star)\|^2`;
* :func:`ridge`: least squares :math:`f_i(x) = \frac1{2m}\|A x - y_i\|^2 + \frac\lambda2\|x\|^2` with a
  design ``A`` built to give the Hessian spectrum ``[mu, L]`` exactly;
* :func:`logistic`: :math:`\ell_2`-regularised logistic regression on scikit-learn's bundled breast
  cancer or digits data (no download), :math:`L = \lambda_{\max}(A^\top A)/(4m) + \lambda`,
  :math:`\mu = \lambda`, :math:`f^\star` by Newton's method;
* :func:`nonconvex`: :math:`f_i(x) = \frac L2\sum_j \phi(x_j - c_{ij})`, :math:`\phi(t) = t^2/(1+t^2)`,
  whose gradient is ``L``-Lipschitz (:math:`|\phi''|\le 2`) and which is non-convex for :math:`|t| > 1/\sqrt3`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from simcomm._errors import UserError, closest
from simcomm.models._ops import log1p_exp, sigmoid

__all__ = ["Problem", "quadratic", "ridge", "logistic", "nonconvex", "make_problem", "PROBLEMS", "binary_features"]


@dataclass(frozen=True)
class Problem:
    r"""A finite-sum problem with known constants.

    Attributes
    ----------
    name : str
    n, d : int
        Number of workers (component functions) and dimension.
    L : float
        Smoothness constant of every :math:`f_i` (hence of :math:`f`).
    mu : float
        Strong-convexity constant of :math:`f` (0 for the non-convex problem).
    x_star : numpy.ndarray
        A minimiser of :math:`f`.
    f_star : float
        :math:`f(x^\star)`.
    sigma2_star : float
        :math:`\frac1n\sum_i\|\nabla f_i(x^\star)\|^2` (0 with identical workers).
    x0 : numpy.ndarray
        The default starting point.
    grad : callable
        ``grad(X, idx) -> G``, per-row gradient of worker ``idx[b]`` at ``X[b]``.
    value : callable
        ``value(X) -> f(X_b)`` for each row.
    full_grad : callable
        ``full_grad(X) -> \nabla f(X_b)`` for each row.
    """

    name: str
    n: int
    d: int
    L: float
    mu: float
    x_star: np.ndarray
    f_star: float
    sigma2_star: float
    x0: np.ndarray
    grad: Callable = field(repr=False)
    value: Callable = field(repr=False)
    full_grad: Callable = field(repr=False)

    def grads_all(self, X: np.ndarray) -> np.ndarray:
        """Gradients of every worker: ``X`` of shape ``(R, n, d)`` -> ``(R, n, d)``."""
        R = X.shape[0]
        idx = np.tile(np.arange(self.n), R)
        return self.grad(X.reshape(R * self.n, self.d), idx).reshape(X.shape)


def _check(n, d):
    if n < 1 or d < 1:
        raise UserError(f"problem size n = {n}, d = {d} is not allowed; use n >= 1 and d >= 1")


def _check_spectrum(L, mu):
    if not (0 < mu <= L) or not math.isfinite(L):
        raise UserError(f"mu = {mu!r}, L = {L!r} are not allowed; use 0 < mu <= L")


def _spectrum(d, L, mu):
    # eigenvalues log-spaced in [mu, L], both ends attained (so L and mu are exact)
    return np.geomspace(L, mu, d) if d > 1 else np.array([L])


def _orthogonal(d, rng):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _offsets(n, d, sigma2, H_apply, rng):
    """Centres c_i - x* with sum zero and (1/n) sum ||H (c_i - x*)||^2 = sigma2 exactly."""
    if n == 1 or sigma2 == 0:
        return np.zeros((n, d))
    z = rng.standard_normal((n, d))
    z -= z.mean(axis=0)
    g2 = (H_apply(z) ** 2).sum() / n
    return z * math.sqrt(sigma2 / g2)


def quadratic(n: int, d: int, *, L: float = 1.0, mu: float = 0.01, sigma2: float = 0.0, rotate: bool = False,
              e0: float = 1.0, rng=None) -> Problem:
    r"""Strongly convex quadratic :math:`f_i(x) = \frac12 (x - c_i)^\top H (x - c_i)`.

    ``H`` has eigenvalues log-spaced from ``L`` down to ``mu`` (diagonal, or :math:`V\Lambda V^\top` with a
    random orthogonal ``V`` when ``rotate``). The centres satisfy :math:`\sum_i (c_i - x^\star) = 0`, so
    :math:`x^\star = \bar c`, and are scaled so that :math:`\sigma_\star^2 = \frac1n\sum_i\|H(c_i-x^\star)\|^2`
    equals ``sigma2`` (``0``: identical workers). ``f_star`` is
    :math:`\frac1n\sum_i\frac12(x^\star-c_i)^\top H(x^\star - c_i)`.
    The default start ``x0`` has :math:`\|x_0 - x^\star\|^2 = e_0`.

    Parameters
    ----------
    n, d : int
        Workers and dimension.
    L, mu : float
        Largest and smallest Hessian eigenvalue.
    sigma2 : float
        Heterogeneity :math:`\sigma_\star^2` at the optimum.
    rotate : bool
        Dense rotated Hessian (O(d^2) per gradient) instead of a diagonal one (O(d)).
    e0 : float
        Squared distance of ``x0`` to ``x_star``.
    rng : numpy.random.Generator or seed, optional

    Returns
    -------
    Problem

    Examples
    --------
    >>> p = quadratic(4, 10, L=2.0, mu=0.5, sigma2=3.0, rng=0)
    >>> g = p.grads_all(np.broadcast_to(p.x_star, (1, 4, 10)))
    >>> bool(np.isclose((g ** 2).sum() / 4, 3.0)), bool(np.allclose(g.mean(axis=1), 0))
    (True, True)
    """
    _check(n, d)
    _check_spectrum(L, mu)
    rng = np.random.default_rng(rng)
    lam = _spectrum(d, L, mu)
    if rotate:
        V = _orthogonal(d, rng)
        H = (V * lam) @ V.T
        H = (H + H.T) / 2

        def H_apply(Z):
            return Z @ H
    else:

        def H_apply(Z):
            return Z * lam

    x_star = rng.standard_normal(d)
    delta = _offsets(n, d, sigma2, H_apply, rng)
    C = x_star + delta  # (n, d)
    f_star = 0.5 * float(np.einsum("nd,nd->", H_apply(delta), delta)) / n

    def grad(X, idx):
        return H_apply(X - C[idx])

    def value(X):
        X = np.atleast_2d(X)
        D = X[:, None, :] - C[None]
        return 0.5 * np.einsum("bnd,bnd->b", H_apply(D), D) / n

    def full_grad(X):
        return H_apply(np.atleast_2d(X) - x_star)

    u = rng.standard_normal(d)
    x0 = x_star + u * math.sqrt(e0) / np.linalg.norm(u)
    return Problem("quadratic", n, d, float(L), float(mu), x_star, f_star, float(sigma2), x0, grad, value, full_grad)


def ridge(n: int, d: int, *, m: int | None = None, L: float = 1.0, mu: float = 0.01, l2: float | None = None,
          noise: float = 1.0, heterogeneous: bool = True, rng=None) -> Problem:
    r"""Ridge regression :math:`f_i(x) = \frac1{2m}\|A x - y_i\|^2 + \frac\lambda2\|x\|^2` with a prescribed spectrum.

    All workers share the design ``A`` (``m x d``, ``m >= d``), built as
    :math:`\sqrt m\,U\,\mathrm{diag}(\sqrt{h-\lambda})\,V^\top` with orthonormal ``U``, ``V`` so that the
    Hessian :math:`A^\top A/m + \lambda I` has eigenvalues ``h`` log-spaced in ``[mu, L]`` exactly
    (``l2`` defaults to ``mu/2``). Targets :math:`y_i = A x_{true} + \varepsilon_i`: with
    ``heterogeneous`` every worker has its own noise :math:`\varepsilon_i`, otherwise all share one.

    Examples
    --------
    >>> p = ridge(3, 5, L=4.0, mu=0.1, rng=1)
    >>> bool(np.allclose(p.full_grad(p.x_star), 0)), p.sigma2_star > 0
    (True, True)
    """
    _check(n, d)
    _check_spectrum(L, mu)
    rng = np.random.default_rng(rng)
    m = max(d, 2 * d if m is None else m)
    l2 = mu / 2 if l2 is None else l2
    if not (0 <= l2 <= mu):
        raise UserError(f"ridge: l2 = {l2!r} is not allowed; use 0 <= l2 <= mu")
    h = _spectrum(d, L, mu)
    U, _ = np.linalg.qr(rng.standard_normal((m, d)))
    V = _orthogonal(d, rng)
    A = math.sqrt(m) * (U * np.sqrt(h - l2)) @ V.T
    x_true = rng.standard_normal(d)
    eps = noise * rng.standard_normal((n if heterogeneous else 1, m))
    Y = np.broadcast_to(A @ x_true + eps, (n, m)).copy()
    H = A.T @ A / m + l2 * np.eye(d)
    Aty = Y @ A / m  # (n, d): A^T y_i / m
    x_star = np.linalg.solve(H, Aty.mean(axis=0))

    def grad(X, idx):
        return X @ H - Aty[idx]

    def value(X):
        X = np.atleast_2d(X)
        r = X @ A.T  # (B, m)
        res = r[:, None, :] - Y[None]
        return 0.5 * (res**2).sum(axis=(1, 2)) / (m * n) + 0.5 * l2 * (X * X).sum(axis=1)

    def full_grad(X):
        return np.atleast_2d(X) @ H - Aty.mean(axis=0)

    g_star = x_star @ H - Aty
    sigma2 = float((g_star**2).sum() / n)
    f_star = float(value(x_star)[0])
    return Problem("ridge", n, d, float(L), float(mu), x_star, f_star, sigma2, np.zeros(d), grad, value, full_grad)


@functools.lru_cache(maxsize=4)
def _dataset(name: str):
    try:
        from sklearn import datasets
    except ImportError:  # pragma: no cover
        raise UserError("logistic regression on real data needs scikit-learn: pip install 'simcomm[data]'") from None
    if name == "breast_cancer":
        X, y = datasets.load_breast_cancer(return_X_y=True)
        y = np.where(y == 1, 1.0, -1.0)
    elif name == "digits":
        X, y = datasets.load_digits(return_X_y=True)
        y = np.where(y % 2 == 0, 1.0, -1.0)  # even vs odd digit
    else:
        raise UserError(f"unknown data set '{name}'; choose breast_cancer or digits")
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    X = np.hstack([X, np.ones((X.shape[0], 1))])  # intercept column
    order = np.argsort(y, kind="stable")  # sorted by label: contiguous shards are non-iid
    return X[order], y[order]


def binary_features(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Standardised features with an intercept column and labels in {-1, +1} of a scikit-learn data set.

    ``breast_cancer`` (malignant or not) or ``digits`` (even against odd digit); the rows are sorted by
    label, so contiguous shards are non-iid. The arrays are cached: do not write to them.
    """
    return _dataset(name)


def logistic(n: int, *, dataset: str = "breast_cancer", l2: float = 1e-2, heterogeneous: bool = True) -> Problem:
    r"""Regularised logistic regression on a bundled scikit-learn data set, split over ``n`` workers.

    :math:`f_i(x) = \frac1{m_i}\sum_{j\in S_i}\log(1+e^{-y_j a_j^\top x}) + \frac\lambda2\|x\|^2`. Features are
    standardised plus an intercept; ``digits`` is even-vs-odd. With ``heterogeneous`` the rows, sorted by
    label, are cut into ``n`` contiguous shards (non-iid); otherwise every worker holds the whole set.
    :math:`L = \max_i \lambda_{\max}(A_i^\top A_i)/(4 m_i) + \lambda` (each :math:`f_i` is ``L``-smooth),
    :math:`\mu = \lambda`; :math:`x^\star` by Newton's method to machine precision.

    Examples
    --------
    >>> p = logistic(4, dataset="breast_cancer")
    >>> p.d, bool(np.linalg.norm(p.full_grad(p.x_star)) < 1e-10)
    (31, True)
    """
    if n < 1:
        raise UserError(f"logistic: n = {n} is not allowed; use n >= 1")
    if not l2 > 0:
        raise UserError(f"logistic: l2 = {l2!r} is not allowed; use l2 > 0 (it is mu)")
    A, y = _dataset(dataset)
    n_samples, d = A.shape
    if heterogeneous and n > n_samples:
        raise UserError(f"logistic: n = {n} workers but only {n_samples} samples; use n <= {n_samples}")
    shards = np.array_split(np.arange(n_samples), n) if heterogeneous else [np.arange(n_samples)] * n
    # padded (n, M, d) shards with weights 1/m_i (0 on padding) so a batched gradient is one einsum
    M = max(len(s) for s in shards)
    As = np.zeros((n, M, d))
    ys = np.zeros((n, M))
    w = np.zeros((n, M))
    for i, s in enumerate(shards):
        As[i, : len(s)] = A[s]
        ys[i, : len(s)] = y[s]
        w[i, : len(s)] = 1.0 / len(s)
    L = max(np.linalg.eigvalsh(A[s].T @ A[s] / len(s))[-1] / 4 for s in shards) + l2

    def grad(X, idx):
        Ai = As[idx]  # (B, M, d)
        z = ys[idx] * np.einsum("bmd,bd->bm", Ai, X)
        coef = -w[idx] * ys[idx] * sigmoid(-z)
        return np.einsum("bm,bmd->bd", coef, Ai) + l2 * X

    def value(X):
        X = np.atleast_2d(X)
        z = np.einsum("nmd,bd->bnm", As, X) * ys[None]
        return (w[None] * log1p_exp(-z)).sum(axis=(1, 2)) / n + 0.5 * l2 * (X * X).sum(axis=1)

    def full_grad(X):
        X = np.atleast_2d(X)
        z = np.einsum("nmd,bd->bnm", As, X) * ys[None]
        coef = -w[None] * ys[None] * sigmoid(-z)
        return np.einsum("bnm,nmd->bd", coef, As) / n + l2 * X

    x = np.zeros(d)
    for _ in range(50):  # Newton on the mean objective: converges quadratically (f is l2-strongly convex)
        z = np.einsum("nmd,d->nm", As, x) * ys
        s = sigmoid(z) * sigmoid(-z) * w
        Hm = np.einsum("nm,nmd,nme->de", s, As, As) / n + l2 * np.eye(d)
        g = full_grad(x)[0]
        x = x - np.linalg.solve(Hm, g)
        if np.linalg.norm(g) < 1e-13:
            break
    g_star = grad(np.broadcast_to(x, (n, d)), np.arange(n))
    return Problem(f"logistic_{dataset}", n, d, float(L), float(l2), x, float(value(x)[0]),
                   float((g_star**2).sum() / n), np.zeros(d), grad, value, full_grad)


def _phi(t):
    return t * t / (1.0 + t * t)


def _dphi(t):
    return 2.0 * t / (1.0 + t * t) ** 2


def nonconvex(n: int, d: int, *, L: float = 1.0, f0_gap: float | None = None, spread: float = 0.0,
              rng=None) -> Problem:
    r"""Smooth non-convex :math:`f_i(x) = \frac L2\sum_j\phi(x_j - c_{ij})`, :math:`\phi(t) = t^2/(1+t^2)`.

    :math:`|\phi''| \le 2`, so each :math:`\nabla f_i` is ``L``-Lipschitz; :math:`\phi` is concave for
    :math:`|t| > 1/\sqrt3`. With ``spread = 0`` (identical workers) :math:`f^\star = 0` at :math:`x = c`;
    otherwise the centres :math:`c_{ij} = c_j + \mathrm{spread}\cdot z_{ij}` and :math:`f^\star` is found per
    coordinate (the problem is separable) by a grid search refined with Newton steps. The start ``x0`` is
    :math:`x^\star + t_0\,\epsilon` with random signs :math:`\epsilon` and :math:`t_0` chosen so that
    :math:`f(x_0) - f^\star` equals ``f0_gap`` exactly when ``spread = 0`` (default ``f0_gap = 0.4 d L/2``,
    :math:`t_0 = 0.816 > 1/\sqrt 3`, in the concave region).

    Examples
    --------
    >>> p = nonconvex(1, 20, L=2.0, f0_gap=8.0, rng=0)
    >>> round(float(p.value(p.x0)[0] - p.f_star), 12)
    8.0
    """
    _check(n, d)
    rng = np.random.default_rng(rng)
    f0_gap = 0.4 * d * L / 2 if f0_gap is None else f0_gap
    if not (0 < f0_gap < d * L / 2):
        raise UserError(f"nonconvex: f0_gap = {f0_gap!r} is not allowed; use 0 < f0_gap < d*L/2 = {d * L / 2:g}")
    c = rng.standard_normal(d)
    C = c + spread * rng.standard_normal((n, d)) if spread > 0 else np.broadcast_to(c, (n, d)).copy()

    def grad(X, idx):
        return 0.5 * L * _dphi(X - C[idx])

    def value(X):
        X = np.atleast_2d(X)
        return 0.5 * L * _phi(X[:, None, :] - C[None]).sum(axis=(1, 2)) / n

    def full_grad(X):
        X = np.atleast_2d(X)
        return 0.5 * L * _dphi(X[:, None, :] - C[None]).mean(axis=1)

    if spread > 0:
        grid = np.linspace(C.min(axis=0), C.max(axis=0), 2001)  # (G, d): the minimiser lies in the hull
        vals = _phi(grid[:, None, :] - C[None]).mean(axis=1)
        x = grid[vals.argmin(axis=0), np.arange(d)]
        for _ in range(30):
            t = x - C
            g = _dphi(t).mean(axis=0)
            h = ((2 - 6 * t * t) / (1 + t * t) ** 3).mean(axis=0)
            x = np.where(h > 0, x - g / np.where(h > 0, h, 1.0), x)
        x_star = x
    else:
        x_star = c.copy()
    f_star = float(value(x_star)[0])
    ratio = f0_gap / (d * L / 2)  # phi(t0) = ratio
    t0 = math.sqrt(ratio / (1 - ratio))
    x0 = x_star + t0 * rng.choice([-1.0, 1.0], size=d)
    g_star = grad(np.broadcast_to(x_star, (n, d)), np.arange(n))
    return Problem("nonconvex", n, d, float(L), 0.0, x_star, f_star, float((g_star**2).sum() / n), x0,
                   grad, value, full_grad)


#: names accepted by :func:`make_problem`
PROBLEMS = ("quadratic", "ridge", "logistic_breast_cancer", "logistic_digits", "nonconvex")


def make_problem(name: str, n: int, *, d: int = 50, L: float = 1.0, mu: float = 0.01, sigma2: float = 0.0,
                 heterogeneous: bool = True, rng=None, **kw) -> Problem:
    """Build one of :data:`PROBLEMS` by name (``d``, ``L``, ``mu`` are ignored by the logistic problems).

    Examples
    --------
    >>> make_problem("quadratic", n=2, d=3, rng=0).name
    'quadratic'
    """
    if name == "quadratic":
        return quadratic(n, d, L=L, mu=mu, sigma2=sigma2 if heterogeneous else 0.0, rng=rng, **kw)
    if name == "ridge":
        return ridge(n, d, L=L, mu=mu, heterogeneous=heterogeneous, rng=rng, **kw)
    if name.startswith("logistic_") and name in PROBLEMS:
        return logistic(n, dataset=name[len("logistic_"):], heterogeneous=heterogeneous, **kw)
    if name == "nonconvex":
        return nonconvex(n, d, L=L, rng=rng, **kw)
    raise UserError(f"unknown problem '{name}'{closest(name, PROBLEMS)}; choose one of {', '.join(PROBLEMS)}")
