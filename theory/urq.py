r"""Bounds for Khirirat, Feyzmahdavian & Johansson (2018), "Distributed learning with compressed
gradients" (arXiv 1806.06573): unbiased random quantizers (URQs), delayed and incremental methods.

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
    "variance_ratio_exact",
    "variance_factor",
    "rate_strongly_convex",
    "rate_nonconvex",
    "floor_plateau",
    "delay_stepsize",
    "delay_stepsize_slope",
    "bits_to_eps",
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
       statement="E[Q(v)] = v: the Monte Carlo bias of every URQ, projected on a fixed direction, is 0")
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
       statement="E||Q(v)-v||^2 equals the closed form (QSGD: (||v||^2/s^2) sum p_i(1-p_i)): ratio 1")
def variance_ratio_exact() -> float:
    r"""Exact variance: :math:`\mathbb{E}\|Q(v)-v\|^2 / V(v) = 1` (notes B3 [N]; equal).

    :math:`V(v)` is the closed form of each quantizer: QSGD :math:`(\|v\|^2/s^2)\sum_i p_i(1-p_i)`,
    :math:`p_i` the fractional part of :math:`s|v_i|/\|v\|`; ternary
    :math:`\|v\|_\infty\|v\|_1-\|v\|^2`; Bernoulli :math:`(1/p-1)\|v\|^2`; stochastic rounding
    :math:`\delta^2\sum_i f_i(1-f_i)`. The observable is the Monte Carlo mean divided by :math:`V(v)`.

    Examples
    --------
    >>> variance_ratio_exact()
    1.0
    """
    return 1.0


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
       statement="single-stream compressed GD, gamma = 1/(alpha L): per-step rate of E[f - f*] <= 1 - mu/(alpha L)")
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
       statement="gamma = 1/(alpha L): (1/K) sum_{k<K} E||grad f(x_k)||^2 <= 2 alpha L (f(x_0) - f*) / K")
def rate_nonconvex(quantizer: str, d: int, L: float, f0_gap: float, K: int, s: int = 1, p: float = 1.0,
                   k: int = 1) -> float:
    r"""Non-convex rate of D1: :math:`\frac1K\sum_{k<K}\mathbb{E}\|\nabla f(x_k)\|^2 \le 2\alpha L(f(x_0)-f^\star)/K` ([N]; upper).

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
       statement="N workers, E||x_k - x*||^2 <= rho^k e0 + 2 gamma beta sigma*^2 / (N (2 mu - gamma L^2 (1 + 2 beta/N)))")
def floor_plateau(quantizer: str, d: int, N: int, L: float, mu: float, gamma: float, sigma2: float, e0: float,
                  K1: int, s: int = 1, p: float = 1.0, k: int = 1) -> float:
    r"""Plateau of D2: averaged :math:`\mathbb{E}\|x_k-x^\star\|^2` over :math:`k \ge K_1` (notes D2 [N]; upper).

    D2: :math:`\mathbb{E}\|x_{k+1}-x^\star\|^2 \le \rho\|x_k-x^\star\|^2 + 2\gamma^2\beta\sigma_\star^2/N` with
    :math:`\rho = 1-2\gamma\mu+\gamma^2L^2(1+2\beta/N)`. Unrolled, for :math:`\rho < 1` and every
    :math:`k\ge K_1`: :math:`\mathbb{E}\|x_k-x^\star\|^2 \le \rho^{K_1}e_0 + F`,
    :math:`F = 2\gamma\beta\sigma_\star^2/(N(2\mu-\gamma L^2(1+2\beta/N)))` the floor; with identical data
    (:math:`\sigma_\star = 0`) only the vanishing transient :math:`\rho^{K_1}e_0` is left. ``inf`` when
    :math:`\rho \ge 1` (no guarantee).

    Examples
    --------
    >>> round(floor_plateau("bernoulli", 10, 4, 1.0, 0.5, 0.1, 2.0, 1.0, 10**6, p=0.5), 6)   # F only
    0.117647
    """
    b = beta(quantizer, d, s=s, p=p, k=k)
    rho = 1.0 - 2.0 * gamma * mu + gamma**2 * L**2 * (1.0 + 2.0 * b / N)
    if not rho < 1.0:
        return math.inf
    floor = 2.0 * gamma * b * sigma2 / (N * (2.0 * mu - gamma * L**2 * (1.0 + 2.0 * b / N)))
    return rho**K1 * e0 + floor


@bound(kind="lower", provenance="B", paper=PAPER,
       statement="largest stable step with delay tau >= 2 / [L (1 + sqrt(1 + 8 tau (tau + 1)))] (sufficient condition)")
def delay_stepsize(tau: int, L: float) -> float:
    r"""Seed summary's step-size condition :math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` ([B], unverified; lower).

    It is the positive root of :math:`2\tau(\tau+1)L^2\gamma^2 + L\gamma - 1 = 0` (notes [N]): ``1/L`` at
    :math:`\tau=0`, about :math:`1/(\sqrt2 L\tau)` for large :math:`\tau`. As a *sufficient* condition, the
    empirical stability threshold should lie above it; how far above is reported, not judged.

    Examples
    --------
    >>> delay_stepsize(0, 1.0), round(delay_stepsize(1, 1.0), 3)
    (1.0, 0.39)
    """
    return 2.0 / (L * (1.0 + math.sqrt(1.0 + 8.0 * tau * (tau + 1))))


@bound(kind="slope", provenance="B+N", paper=PAPER,
       statement="gamma_max falls like 1/tau: log-log slope of gamma_max against tau is -1")
def delay_stepsize_slope() -> float:
    r"""Predicted log-log slope of :math:`\gamma_{\max}` in :math:`\tau`: :math:`-1`.

    From the [B] condition, :math:`2/(1+\sqrt{1+8\tau(\tau+1)}) \sim 1/(\sqrt2\tau)` ([N] asymptotics); for
    delayed gradient descent on a quadratic the exact threshold :math:`2\sin(\pi/(2(2\tau+1)))/L` has the
    same slope. Finite ranges of :math:`\tau` give slopes a little above -1 (-0.92 for
    :math:`\tau\in[2, 32]` with the exact threshold).

    Examples
    --------
    >>> delay_stepsize_slope()
    -1.0
    """
    return -1.0


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
