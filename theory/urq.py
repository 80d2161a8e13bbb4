r"""Bounds for compressed gradients from Khirirat, Feyzmahdavian & Johansson (2018).

The paper: "Distributed learning with compressed gradients" (arXiv 1806.06573): unbiased random
quantizers (URQs), delayed and incremental methods.

Everything here is a pure function of scalars (math only). The paper's full text was not available
(papers/urq_delay.md section 0). Provenance tags:

* [N] derived in the notes (D1, D2, table B3) and checked numerically, NOT the paper's theorems;
* [B] the seed summary's step-size condition :math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]`,
  unverified: whether its ``L`` is multiplied by the URQ parameter, and for which algorithm it is
  stated, is unknown [X]; it is used here as a sufficient condition on plain ``L``.

Notation: a URQ satisfies :math:`\mathbb{E}Q(v) = v`, :math:`\mathbb{E}\|Q(v)-v\|^2\le\beta\|v\|^2`,
:math:`\alpha = 1+\beta` (notes B1). Quantizer names and parameters follow ``simcomm.compress``:
``qsgd`` (``s``), ``ternary``, ``bernoulli`` (``p``), ``rand_k`` (``k``), ``none``.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = [
    "beta",
    "alpha",
    "message_bits",
    "bias_zero",
    "variance_exact",
    "variance_factor",
    "variance_factor_times_norm2",
    "rate_strongly_convex",
    "rate_nonconvex",
    "floor_plateau",
    "floor_plateau_identical",
    "gd_rate_strongly_convex",
    "gd_rate_nonconvex",
    "delay_stepsize",
    "delay_threshold_exact",
    "delay_compressed_limit",
    "linear_tail_drop",
    "iterations_beta",
    "iterations_iag",
    "bits_to_eps",
    "nonconvex_avg_slope",
    "bits_optimum_ratio",
    "bits_saving_factor",
    "sign_ef_bits_ratio",
    "async_time_ratio",
    "async_condition_slowdown",
    "delay_threshold_local",
]

PAPER = "urq"


def beta(quantizer: str, d: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r"""Worst-case variance factor :math:`\beta(d)` of a URQ (notes table B3 [N]).

    ``qsgd``: :math:`\min(d/s^2, \sqrt d/s)`; ``ternary`` (inf-norm): :math:`(\sqrt d-1)/2`;
    ``bernoulli``: :math:`1/p - 1`; ``rand_k`` (scaled): :math:`d/k - 1`; ``none``: 0;
    ``stochastic_round``: ``inf`` (no relative bound).

    Examples
    --------
    >>> beta("qsgd", 100, s=4), beta("ternary", 9), beta("bernoulli", 10, p=0.25)
    (2.5, 1.0, 3.0)
    """
    if quantizer == "qsgd":
        return min(d / s**2, math.sqrt(d) / s)
    if quantizer == "ternary":
        return (math.sqrt(d) - 1.0) / 2.0
    if quantizer == "bernoulli":
        return 1.0 / p - 1.0
    if quantizer == "rand_k":
        return d / k - 1.0
    if quantizer == "none":
        return 0.0
    if quantizer == "stochastic_round":
        return math.inf
    raise ValueError(f"unknown quantizer {quantizer!r}")


def alpha(quantizer: str, d: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r""":math:`\alpha = 1 + \beta(d)`, the second-moment factor (notes B1 [N]).

    Examples
    --------
    >>> alpha("bernoulli", 10, p=0.5)
    2.0
    """
    return 1.0 + beta(quantizer, d, s=s, p=p, k=k)


def message_bits(quantizer: str, d: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r"""Bits per message under the encodings documented in ``simcomm.compress`` ([N], notes B3).

    ``none``: :math:`32d`; ``qsgd``: :math:`32 + d\lceil\log_2(2s+1)\rceil`; ``ternary``:
    :math:`32 + 8\lceil d/5\rceil`; ``bernoulli``: :math:`32pd + \min(pd\lceil\log_2 d\rceil, d)` (expected);
    ``rand_k``: :math:`32k + \min(k\lceil\log_2 d\rceil, d)`.

    Examples
    --------
    >>> message_bits("qsgd", 100, s=4), message_bits("ternary", 10)
    (432, 48)
    """
    lg = math.ceil(math.log2(max(d, 2)))
    if quantizer == "none":
        return 32 * d
    if quantizer == "qsgd":
        return 32 + d * math.ceil(math.log2(2 * s + 1))
    if quantizer == "ternary":
        return 32 + 8 * math.ceil(d / 5)
    if quantizer == "bernoulli":
        return 32 * p * d + min(p * d * lg, d)
    if quantizer == "rand_k":
        return 32 * k + min(k * lg, d)
    raise ValueError(f"unknown quantizer {quantizer!r}")


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="E[Q(v)] = v: the Monte Carlo bias of every URQ, projected on a fixed direction, is 0",
       constant=True)
def bias_zero() -> float:
    r"""Unbiasedness, :math:`\mathbb{E}\,Q(v) = v` (notes B1/B3 [N]; equal).

    The experiment reports :math:`\langle \bar Q - v, w\rangle/\|v\|\|w\|` for fixed directions ``w``
    (``v`` itself and a fixed random sign vector), with :math:`\bar Q` the mean of many draws; its
    expectation is exactly 0.

    Examples
    --------
    >>> bias_zero()
    0.0
    """
    return 0.0


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="E||Q(v)-v||^2 equals the URQ's closed form given the statistics of v "
                 "(QSGD: (||v||^2/s^2) sum p_i(1-p_i))")
def variance_exact(quantizer: str, d: int, norm2: float, norm1: float = math.nan, norm_inf: float = math.nan,
                   frac_sum: float = math.nan, s: int = 1, p: float = 1.0, k: int = 1, delta: float = 1.0) -> float:
    r"""Exact :math:`\mathbb{E}\|Q(v)-v\|^2` of each URQ as a function of statistics of ``v`` (notes B3 [N]; equal).

    Every URQ rounds coordinate ``i`` independently and unbiasedly between two neighbours a distance
    ``h_i`` apart, at fractional position :math:`f_i`, so coordinate ``i`` contributes
    :math:`h_i^2 f_i(1-f_i)`:

    * ``qsgd``: :math:`h_i = \|v\|/s`, :math:`f_i` = fractional part of :math:`s|v_i|/\|v\|`, so
      :math:`(\|v\|^2/s^2)\sum_i f_i(1-f_i)`;
    * ``stochastic_round``: :math:`h_i = \delta`, :math:`f_i` = fractional part of :math:`v_i/\delta`, so
      :math:`\delta^2\sum_i f_i(1-f_i)`;
    * ``ternary``: :math:`h_i = \|v\|_\infty`, :math:`f_i = |v_i|/\|v\|_\infty`, so
      :math:`\sum_i \|v\|_\infty|v_i| - v_i^2 = \|v\|_\infty\|v\|_1 - \|v\|^2`;
    * ``bernoulli``: :math:`Q(v)_i = v_i b_i/p`, variance :math:`v_i^2(1/p-1)`, so :math:`(1/p-1)\|v\|^2`;
    * ``rand_k`` (``k`` of ``d`` without replacement, scaled ``d/k``): keep probability ``k/d`` per
      coordinate, so :math:`(d/k-1)\|v\|^2`;
    * ``none``: 0.

    ``frac_sum`` is :math:`\sum_i f_i(1-f_i)` on the quantizer's own grid (QSGD and stochastic rounding
    only); ``norm2``, ``norm1``, ``norm_inf`` are :math:`\|v\|_2^2`, :math:`\|v\|_1`, :math:`\|v\|_\infty`.
    The experiment emits these measured statistics of ``v`` as columns beside the Monte Carlo value.

    Examples
    --------
    >>> variance_exact("qsgd", 2, norm2=25.0, frac_sum=0.0, s=5)   # v = (3, -4): no rounding
    0.0
    >>> variance_exact("ternary", 3, norm2=8.0, norm1=4.0, norm_inf=2.0)   # v = (2, -2, 0)
    0.0
    >>> variance_exact("bernoulli", 10, norm2=2.0, p=0.25)
    6.0
    >>> variance_exact("stochastic_round", 2, norm2=0.5, frac_sum=0.5, delta=0.5)   # v/delta = (1.5, 0.5)
    0.125
    """
    if quantizer == "qsgd":
        return norm2 / s**2 * frac_sum
    if quantizer == "stochastic_round":
        return delta**2 * frac_sum
    if quantizer == "ternary":
        return norm_inf * norm1 - norm2
    if quantizer == "bernoulli":
        return (1.0 / p - 1.0) * norm2
    if quantizer == "rand_k":
        return (d / k - 1.0) * norm2
    if quantizer == "none":
        return 0.0
    raise ValueError(f"unknown quantizer {quantizer!r}")


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="E||Q(v)-v||^2 / ||v||^2 <= beta(d) (QSGD: min(d/s^2, sqrt(d)/s))")
def variance_factor(quantizer: str, d: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r"""Worst-case relative variance :math:`\mathbb{E}\|Q(v)-v\|^2/\|v\|^2 \le \beta(d)` (B3 [N]; upper).

    Examples
    --------
    >>> variance_factor("qsgd", 16, s=2)
    2.0
    """
    return beta(quantizer, d, s=s, p=p, k=k)


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="E||Q(v)-v||^2 <= beta(d) ||v||^2 (the worst case over v of the URQ's variance)")
def variance_factor_times_norm2(quantizer: str, d: int, norm2: float, s: int = 1, p: float = 1.0,
                                k: int = 1) -> float:
    r"""Worst-case variance in absolute terms, :math:`\beta(d)\|v\|^2` (notes B3 [N]; upper).

    ``norm2`` is :math:`\|v\|^2` of the quantized vector (a column of the experiment's rows). Used as
    the wrong reference of ``urq.variance``'s negative control: it equals the exact variance only for
    Bernoulli and scaled rand-k, whose variance is the same for every ``v``.

    Examples
    --------
    >>> variance_factor_times_norm2("qsgd", 100, 4.0, s=4)
    10.0
    """
    return beta(quantizer, d, s=s, p=p, k=k) * norm2


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="single-stream compressed GD, lr = 1/(alpha L): per-step rate of E[f - f*] <= 1 - mu/(alpha L)")
def rate_strongly_convex(quantizer: str, d: int, L: float, mu: float, s: int = 1, p: float = 1.0,
                         k: int = 1) -> float:
    r"""Contraction factor of D1 at :math:`\gamma = 1/(\alpha L)`: :math:`1 - \mu/(\alpha L)` (notes D1 [N]; upper).

    Statement: for :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_k))`, ``f`` L-smooth and
    :math:`\mu`-strongly convex (PL suffices),
    :math:`\mathbb{E}[f(x_K)-f^\star] \le (1-\mu/(\alpha L))^K (f(x_0)-f^\star)`. The observable is the
    per-replicate rate :math:`((f(x_K)-f^\star)/(f(x_0)-f^\star))^{1/K}`; by Jensen
    (:math:`t\mapsto t^{1/K}` concave) its mean is at most the bound.

    Examples
    --------
    >>> rate_strongly_convex("bernoulli", 10, 1.0, 0.1, p=0.5)
    0.95
    """
    return 1.0 - mu / (alpha(quantizer, d, s=s, p=p, k=k) * L)


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="lr = 1/(alpha L): (1/K) sum_{k<K} E||grad f(x_k)||^2 <= 2 alpha L (f(x_0) - f*) / K")
def rate_nonconvex(quantizer: str, d: int, L: float, f0_gap: float, K: int, s: int = 1, p: float = 1.0,
                   k: int = 1) -> float:
    r"""Non-convex rate of D1 ([N]; upper).

    :math:`\frac1K\sum_{k<K}\mathbb{E}\|\nabla f(x_k)\|^2 \le 2\alpha L(f(x_0)-f^\star)/K`.

    Follows from the descent inequality
    :math:`\mathbb{E}f(x_{k+1}) \le f(x_k) - \gamma(1-\alpha L\gamma/2)\|\nabla f(x_k)\|^2` at
    :math:`\gamma = 1/(\alpha L)`, summed over ``k`` (``f0_gap`` is :math:`f(x_0)-f^\star`).

    Examples
    --------
    >>> rate_nonconvex("none", 10, 2.0, 5.0, 100)
    0.2
    """
    return 2.0 * alpha(quantizer, d, s=s, p=p, k=k) * L * f0_gap / K


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="n workers, E||x_k - x*||^2 <= rho^k e0 "
                 "+ 2 lr beta sigma*^2 / (n (2 mu - lr L^2 (1 + 2 beta/n)))")
def floor_plateau(quantizer: str, d: int, n: int, L: float, mu: float, lr: float, sigma2: float, e0: float,
                  K1: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r"""Plateau of D2: averaged :math:`\mathbb{E}\|x_k-x^\star\|^2` over :math:`k \ge K_1` (notes D2 [N]; upper).

    D2: :math:`\mathbb{E}\|x_{k+1}-x^\star\|^2 \le \rho\|x_k-x^\star\|^2 + 2\gamma^2\beta\sigma_\star^2/n` with
    :math:`\rho = 1-2\gamma\mu+\gamma^2L^2(1+2\beta/n)`. Unrolled, for :math:`\rho < 1` and every
    :math:`k\ge K_1`: :math:`\mathbb{E}\|x_k-x^\star\|^2 \le \rho^{K_1}e_0 + F`,
    :math:`F = 2\gamma\beta\sigma_\star^2/(N(2\mu-\gamma L^2(1+2\beta/n)))` the floor; with identical data
    (:math:`\sigma_\star = 0`) only the vanishing transient :math:`\rho^{K_1}e_0` is left. ``inf`` when
    :math:`\rho \ge 1` (no guarantee).

    Examples
    --------
    >>> round(floor_plateau("bernoulli", 10, 4, 1.0, 0.5, 0.1, 2.0, 1.0, 10**6, p=0.5), 6)   # F only
    0.117647
    """
    b = beta(quantizer, d, s=s, p=p, k=k)
    rho = 1.0 - 2.0 * lr * mu + lr**2 * L**2 * (1.0 + 2.0 * b / n)
    if not rho < 1.0:
        return math.inf
    floor = 2.0 * lr * b * sigma2 / (n * (2.0 * mu - lr * L**2 * (1.0 + 2.0 * b / n)))
    return rho**K1 * e0 + floor


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="uncompressed GD at lr = 1/L: per-step rate of f - f* <= 1 - mu/L")
def gd_rate_strongly_convex(L: float, mu: float) -> float:
    r"""Rate of plain gradient descent at :math:`\gamma = 1/L`: :math:`1 - \mu/L` (D1, :math:`\alpha = 1` [N]; upper).

    Serves as the wrong reference of ``urq.rate_strongly_convex``'s negative control: compressed GD at
    :math:`\gamma = 1/(\alpha L)` contracts the slowest direction by about :math:`1 - 2\mu/(\alpha L)` per
    step in ``f``, slower than :math:`1 - \mu/L` once :math:`\alpha > 2`.

    Examples
    --------
    >>> gd_rate_strongly_convex(1.0, 0.1)
    0.9
    """
    return 1.0 - mu / L


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="uncompressed GD at lr = 1/L: (1/K) sum_{k<K} ||grad f(x_k)||^2 <= 2 L (f(x_0) - f*) / K")
def gd_rate_nonconvex(L: float, f0_gap: float, K: int) -> float:
    r"""Non-convex rate of plain GD at :math:`\gamma = 1/L`: :math:`2L(f(x_0)-f^\star)/K` ([N]; upper).

    :func:`rate_nonconvex` with :math:`\alpha = 1`; the wrong reference of ``urq.rate_nonconvex``'s
    negative control (compressed GD runs at the step :math:`1/(\alpha L)`, so its gradients stay larger).

    Examples
    --------
    >>> gd_rate_nonconvex(2.0, 5.0, 100)
    0.2
    """
    return 2.0 * L * f0_gap / K


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="D2 with identical workers (sigma* = 0): E||x_k - x*||^2 <= rho^k e0 for k >= K1, no floor")
def floor_plateau_identical(quantizer: str, d: int, n: int, L: float, mu: float, lr: float, e0: float, K1: int,
                            s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r""":func:`floor_plateau` at :math:`\sigma_\star = 0`: the transient :math:`\rho^{K_1}e_0` only (D2 [N]; upper).

    The wrong reference of ``urq.floor``'s negative control: with heterogeneous workers
    (:math:`\sigma_\star > 0`) the quantization noise of the non-zero local gradients at
    :math:`x^\star` keeps the iterates off :math:`x^\star`, so a plateau above the transient is expected.

    Examples
    --------
    >>> round(floor_plateau_identical("none", 10, 4, 1.0, 0.5, 0.1, 1.0, 10), 6)   # rho = 0.91: 0.91**10
    0.389416
    """
    return floor_plateau(quantizer, d, n, L, mu, lr, 0.0, e0, K1, s=s, p=p, k=k)


@bound(kind="lower", provenance="B", paper=PAPER,
       statement="largest stable step with delay tau >= 2 / [L (1 + sqrt(1 + 8 tau (tau + 1)))] (sufficient condition)")
def delay_stepsize(tau: int, L: float) -> float:
    r"""Seed summary's step-size condition :math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` ([B], unverified; lower).

    It is the positive root of :math:`2\tau(\tau+1)L^2\gamma^2 + L\gamma - 1 = 0` (notes [N]): ``1/L`` at
    :math:`\tau=0`, about :math:`1/(\sqrt2 L\tau)` for large :math:`\tau`. As a *sufficient* condition, the
    stability threshold must lie above it: for delayed GD on a quadratic the exact threshold
    (:func:`delay_threshold_exact`) is 2 to 2.6 times larger for :math:`\tau = 0..64` (:math:`\pi/\sqrt2`
    asymptotically), the factor ``delay.bound_tightness`` plots against :math:`\tau`.

    Examples
    --------
    >>> delay_stepsize(0, 1.0), round(delay_stepsize(1, 1.0), 3)
    (1.0, 0.39)
    """
    return 2.0 / (L * (1.0 + math.sqrt(1.0 + 8.0 * tau * (tau + 1))))


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="delayed GD x_{k+1} = x_k - lr grad f(x_{k-tau}) on a quadratic with largest curvature L "
                 "is stable iff lr L < 2 sin(pi/(2(2 tau + 1)))")
def delay_threshold_exact(tau: int, L: float) -> float:
    r"""Exact stability threshold of delayed GD on a quadratic: :math:`2\sin(\pi/(2(2\tau+1)))/L` ([N]; equal).

    **Statement.** For :math:`f(x) = \frac12 (x-x^\star)^\top H(x-x^\star)` with eigenvalues in
    :math:`(0, L]` and a constant delay :math:`\tau`, the iteration
    :math:`x_{k+1} = x_k - \gamma\nabla f(x_{k-\tau})` converges for every start iff
    :math:`0 < \gamma < \gamma^\star = 2\sin\bigl(\pi/(2(2\tau+1))\bigr)/L`.

    **Derivation.** In the eigenbasis of ``H`` each component :math:`e_k` (eigenvalue
    :math:`\lambda`) follows :math:`e_{k+1} = e_k - \gamma\lambda e_{k-\tau}`, with characteristic
    polynomial :math:`z^{\tau+1} - z^\tau + \gamma\lambda = 0`. For :math:`\gamma\to 0^+` its roots are
    one near :math:`1-\gamma\lambda` and :math:`\tau` near 0, all inside the unit circle; they move
    continuously with :math:`\gamma`, so stability is first lost at the smallest :math:`\gamma\lambda`
    with a root :math:`z = e^{i\theta}` on the circle. There
    :math:`\gamma\lambda = z^\tau(1-z) = e^{i\tau\theta}\cdot 2\sin(\theta/2)\,e^{i(\theta/2-\pi/2)}`
    (for :math:`\theta\in(0,\pi]`; conjugate roots give the same values). This is real and positive
    iff :math:`(2\tau+1)\theta/2 - \pi/2 \in 2\pi\mathbb{Z}`, i.e.
    :math:`\theta_m = (4m+1)\pi/(2\tau+1)`, with :math:`\gamma\lambda = 2\sin(\theta_m/2)`; the
    smallest is :math:`m = 0`: :math:`\gamma\lambda = 2\sin(\pi/(2(2\tau+1)))`. The binding component
    is the largest eigenvalue :math:`\lambda = L`. Checked numerically (tests/test_urq_claims.py):
    bisection on the spectral radius of the polynomial's roots (``numpy.roots``) reproduces the formula
    to 1e-12 relative for :math:`\tau = 0..64`, and the radius exceeds 1 just above it (the crossing
    is outward). Special cases: :math:`\tau=0` gives :math:`2/L`, :math:`\tau=1` gives :math:`1/L`;
    for large :math:`\tau`, :math:`\gamma^\star L \approx \pi/(4\tau)`.

    Examples
    --------
    >>> delay_threshold_exact(0, 1.0), round(delay_threshold_exact(1, 1.0), 12)
    (2.0, 1.0)
    >>> round(delay_threshold_exact(2, 1.0), 6)   # 2 sin(pi/10) = (sqrt(5) - 1)/2
    0.618034
    """
    return 2.0 * math.sin(math.pi / (2.0 * (2 * tau + 1))) / L


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="delayed GD with Bernoulli compression (alpha = 1/p): largest step stable in mean square "
                 "<= min(2 sin(pi/(2(2 tau+1))), 2/alpha) / L")
def delay_compressed_limit(tau: int, L: float, alpha: float) -> float:
    r"""Stable step limit with delay :math:`\tau` and a URQ: :math:`\min(\gamma^\star_\tau, 2/(\alpha L))` ([N]; upper).

    **Statement.** For :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_{k-\tau}))` on a quadratic with largest
    curvature ``L``, ``Q`` unbiased with :math:`\mathbb{E}\|Q(v)\|^2 = \alpha\|v\|^2`:

    * the mean :math:`\mathbb{E}x_k` follows delayed GD exactly (``Q`` is unbiased and independent of
      the past), so no step above :math:`\gamma^\star_\tau` (:func:`delay_threshold_exact`) is stable
      *in mean* (nor in mean square, since :math:`\mathbb{E}\|x\|^2 \ge \|\mathbb{E}x\|^2`);
    * without delay, the component along the top eigenvector follows
      :math:`e_{k+1} = (1 - \gamma L b_k/p)e_k` for Bernoulli sparsification (keep probability
      :math:`p = 1/\alpha`); both its second moment
      (:math:`1 - 2\gamma L + \alpha\gamma^2L^2 < 1`) and its almost-sure growth
      (:math:`p\ln|1-\gamma L/p| < 0`) require :math:`\gamma < 2/(\alpha L)`.

    The first limit binds for large :math:`\tau`, the second for large :math:`\alpha`; the true
    threshold lies below both (and, by the seed summary's sufficient condition with
    :math:`L\to\alpha L`, above :math:`2/[\alpha L(1+\sqrt{1+8\tau(\tau+1)})]`, reported, not judged).
    So the bound is an upper bound on the threshold of stability IN MEAN SQUARE (both parts are
    necessary for it), not on single runs: the sample-path (Lyapunov) threshold lies above the
    mean-square one and can exceed the delay limit (1.105 times it measured at p = 0.1, tau = 16;
    a run decays while its mean square grows, carried by rare large excursions). Nor is it a bound on
    the mean alone (at :math:`\tau = 0` the mean is stable up to :math:`2/L` whatever :math:`\alpha`).
    ``delay.compressed_limit`` compares it with the exact mean-square threshold (the spectral radius
    of the second-moment map, :func:`simcomm.experiments.urq.second_moment_operator`); whether the
    compression part also bounds the mean-square threshold for :math:`\tau > 0` is what that check
    tests (not proved here).

    Examples
    --------
    >>> delay_compressed_limit(0, 1.0, 4.0), round(delay_compressed_limit(8, 1.0, 1.0), 4)
    (0.5, 0.1845)
    """
    return min(delay_threshold_exact(tau, L), 2.0 / (alpha * L))


@bound(kind="upper", provenance="B+N", paper=PAPER,
       statement="f - f* converges linearly: over the last tail_steps steps it falls at least as fast as the "
                 "rate (1 - mu lr / 2)^2 per step")
def linear_tail_drop(mu: float, lr: float, tail_steps: int) -> float:
    r"""Drop of :math:`f - f^\star` over ``tail_steps`` steps, witness rate :math:`(1-\mu\gamma/2)^2` ([B+N]; upper).

    **Statement [B].** The seed summary: the expected suboptimality of compressed (and delayed) gradient
    descent decreases *linearly* in the iteration count. The paper's contraction factor is unknown [X].

    **Witness [N].** A linear rate is only testable against a rate: this bound is the drop a rate of
    :math:`(1-\mu\gamma/2)^2` per step gives over the last ``tail_steps`` steps,
    :math:`(1-\mu\gamma/2)^{2\,\mathrm{tail\_steps}}`, half the per-step speed of the slowest mode of
    plain GD at the same step (:math:`(1-\mu\gamma)^2` on :math:`f`). The experiments set the horizon to
    :math:`K = 2\lceil\ln 10/(\mu\gamma)\rceil` and ``tail_steps = K/2``, so the bound is about
    :math:`0.1`: a run that stalls at a floor (drop near 1), converges sublinearly (a drop of 1/2 over
    the second half for :math:`O(1/k)`) or diverges exceeds it. It is the project's witness of "linear",
    not the paper's rate.

    Examples
    --------
    >>> round(linear_tail_drop(0.1, 0.2, 115), 3)    # tail_steps = ln 10 / (mu lr): about 0.1
    0.099
    """
    return (1.0 - mu * lr / 2.0) ** (2 * tail_steps)


@bound(kind="equal", provenance="B+N", paper=PAPER,
       statement="at the step 1/((1 + beta) L), iterations to eps grow as 1 + beta: K_eps(beta) = (1 + beta) K_eps(0), "
                 "within a factor 2 either way")
def iterations_beta(alpha: float, K0: float) -> float:
    r"""Iterations to eps of URQ-compressed GD at :math:`\gamma = 1/(\alpha L)`: :math:`\alpha K_0` ([B+N]; equal).

    **Statement [B].** The seed summary: a larger variance factor :math:`\beta` needs more iterations.

    **Form [N].** D1 (:func:`rate_strongly_convex`) contracts at :math:`1 - \mu/(\alpha L)` per step, so
    the iterations to a fixed :math:`\varepsilon` scale as :math:`1/(\mu\gamma) = \alpha L/\mu`:
    :math:`K_\varepsilon(\beta) = (1+\beta) K_\varepsilon(0)`, with :math:`K_\varepsilon(0) =` ``K0`` the
    measured iterations of exact GD at :math:`1/L` on the same problem. The factor-2 band (the claim's
    ``margin_rel = 1`` on the log scale) is derived from two per-step inequalities at a common point
    :math:`x` with gradient :math:`g`: compressed GD's expected decrease is at least
    :math:`\gamma(1 - \alpha L\gamma/2)\|g\|^2 = \|g\|^2/(2\alpha L)` (descent lemma with
    :math:`\mathbb E\|Q(g)\|^2 \le \alpha\|g\|^2`) and at most :math:`\gamma\|g\|^2 = \|g\|^2/(\alpha L)`
    (convexity, :math:`\mathbb E Q(g) = g`); exact GD at :math:`1/L` decreases :math:`f` by between
    :math:`\|g\|^2/(2L)` and :math:`\|g\|^2/L`. So one compressed step does between :math:`1/(2\alpha)` and
    :math:`2/\alpha` of a GD step's work at the same point, and the iteration ratio lies within a factor 2
    of :math:`\alpha`. A heuristic transfer from a point to a trajectory, not a theorem: the claim tests it.

    Examples
    --------
    >>> iterations_beta(3.0, 52.0)
    156.0
    """
    return alpha * K0


@bound(kind="equal", provenance="B+N", paper=PAPER,
       statement="compressed IAG at c x the seed step with tau = N - 1, L -> alpha L: iterations to eps "
                 "K_eps = K_eps(GD, 1/L) / (L lr) = K_eps(0) alpha (1 + sqrt(1 + 8 tau (tau + 1))) / (2 c), "
                 "within a factor 2 either way")
def iterations_iag(K0: float, alpha: float, tau: int, c: float = 1.0) -> float:
    r"""Iterations to :math:`\varepsilon` of compressed IAG at the seed step: :math:`K_0/(L\gamma)` ([B+N]; equal).

    **Statement [B].** The seed summary: compressed IAG converges (linearly), with the step condition
    :math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` for staleness :math:`\tau` (here :math:`\tau = N - 1`,
    cyclic order, and :math:`L \to \alpha L` for compressed messages).

    **Rate's dependence [N].** A linear rate :math:`1 - \Theta(\mu\gamma)` at
    :math:`\gamma = c\cdot 2/[\alpha L(1+\sqrt{1+8\tau(\tau+1)})]` needs iterations proportional to
    :math:`1/\gamma`; scaled by exact GD at :math:`1/L` (``K0``, measured on the same problem):
    :math:`K_\varepsilon = K_0/(L\gamma) = K_0\,\alpha(1+\sqrt{1+8\tau(\tau+1)})/(2c)`, about
    :math:`\sqrt2\,\alpha N K_0/c` for large :math:`N`: the contraction PER EPOCH of :math:`N` steps tends to
    a constant. At :math:`\tau = 0`, :math:`c = 1` it is :func:`iterations_beta`. The factor-2 band is that
    of :func:`iterations_beta` (per-step work of a step :math:`\gamma \le 1/L` between :math:`L\gamma/2` and
    :math:`2L\gamma` of a GD step at :math:`1/L`); the staleness is assumed to cost less than that.

    Examples
    --------
    >>> iterations_iag(52.0, 1.0, 0)
    52.0
    >>> iterations_iag(10.0, 2.0, 1)   # 1 + sqrt(17) = 5.123...
    51.23105625617661
    """
    return K0 * alpha * (1.0 + math.sqrt(1.0 + 8.0 * tau * (tau + 1))) / (2.0 * c)


def bits_to_eps(quantizer: str, d: int, L: float, mu: float, gap_ratio: float, s: int = 1, p: float = 1.0,
                k: int = 1) -> float:
    r"""D1 prediction of bits to reach :math:`f - f^\star \le \varepsilon`: :math:`K(\varepsilon)\,b(Q)` ([N]).

    :math:`K(\varepsilon) = \lceil \ln(\mathrm{gap\_ratio}) / -\ln(1-\mu/(\alpha L))\rceil`,
    ``gap_ratio`` :math:`= (f(x_0)-f^\star)/\varepsilon`, times :func:`message_bits`. Not a bound: it
    is the predicted ordering of the order claim ``urq.bits_to_eps`` (only the ranking is judged), and
    tests/test_urq_claims.py checks that it ranks the spec's ``lower`` quantizer first.

    Examples
    --------
    >>> bits_to_eps("none", 10, 1.0, 0.5, math.e ** 2) == 320 * math.ceil(2 / math.log(2))
    True
    """
    rate = 1.0 - mu / (alpha(quantizer, d, s=s, p=p, k=k) * L)
    K = math.ceil(math.log(gap_ratio) / -math.log(rate))
    return K * message_bits(quantizer, d, s=s, p=p, k=k)


@bound(kind="slope", provenance="B+N", paper=PAPER, constant=True,
       statement="on a non-convex f the running average (1/K) sum_{k<K} E||grad f(x_k)||^2 falls like 1/K: "
                 "log-log slope -1 in K")
def nonconvex_avg_slope() -> float:
    r"""Log-log slope in :math:`K` of :math:`\frac1K\sum_{k<K}\mathbb E\|\nabla f(x_k)\|^2`: :math:`-1` ([B+N]; slope).

    **Statement [B].** The seed summary: on non-convex problems the expected gradient norm goes to zero
    at rate :math:`O(1/K)`.

    **Form [N].** D1 (:func:`rate_nonconvex`) bounds the running average by :math:`2\alpha L(f(x_0)-f^\star)/K`
    at :math:`\gamma = 1/(\alpha L)`; read as an exponent, the average falls with slope :math:`-1` in
    :math:`\log K`. The slope of a running average of non-negative terms is never below :math:`-1`
    (its secant slope between :math:`K_1 < K_2` is :math:`\log(S_{K_2}/S_{K_1})/\log(K_2/K_1) - 1 \ge -1`,
    :math:`S_K` the partial sum), so a two-sided band around :math:`-1` judges the one-sided statement
    "slope at most :math:`-1` + tol": the average decays at least like :math:`K^{-1+\mathrm{tol}}`.

    Examples
    --------
    >>> nonconvex_avg_slope()
    -1.0
    """
    return -1.0


@bound(kind="upper", provenance="B+N", paper=PAPER,
       statement="total bits to eps at the QSGD precision s* = argmin_s alpha_s b_s (the D1 prediction) are within "
                 "a factor 1 + margin of the minimum over s")
def bits_optimum_ratio(margin: float) -> float:
    r"""Bits at the predicted optimum over the measured minimum: at most :math:`1 + \mathrm{margin}` ([B+N]; upper).

    **Statement [B].** The seed summary: communication and iteration complexity trade off through
    :math:`\beta`. **Prediction [N].** D1 (:func:`iterations_beta`) makes iterations to eps grow as
    :math:`\alpha_s = 1 + \beta_s`, so total bits :math:`\propto \alpha_s b_s` with :math:`b_s` the bits per
    message: the optimum precision is :math:`s^\ast = \arg\min_s \alpha_s b_s` (QSGD at :math:`d = 31`: 617,
    473, 373, 278, 244, 257, 282, 312, 342 bits-units for :math:`s = 1 \dots 256`, so :math:`s^\ast = 16`,
    interior). The experiment
    measures the bits at :math:`s^\ast` over the minimum over the swept :math:`s`; the claim bounds it.

    Examples
    --------
    >>> bits_optimum_ratio(0.1)
    1.1
    """
    return 1.0 + margin


@bound(kind="lower", provenance="B+N", paper=PAPER,
       statement="fast convergence with limited information exchange: exact GD needs at least `factor` times the "
                 "bits of the bits-optimal QSGD to reach eps")
def bits_saving_factor(factor: float) -> float:
    r"""Exact GD's bits to eps over the best QSGD precision's: at least ``factor`` ([B+N]; lower).

    **Statement [B].** The seed summary: communication and iteration complexity trade off through
    :math:`\beta`, and fast convergence is possible with limited information exchange. **Form [N].** The
    saving is judged at a stated factor (D1 predicts :math:`32d/(\alpha_{s^\ast} b_{s^\ast})`, 4.1 at
    :math:`d = 31`, 4.0 at :math:`d = 65`).

    Examples
    --------
    >>> bits_saving_factor(2.0)
    2.0
    """
    return factor


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="scaled sign with error feedback at 1/L reaches eps with at most `factor` times the bits of the "
                 "best unbiased or low-precision quantizer (QSGD s = 1..256, ternary, natural, uint8, fp16)")
def sign_ef_bits_ratio(factor: float) -> float:
    r"""Bits to eps of scaled sign with error feedback over the best URQ's: at most ``factor`` ([N]; upper).

    **Form [N].** Scaled sign :math:`C(v) = \frac{\|v\|_1}{d}\operatorname{sign}(v)` is biased (not a URQ) and
    contracts only by :math:`\delta = \|v\|_1^2/(d\|v\|^2) \ge 1/d`; read through the worst case, error
    feedback's iterations grow like :math:`1/\delta \le d`, which puts it LAST in
    :math:`\alpha_c b_c` (:math:`d(32 + d)` against QSGD's 244 at :math:`d = 31`). The experiment runs it at
    the plain step :math:`1/L` and measures its bits to eps over the minimum over the URQ family; the claim
    bounds that ratio (below 1: the family's bits optimum is the lowest precision, not an interior one).

    Examples
    --------
    >>> sign_ef_bits_ratio(0.6)
    0.6
    """
    return factor


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="at equal steps, asynchronous compressed GD on the workers' own clocks reaches eps in at most "
                 "`factor` times the simulated time of synchronous compressed GD under shifted-exponential "
                 "stragglers")
def async_time_ratio(factor: float) -> float:
    r"""Async over sync simulated time to eps at equal steps: at most ``factor`` ([N]; upper).

    **Form [N].** Under stragglers :math:`s + \mathrm{Exp}(\sigma)` a synchronous step waits for the slowest
    of :math:`n` nodes, :math:`s + \sigma H_n` on average, while an asynchronous worker's round costs
    :math:`s + \sigma`; at the same step and with the delays a round of :math:`n` updates brings
    (about :math:`n - 1`), the iterations per round are about those of a synchronous step, so the time
    ratio is about :math:`(s + \sigma + u + w)/(s + \sigma H_n + T_{ps})` (0.48-0.67 for
    :math:`n = 16 \dots 4`, :math:`s = \sigma`); the claim bounds it by a fixed ``factor``.

    Examples
    --------
    >>> async_time_ratio(0.8)
    0.8
    """
    return factor


@bound(kind="lower", provenance="B+N", paper=PAPER,
       statement="at the largest steps the seed condition certifies (sync 1/(alpha L); async n x the condition for "
                 "its largest delay), asynchronous compressed GD needs at least `factor` times sync's simulated "
                 "time to eps under stragglers")
def async_condition_slowdown(factor: float) -> float:
    r"""Async over sync simulated time to eps at the certified steps: at least ``factor`` ([B+N]; lower).

    **Step [B].** The seed condition :math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` with
    :math:`L \to \alpha L` and :math:`\tau` the largest delay of the asynchronous run. **Form [N].** With
    stragglers the largest delay is several times :math:`n` (the fast workers lap a slow one), the
    certified step falls like :math:`1/\tau_{\max}`, and the iterations grow by more than the time a round
    saves; the claim bounds the time ratio from below by ``factor``.

    Examples
    --------
    >>> async_condition_slowdown(2.0)
    2.0
    """
    return factor


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="delayed GD with a constant delay tau on a smooth strongly convex f is stable (from the start "
                 "used) up to the exact quadratic threshold 2 sin(pi/(2(2 tau + 1)))/L_local of its linearisation "
                 "at x*, L_local the largest eigenvalue of the Hessian at x*")
def delay_threshold_local(tau: int, L_local: float) -> float:
    r"""Stability threshold of delayed GD set by the Hessian at the minimiser: :math:`2\sin(\pi/(2(2\tau+1)))/L_\star`.

    **Form [N].** Near :math:`x^\star` the iteration :math:`x_{k+1} = x_k - \gamma\nabla f(x_{k-\tau})` is, to
    first order, delayed GD on the quadratic with Hessian :math:`\nabla^2 f(x^\star)`; by
    :func:`delay_threshold_exact` it is locally stable iff
    :math:`\gamma < 2\sin(\pi/(2(2\tau+1)))/L_\star`, :math:`L_\star = \lambda_{\max}(\nabla^2 f(x^\star))`.
    Above it :math:`x^\star` repels (generic starts do not converge); below it the iterates converge once
    they are near :math:`x^\star`. So the measured threshold equals it when the run reaches the basin and
    the unstable mode is excited; on logistic regression, whose Hessian shrinks away from the data,
    :math:`L_\star` is several times smaller than the global :math:`L`, which is why the seed condition on
    :math:`L` leaves a large slack there. The claim passes :math:`L_\star` as a constant computed from the
    data (tests check it).

    Examples
    --------
    >>> delay_threshold_local(0, 0.5)
    4.0
    """
    return delay_threshold_exact(tau, L_local)
