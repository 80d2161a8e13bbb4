r"""Distributed mean estimation under a per-node bit budget (rtopk.md F1, a stand-in model [N]).

Each of ``n`` nodes observes :math:`X_i \in \{0, 1\}^d` and sends one message of at most ``k`` bits;
a message carries :math:`k' = \lfloor k / \lceil \log_2 d \rceil \rfloor` coordinate indices
(:func:`index_budget`). The server estimates :math:`\theta = \mathbb{E} X_i`. Schemes (the
estimation analogues of the three sparsifiers):

``"rtop_k"`` (random subset of the support)
    node ``i`` sends a uniform random subset of :math:`\min(k', |S_i|)` indices of
    :math:`S_i = \mathrm{supp}(X_i)` ("top-r with r = |S_i|, then random-k'") and :math:`|S_i|`;
    :math:`\hat\theta_j = \frac1n \sum_i \frac{|S_i|}{\min(k', |S_i|)} \mathbb{1}\{j \text{ sent by } i\}`
    is unbiased, with :math:`\mathbb{E}\|\hat\theta - \theta\|^2 =
    \frac1n(\mathbb{E}[|S|^2/\min(k', |S|)] - \|\theta\|^2)` (rtopk.md F1, [N]).
``"top_k"`` (top-k' by a fixed skew ordering)
    node ``i`` sends the first :math:`k'` indices of :math:`S_i` in the skew ordering (largest
    :math:`\theta_j` first, known to every node: an oracle ordering that favours this scheme);
    :math:`\hat\theta_j = \frac1n \sum_i \mathbb{1}\{j \text{ sent by } i\}`. Biased: the tail of
    :math:`S_i` is never sent, and no unbiased estimator exists without knowing :math:`\theta`.
``"rand_k"`` (k' uniformly random coordinates)
    node ``i`` draws :math:`k'` of the ``d`` coordinates uniformly without replacement and sends the
    indices with their bits; :math:`\hat\theta_j = \frac{d}{n k'} \sum_i X_{ij}
    \mathbb{1}\{j \text{ drawn by } i\}` is unbiased. The indices are paid for (no randomness shared
    with the server), as in SGD's rand-k.

The size :math:`|S_i|` that ``rtop_k`` also sends (:math:`\lceil\log_2 (d+1)\rceil` bits) is not
charged, as in the notes. Coordinates with :math:`\theta_j = 0` are never nonzero, so the Monte Carlo
simulates only the support and is exact for any ``d``.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError

__all__ = ["SCHEMES", "index_budget", "estimate_mean", "mean_estimation_mse"]

#: Estimation schemes, named after the sparsifier each one mirrors.
SCHEMES = ("rtop_k", "top_k", "rand_k")

_CHUNK_ELEMENTS = 1 << 22  # replicates are simulated in chunks of at most this many (node, coordinate) cells


def index_budget(k: int, d: int) -> int:
    r"""Indices a ``k``-bit message can carry: :math:`k' = \lfloor k / \lceil\log_2 d\rceil \rfloor`.

    Parameters
    ----------
    k : int
        Bit budget per node.
    d : int
        Dimension, ``d >= 2``.

    Returns
    -------
    int
        :math:`k' \ge 1`.

    Raises
    ------
    UserError
        If the budget is smaller than one index.

    Examples
    --------
    >>> index_budget(100, 1024)   # 10-bit indices
    10
    """
    for name, v in (("k", k), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise UserError(f"{name} must be an integer, got {v!r}")
    if d < 2:
        raise UserError(f"d = {d} is too small; use d >= 2")
    bits = int(d - 1).bit_length()
    if k < bits:
        raise UserError(f"bit budget k = {k} is smaller than one index (ceil(log2 d) = {bits} bits for d = {d}); "
                        f"use k >= {bits}")
    return int(k) // bits


def _scheme_estimates(X: np.ndarray, kprime: int, d: int, scheme: str, rng: np.random.Generator,
                      keys: np.ndarray | None = None, rescale: bool = True) -> np.ndarray:
    r"""Server estimates from observations ``X`` (R, n, m) whose columns are in skew order.

    The ``m`` columns hold every coordinate that can be nonzero; ``d >= m`` is the full dimension
    (it matters only for ``rand_k``, whose nodes draw among all ``d`` coordinates). ``keys``, if
    given, are uniforms on ``X``'s support that are i.i.d. and independent of ``X`` given ``X``
    (``rtop_k`` only); otherwise they are drawn from ``rng``. ``rescale = False`` drops the random
    subset's :math:`|S_i|/\min(k', |S_i|)` factor (a biased estimator: negative controls only).
    """
    R, n, m = X.shape
    if scheme == "rtop_k":
        size = X.sum(axis=-1)  # |S_i|
        if kprime >= m:
            sent = X
        else:
            # A uniform min(k', |S_i|)-subset of S_i: the entries of S_i whose i.i.d. uniform keys are
            # among the k' smallest, with keys outside S_i >= 1 so they only fill rows with |S_i| < k'
            # (and are masked by X). Keys are continuous, so ties have probability ~0.
            if keys is None:
                keys = np.where(X, rng.random(X.shape), 2.0)
            kth = np.partition(keys, kprime - 1, axis=-1)[..., kprime - 1 : kprime]
            sent = X & (keys <= kth)
        scale = size / np.maximum(np.minimum(kprime, size), 1) if rescale else np.ones(size.shape)
        return np.einsum("rnm,rn->rm", sent, scale, dtype=np.float64) / n
    if scheme == "top_k":
        sent = X & (np.cumsum(X, axis=-1) <= kprime)  # the first k' elements of S_i in skew order
        return sent.sum(axis=-2, dtype=np.float64) / n
    if scheme == "rand_k":
        # Of the k' coordinates drawn among d, a hypergeometric number H land on these m columns,
        # at a uniformly random H-subset of them.
        h = rng.hypergeometric(m, d - m, kprime, size=(R, n)) if d > m else np.full((R, n), kprime)
        keys = rng.random(X.shape)
        ranks = np.argsort(np.argsort(keys, axis=-1), axis=-1)
        picked = ranks < h[..., None]
        return (X & picked).sum(axis=-2, dtype=np.float64) * (d / (n * kprime))
    raise UserError(f"unknown scheme '{scheme}'; use one of {', '.join(SCHEMES)}")


def estimate_mean(X, k: int, *, scheme: str, rng, order=None) -> np.ndarray:
    r"""Server estimate of :math:`\theta` from binary observations, each node sending ``k`` bits.

    Parameters
    ----------
    X : array_like of bool, shape (..., n, d)
        Observations of ``n`` nodes; leading axes are independent replicates.
    k : int
        Bit budget per node (:math:`k' = \lfloor k/\lceil\log_2 d\rceil\rfloor` indices).
    scheme : {"rtop_k", "top_k", "rand_k"}
        See the module docstring.
    rng : numpy.random.Generator or seed
        Randomness of the messages.
    order : array_like of int, shape (d,), optional
        Skew ordering (most important coordinate first); required by ``"top_k"``.

    Returns
    -------
    numpy.ndarray, shape (..., d)

    Raises
    ------
    UserError
        If the budget is smaller than one index, the scheme is unknown or ``order`` is missing.

    Examples
    --------
    >>> X = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool)    # n = 2 nodes, d = 4
    >>> estimate_mean(X, 4, scheme="top_k", rng=0, order=[2, 0, 1, 3]).tolist()  # k' = 2
    [0.5, 0.5, 1.0, 0.0]
    >>> float(estimate_mean(X, 4, scheme="rtop_k", rng=0).sum())  # |S_1| + |S_2| over n
    2.5
    """
    X = np.asarray(X).astype(bool, copy=False)
    if X.ndim < 2:
        raise UserError("X must have shape (..., n, d)")
    if scheme not in SCHEMES:
        raise UserError(f"unknown scheme '{scheme}'; use one of {', '.join(SCHEMES)}")
    rng = np.random.default_rng(rng)
    lead, (n, d) = X.shape[:-2], X.shape[-2:]
    kprime = index_budget(k, d)
    X3 = X.reshape((-1, n, d))
    if scheme == "top_k":
        if order is None:
            raise UserError("scheme 'top_k' needs order= (the fixed skew ordering, most important first)")
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (d,) or not np.array_equal(np.sort(order), np.arange(d)):
            raise UserError(f"order must be a permutation of range(d = {d})")
        est = np.empty(X3.shape[:1] + (d,))
        est[:, order] = _scheme_estimates(X3[..., order], kprime, d, scheme, rng)
    else:
        est = _scheme_estimates(X3, kprime, d, scheme, rng)
    return est.reshape(lead + (d,))


def mean_estimation_mse(theta, n: int, k: int, *, replicates: int, rng, d: int | None = None,
                        schemes=SCHEMES, rescale: bool = True) -> dict:
    r"""Monte Carlo squared errors :math:`\|\hat\theta - \theta\|^2` of each scheme.

    Every replicate draws fresh observations of ``n`` nodes; all schemes see the same observations
    (common random numbers, which sharpens comparisons between them). Vectorised over replicates and
    nodes; only the nonzero entries of ``theta`` are simulated (the others are never observed).

    Parameters
    ----------
    theta : array_like, shape (m,)
        Bernoulli means in ``[0, 1]``: a full parameter vector, or only its nonzero entries (then
        pass ``d``). The skew ordering used by ``"top_k"`` is by decreasing ``theta``.
    n : int
        Number of nodes.
    k : int
        Bit budget per node.
    replicates : int
        Independent repetitions.
    rng : numpy.random.Generator or seed
    d : int, optional
        Full dimension (default ``len(theta)``); sets the index cost and ``rand_k``'s draw.
    schemes : sequence of str, default all of :data:`SCHEMES`
    rescale : bool, default True
        ``False`` drops ``rtop_k``'s rescaling by :math:`|S_i|/\min(k', |S_i|)`: a biased estimator,
        for negative controls only.

    Returns
    -------
    dict
        ``{scheme: numpy.ndarray of shape (replicates,)}``.

    Raises
    ------
    UserError
        On a bad budget, an unknown scheme, ``theta`` outside ``[0, 1]`` or ``d < len(theta)``.

    Examples
    --------
    >>> from simcomm.models import skewed_profile
    >>> theta = skewed_profile(40, 10, 1.0)
    >>> err = mean_estimation_mse(theta, 50, 40, d=1000, replicates=2000, rng=0, schemes=["rtop_k"])
    >>> abs(float(err["rtop_k"].mean()) - 0.4233) < 0.02   # k' = 4; exact 0.4233 (theory.rtopk)
    True
    """
    theta = np.asarray(theta, dtype=np.float64).ravel()
    if not (np.all(np.isfinite(theta)) and np.all((theta >= 0) & (theta <= 1))):
        raise UserError("theta must hold probabilities in [0, 1]")
    d = theta.size if d is None else d
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < theta.size:
        raise UserError(f"d = {d!r} must be an integer >= len(theta) = {theta.size}")
    for name, v in (("n", n), ("replicates", replicates)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise UserError(f"{name} must be an integer >= 1, got {v!r}")
    for s in schemes:
        if s not in SCHEMES:
            raise UserError(f"unknown scheme '{s}'; use one of {', '.join(SCHEMES)}")
    kprime = index_budget(k, int(d))
    rng = np.random.default_rng(rng)
    th = np.sort(theta[theta > 0])[::-1]  # skew order; zero coordinates never appear
    m = max(th.size, 1)
    if th.size == 0:
        th = np.zeros(1)
    out = {s: np.empty(replicates) for s in schemes}
    chunk = max(1, _CHUNK_ELEMENTS // (n * m))
    for a in range(0, replicates, chunk):
        b = min(replicates, a + chunk)
        u = rng.random((b - a, n, m))
        X = u < th
        # Given X_ij = 1, u_ij / theta_j is uniform on (0, 1) and independent across (i, j) and of
        # the rest of X, and u_ij / theta_j >= 1 exactly where X_ij = 0: rtop_k's subset keys
        # without drawing a second array.
        with np.errstate(divide="ignore", invalid="ignore"):  # th = [0] only when theta is all zero
            keys = u / th
        for s in schemes:
            est = _scheme_estimates(X, kprime, int(d), s, rng, keys if s == "rtop_k" else None, rescale)
            out[s][a:b] = ((est - th) ** 2).sum(axis=-1)
    return out
