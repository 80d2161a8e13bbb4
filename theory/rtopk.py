r"""Bounds for rTop-k from Barnes, Inan, Isik & Özgür (JSAIT 2020).

The paper: "rTop-k: A Statistical Estimation Approach to Distributed SGD" (arXiv 2005.10761).

Everything here is a pure function of scalars (math/numpy only). Provenance tags follow
papers/rtopk.md section 0: [P] the paper's text, [S] a secondary summary, [B] the seed summary
(unverified), [N] derived here and checked numerically, NOT the paper's theorem.

**The paper's full text, and with it its exact statistical model and theorems, was not available.**
The estimation results below are stated for the notes' stand-in model F1, which is [N]: a parameter
:math:`\theta \in [0,1]^d` with :math:`\sum_j \theta_j = s`, a power-law profile
:math:`\theta_{(j)} = \min(1, \lambda j^{-\alpha})` on :math:`m = \min(d, \lceil c s \rceil)`
coordinates (``support = c``), and nodes observing independent :math:`\mathrm{Bernoulli}(\theta_j)`
coordinates. It reproduces the seed summary's rate :math:`O(s^2 \log d/(nk))` [B]; it is not the
paper's model. The operator identities (rtopk.md B2) are [N] as well.

Notation: ``k`` is the bit budget per node, :math:`k' = \lfloor k / \lceil\log_2 d\rceil\rfloor` the
indices it buys; for the operators ``k`` is the number of kept coordinates and ``r`` the top-set size.
"""

from __future__ import annotations

import math

import numpy as np

from theory._bound import bound

__all__ = [
    "index_budget",
    "support_size",
    "skewed_profile",
    "poisson_binomial_pmf",
    "rtopk_error_identity",
    "rtopk_contraction",
    "randk_variance",
    "rtopk_limit_discrepancy",
    "mse_random_subset_exact",
    "mse_random_subset_bound",
    "topk_mse_terms",
    "mse_top_subset_exact",
    "mse_rand_coords_exact",
    "mse_gap_top_minus_subset",
    "crossover_nodes",
    "mse_scaling_slope",
]

PAPER = "rtopk"


def index_budget(k: int, d: int) -> int:
    r"""Indices a ``k``-bit message carries, :math:`k' = \lfloor k / \lceil\log_2 d\rceil\rfloor`.

    Examples
    --------
    >>> index_budget(100, 1024), index_budget(100, 1025)
    (10, 9)
    """
    bits = (int(d) - 1).bit_length()
    if bits == 0 or k < bits:
        raise ValueError(f"a budget of k = {k} bits buys no index of {bits} bits (d = {d})")
    return int(k) // bits


def support_size(d: int, s: float, support: float) -> int:
    r"""Support of model F1: :math:`m = \min(d, \lceil c\, s\rceil)` coordinates.

    Examples
    --------
    >>> support_size(1000, 10, 4.0), support_size(30, 10, 4.0)
    (40, 30)
    """
    return min(int(d), math.ceil(support * s))


def skewed_profile(m: int, s: float, alpha: float) -> np.ndarray:
    r"""Sorted profile of model F1: :math:`\min(1, \lambda j^{-\alpha})`, ``j = 1..m``, summing to ``s``.

    Same water-filling as :func:`simcomm.models.skewed_profile` (theory does not import simcomm; a
    test checks the two agree).

    Examples
    --------
    >>> round(float(skewed_profile(40, 10, 1.0).sum()), 12)
    10.0
    """
    w = np.arange(1, m + 1, dtype=np.float64) ** (-float(alpha))
    tail = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
    for p in range(m):
        lam = (s - p) / tail[p]
        if lam * w[p] <= 1.0:
            return np.concatenate([np.ones(p), lam * w[p:]])
    return np.ones(m)


def poisson_binomial_pmf(p) -> np.ndarray:
    r"""Exact law of :math:`|S| = \sum_j B_j`, :math:`B_j \sim \mathrm{Bernoulli}(p_j)` independent.

    Computed by the convolution recursion :math:`P_{j}(a) = (1 - p_j) P_{j-1}(a) + p_j P_{j-1}(a-1)`
    (exact up to rounding; no sampling).

    Parameters
    ----------
    p : array_like, shape (m,)

    Returns
    -------
    numpy.ndarray, shape (m + 1,)
        ``pmf[a] = P(|S| = a)``.

    Examples
    --------
    >>> poisson_binomial_pmf([0.5, 0.5]).tolist()
    [0.25, 0.5, 0.25]
    """
    pmf = np.zeros(len(p) + 1)
    pmf[0] = 1.0
    for j, pj in enumerate(np.asarray(p, dtype=np.float64)):
        pmf[1 : j + 2] = (1.0 - pj) * pmf[1 : j + 2] + pj * pmf[: j + 1]
        pmf[0] *= 1.0 - pj
    return pmf


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="E||x - rTop_k(x)||^2 = ||x||^2 - (k/r) ||Top_r(x)||^2 (rtopk.md B2)")
def rtopk_error_identity(norm2: float, topr_norm2: float, k: int, r: int) -> float:
    r"""Expected squared error of rTop-k for a given vector (exact identity).

    **Statement** (equal; rtopk.md B2, provenance [N]: derived in the notes, not quoted from the
    paper): each top-r coordinate is kept with probability :math:`k/r`, so

    .. math:: \mathbb{E}\|x - \mathrm{rTop}_k(x)\|^2 = \|x\|^2 - \tfrac{k}{r}\|\mathrm{Top}_r(x)\|^2.

    Parameters
    ----------
    norm2 : float
        :math:`\|x\|^2`.
    topr_norm2 : float
        :math:`\|\mathrm{Top}_r(x)\|^2`.
    k, r : int
        ``1 <= k <= r``.

    Examples
    --------
    >>> rtopk_error_identity(10.0, 8.0, 1, 4)
    8.0
    """
    return norm2 - (k / r) * topr_norm2


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="E||x - rTop_k(x)||^2 <= (1 - k/d) ||x||^2 for every x (rtopk.md B2)")
def rtopk_contraction(d: int, k: int, norm2: float) -> float:
    r"""Contraction bound of rTop-k (and top-k, and unscaled rand-k): :math:`(1 - k/d)\|x\|^2`.

    **Statement** (upper; provenance [N], rtopk.md B2 — derived, not the paper's): for every
    :math:`x \ne 0` and ``k <= r <= d``,

    .. math:: \mathbb{E}\|x - \mathrm{rTop}_k(x)\|^2 \le \left(1 - \frac{k}{d}\right)\|x\|^2,

    because :math:`\|\mathrm{Top}_r(x)\|^2 \ge (r/d)\|x\|^2`. Tight for equal magnitudes. The bound is
    linear in :math:`\|x\|^2`, so it also holds for the means over a sample of vectors: ``norm2`` is
    the measured mean of :math:`\|x\|^2` over the vectors whose mean error is compared.

    Parameters
    ----------
    d : int
        Dimension.
    k : int
        Kept coordinates.
    norm2 : float
        :math:`\|x\|^2` (or its mean over the compressed vectors).

    Examples
    --------
    >>> rtopk_contraction(100, 10, 2.0)
    1.8
    """
    return (1.0 - k / d) * norm2


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="E||rand_k(x) - x||^2 = (d/k - 1) ||x||^2 for scaled rand-k")
def randk_variance(d: int, k: int, norm2: float) -> float:
    r"""Variance of scaled rand-k: :math:`(d/k - 1)\|x\|^2`.

    **Statement** (equal; provenance [N], a standard computation, not from the paper): with
    :math:`C(x) = (d/k)\, x \odot \mathbb{1}_U`, :math:`U` a uniform k-subset, each coordinate is kept
    with probability :math:`k/d`, so :math:`\mathbb{E}(C(x)_j - x_j)^2 = x_j^2 (k/d)(d/k - 1)^2 +
    x_j^2 (1 - k/d) = (d/k - 1) x_j^2` and

    .. math:: \mathbb{E}\|C(x) - x\|^2 = \left(\frac{d}{k} - 1\right)\|x\|^2.

    Linear in :math:`\|x\|^2`, so ``norm2`` may be the mean over the compressed vectors.

    Parameters
    ----------
    d : int
        Dimension.
    k : int
        Kept coordinates.
    norm2 : float
        :math:`\|x\|^2` (or its mean over the compressed vectors).

    Examples
    --------
    >>> randk_variance(100, 10, 2.0)
    18.0
    """
    return (d / k - 1.0) * norm2


@bound(kind="equal", provenance="N", paper=PAPER, constant=True,
       statement="rTop_k with r = d keeps a uniform k-subset (unscaled rand-k): over T draws the normalised "
                 "chi-square statistic Z of the inclusion counts has E Z = 1, i.e. Z - 1 has mean 0 (rtopk.md B1)")
def rtopk_limit_discrepancy() -> float:
    r"""The r = d limit of rTop-k predicts zero discrepancy from uniform inclusion: the statement is 0.

    **Statement** (equal; provenance [N], rtopk.md B1 "special cases"): ``r = d`` gives unscaled
    rand-k, so over ``T`` draws the inclusion counts :math:`c_j` are Binomial(T, p), :math:`p = k/d`,
    and :math:`Z = \frac1d \sum_j \frac{(c_j - T p)^2}{T p (1-p)}` has :math:`\mathbb{E}\,Z = 1`;
    the discrepancy :math:`Z - 1` has mean 0. The value IS the statement, so it is a constant; the
    claim can still fail: with ``r < d`` only the top-r coordinates are ever kept and
    :math:`Z - 1 \approx (d/r - 1)\,T p/(1-p) \gg 0` (the spec's control). The other limit,
    ``r = k`` is top-k, is an identity of the implementation and is checked exactly in the tests.

    Examples
    --------
    >>> rtopk_limit_discrepancy()
    0.0
    """
    return 0.0


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="MSE of the random-subset scheme in model F1 = (E[|S|^2/min(k',|S|)] - ||theta||^2)/n, "
                 "|S| Poisson-binomial (rtopk.md F1)")
def mse_random_subset_exact(n: int, d: int, s: float, k: int, alpha: float, support: float) -> float:
    r"""Exact MSE of the random-subset (rTop-k analogue) scheme in model F1, via the law of :math:`|S|`.

    **Statement** (equal; provenance [N], rtopk.md F1 — the notes' stand-in model, not the paper's):
    node ``i`` sends a uniform :math:`\min(k', |S_i|)`-subset of :math:`S_i` and
    :math:`\hat\theta_j = \frac1n\sum_i \frac{|S_i|}{\min(k', |S_i|)}\mathbb{1}\{j\text{ sent}\}`;
    then

    .. math:: \mathbb{E}\|\hat\theta - \theta\|^2 = \frac1n\left(
              \sum_{a \ge 1} P(|S| = a)\,\frac{a^2}{\min(k', a)} - \|\theta\|^2\right),

    with :math:`|S|` Poisson-binomial with parameters :math:`\theta` (computed exactly).

    Parameters
    ----------
    n : int
        Nodes.
    d : int
        Dimension.
    s : float
        :math:`\sum_j \theta_j`.
    k : int
        Bit budget per node.
    alpha : float
        Profile exponent.
    support : float
        Support size as a multiple of ``s``.

    Examples
    --------
    >>> round(mse_random_subset_exact(50, 1000, 10, 40, 1.0, 4.0), 4)   # k' = 4
    0.4233
    """
    return _random_subset_terms(index_budget(k, d), _model_theta(d, s, alpha, support)) / n


def _model_theta(d, s, alpha, support) -> np.ndarray:
    return skewed_profile(support_size(d, s, support), float(s), float(alpha))


def _random_subset_terms(kp: int, theta: np.ndarray) -> float:
    """``n`` times the random-subset MSE: E[|S|^2/min(k', |S|)] - ||theta||^2."""
    pmf = poisson_binomial_pmf(theta)
    a = np.arange(pmf.size, dtype=np.float64)
    return float(np.sum(pmf[1:] * a[1:] ** 2 / np.minimum(kp, a[1:]))) - float(theta @ theta)


def _top_subset_q(kp: int, theta: np.ndarray) -> np.ndarray:
    r""":math:`q_j = P(j \in S, |S \cap \{1..j-1\}| < k')`: the chance that node sends coordinate j."""
    q = np.empty(theta.size)
    head = np.zeros(kp)  # law of |S cap {1..j-1}| truncated to 0..k'-1
    head[0] = 1.0
    for j, t in enumerate(theta):
        # j predecessors can never fill k' slots when j < k': exactly theta_j, no rounding
        q[j] = t if j < kp else t * head.sum()
        head[1:] = (1.0 - t) * head[1:] + t * head[:-1]
        head[0] *= 1.0 - t
    return q


def topk_mse_terms(d: int, s: float, k: int, alpha: float, support: float) -> tuple[float, float]:
    r"""Squared bias ``B`` and ``n``-scaled variance ``V`` of the top-k' scheme in model F1: MSE = B + V/n.

    Each node sends the first :math:`k'` elements of :math:`S_i` in the skew order, so
    :math:`\hat\theta_j` is the mean of ``n`` i.i.d. Bernoulli(:math:`q_j`) with
    :math:`q_j = \theta_j\,P(|S \cap \{1, \dots, j-1\}| \le k' - 1)` (a truncated
    Poisson-binomial law, computed exactly), hence :math:`B = \sum_j (q_j - \theta_j)^2` and
    :math:`V = \sum_j q_j (1 - q_j)`. Provenance [N] (model F1 is the notes' stand-in).

    Examples
    --------
    >>> b, v = topk_mse_terms(1024, 2.0, 100, 1.0, 4.0)   # k' = 10 >= support 8: unbiased
    >>> b, round(v, 6) == round(float(sum(t * (1 - t) for t in skewed_profile(8, 2.0, 1.0))), 6)
    (0.0, True)
    """
    theta = _model_theta(d, s, alpha, support)
    q = _top_subset_q(index_budget(k, d), theta)
    return float(np.sum((q - theta) ** 2)), float(np.sum(q * (1.0 - q)))


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="MSE of the top-k' scheme in model F1 = sum_j (q_j - theta_j)^2 + sum_j q_j(1 - q_j)/n, "
                 "q_j = theta_j P(|S cap {1..j-1}| < k') (rtopk.md F1)")
def mse_top_subset_exact(n: int, d: int, s: float, k: int, alpha: float, support: float) -> float:
    r"""Exact MSE of the top-k' (skew order) scheme in model F1: squared bias plus variance/n.

    **Statement** (equal; provenance [N]): see :func:`topk_mse_terms`; the bias does not shrink with
    ``n`` (the tail of :math:`S_i` is never sent), the variance does.

    Examples
    --------
    >>> round(mse_top_subset_exact(50, 1024, 10, 40, 1.0, 4.0), 4)
    1.3575
    """
    b, v = topk_mse_terms(d, s, k, alpha, support)
    return b + v / n


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="MSE of the rand-k' scheme in model F1 = (s d/k' - ||theta||^2)/n (rtopk.md F1)")
def mse_rand_coords_exact(n: int, d: int, s: float, k: int, alpha: float, support: float) -> float:
    r"""Exact MSE of the rand-k' scheme (k' uniformly random coordinates of ``d``) in model F1.

    **Statement** (equal; provenance [N]): node ``i`` keeps coordinate ``j`` with probability
    :math:`k'/d`, so :math:`X_{ij}\mathbb{1}\{j \text{ drawn}\}` is Bernoulli(:math:`\theta_j k'/d`) and
    :math:`\hat\theta_j = \frac{d}{n k'}\sum_i X_{ij}\mathbb{1}\{j\text{ drawn}\}` has variance
    :math:`(\theta_j d/k' - \theta_j^2)/n`; summed,

    .. math:: \mathbb{E}\|\hat\theta - \theta\|^2 = \frac{s\,d/k' - \|\theta\|^2}{n}.

    Examples
    --------
    >>> round(mse_rand_coords_exact(50, 1024, 10, 40, 1.0, 4.0), 4)   # k' = 4: (10 * 256 - ||theta||^2)/50
    51.0986
    """
    theta = _model_theta(d, s, alpha, support)
    return (float(s) * d / index_budget(k, d) - float(theta @ theta)) / n


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="MSE(top-k') - MSE(random subset) in model F1 = B - (V_r - V_top)/n exactly: negative "
                 "(top-k' wins) for n < n* = (V_r - V_top)/B, positive (the random subset wins) above (rtopk.md F1)")
def mse_gap_top_minus_subset(n: int, d: int, s: float, k: int, alpha: float, support: float) -> float:
    r"""Exact MSE of the top-k' scheme minus that of the random-subset scheme, model F1.

    **Statement** (equal; provenance [N]: derived here in the notes' stand-in model F1, not the
    paper's theorem): with :math:`B, V_{top}` from :func:`topk_mse_terms` and
    :math:`V_r = n \cdot` :func:`mse_random_subset_exact`,

    .. math:: \mathrm{MSE}_{top}(n) - \mathrm{MSE}_{r}(n) = B - \frac{V_r - V_{top}}{n},

    which changes sign at the crossover :math:`n^\star` (:func:`crossover_nodes`): the random subset
    beats the biased top-k' only for :math:`n > n^\star`. The paper's qualitative claim that the
    random-subset scheme is better is a statement about this large-``n`` side.

    Examples
    --------
    >>> g = [mse_gap_top_minus_subset(n, 1024, 20, 40, 1.0, 4.0) for n in (2, 1000)]
    >>> g[0] < 0 < g[1]
    True
    """
    theta = _model_theta(d, s, alpha, support)
    kp = index_budget(k, d)
    q = _top_subset_q(kp, theta)
    top = float(np.sum((q - theta) ** 2)) + float(np.sum(q * (1.0 - q))) / n
    return top - _random_subset_terms(kp, theta) / n


def crossover_nodes(d: int, s: float, k: int, alpha: float, support: float) -> float:
    r"""Crossover :math:`n^\star = (V_r - V_{top})/B` above which the random subset beats top-k' (model F1).

    ``inf`` when top-k' is unbiased (:math:`k'` at least the support: it sends everything) and has
    the smaller variance; ``0`` when the random subset wins at every ``n``. Provenance [N].

    Examples
    --------
    >>> 1 < crossover_nodes(1024, 20, 40, 1.0, 4.0) < 1000
    True
    """
    theta = _model_theta(d, s, alpha, support)
    kp = index_budget(k, d)
    b, v_top = topk_mse_terms(d, s, k, alpha, support)
    excess = _random_subset_terms(kp, theta) - v_top
    if excess <= 0:
        return 0.0
    return math.inf if b == 0 else excess / b


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="MSE of the random-subset scheme in model F1 <= (s^2 + s)/(n k') (rtopk.md F1; "
                 "the rate s^2 log d/(n k) of the seed summary [B])")
def mse_random_subset_bound(n: int, d: int, s: float, k: int) -> float:
    r"""The notes' upper bound :math:`(s^2 + s)/(n k')` on the random-subset scheme's MSE.

    **Statement** (upper; provenance [N], rtopk.md F1 — derived in the notes for their stand-in model;
    it makes concrete the seed summary's rate :math:`O(s^2\log d/(nk))` [B], whose exact form in the
    paper is unknown):

    .. math:: \mathbb{E}\|\hat\theta - \theta\|^2 \le \frac{s^2 + s}{n k'}, \qquad
              k' = \lfloor k / \lceil\log_2 d\rceil \rfloor.

    Derivation and its range: :math:`|S|^2/\min(k', |S|) = \max(|S|^2/k', |S|)` and
    :math:`\mathbb{E}|S|^2 \le s^2 + s`, so the bound holds whenever
    :math:`\mathbb{E}[(|S| - |S|^2/k')_+] \le \|\theta\|^2 (1 + 1/k')`, e.g. for :math:`k' = 1` or
    :math:`k'` small against :math:`s`. For :math:`k' \gg s` every node sends all of :math:`S_i`, the
    MSE saturates at :math:`\sum_j \theta_j(1-\theta_j)/n` and this bound falls below it: it is a
    statement about the communication-limited regime :math:`k' \lesssim s`. Computed exactly with
    :func:`mse_random_subset_exact` (``alpha = 1``, ``support = 4``): it holds for every
    :math:`k' \le s` checked (s = 5 to 40) and fails from about :math:`k' \approx 3s` on (s = 5:
    :math:`k' \ge 16`; s = 10: :math:`k' \ge 32`; s = 20: :math:`k' \ge 64`).

    Parameters
    ----------
    n : int
        Nodes.
    d : int
        Dimension.
    s : float
        :math:`\sum_j\theta_j`.
    k : int
        Bit budget per node.

    Examples
    --------
    >>> mse_random_subset_bound(50, 1000, 10, 40)   # k' = 4
    0.55
    """
    return (s * s + s) / (n * index_budget(k, d))


_SLOPES = {"n": -1.0, "kprime": -1.0, "s": 2.0, "log2d": 1.0}


@bound(kind="slope", provenance="B+N", paper=PAPER,
       statement="MSE ~ s^2 log d/(n k): slope -1 in n, -1 in k', +2 in s (s >> 1), +1 in log2 d at a fixed bit budget")
def mse_scaling_slope(axis: str) -> float:
    r"""Predicted log-log slope of the random-subset MSE along one axis.

    **Statement** (slope; provenance [B+N]: the rate :math:`O(s^2 \log d/(nk))` is the seed summary's
    [B]; its form :math:`(s^2+s)/(nk')` in model F1 is [N]): along ``axis`` the MSE grows like

    * ``"n"``: :math:`n^{-1}` (exact in model F1);
    * ``"kprime"``: :math:`k'^{-1}` (for :math:`k' \ll s`, where :math:`|S_i| > k'`);
    * ``"s"``: :math:`s^{2}` (for :math:`s \gg 1`);
    * ``"log2d"``: :math:`(\log_2 d)^{1}` at a fixed bit budget ``k`` (through
      :math:`k' = k/\lceil\log_2 d\rceil`): only logarithmic growth in ``d``.

    Parameters
    ----------
    axis : {"n", "kprime", "s", "log2d"}

    Examples
    --------
    >>> [mse_scaling_slope(a) for a in ("n", "kprime", "s", "log2d")]
    [-1.0, -1.0, 2.0, 1.0]
    """
    return _SLOPES[axis]
