r"""Closed forms and constants of the compressors issue 27 adds (sign, casts, 8-bit, natural compression).

Pure functions of scalars (math only). Provenance tags:

* [N] derived here (the derivation is in each docstring) and checked numerically, not quoted from a paper;
* [S] stated in issue 27 as the result of Thomsen, Taylor & Dieuleveut 2025 (arXiv 2506.05271), whose text
  was not read here: the optimal step sizes of EF / EF21 and of compressed GD.

Each bound is filed under the paper its compressor or step comes from (``sign``, ``natural``, ``thomsen``;
the float16 facts under ``net``).
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = [
    "scaled_sign_l1_error",
    "scaled_sign_l2_error",
    "contraction_limit",
    "non_contraction_limit",
    "fp16_sum_overflows",
    "FP16_MAX",
    "natural_variance_bound",
    "bias_zero",
    "fp16_divide_first_underflows",
    "FP16_HALF_SUBNORMAL",
    "ef_optimal_step",
    "cgd_optimal_step",
    "ef_optimal_rate",
    "cgd_scaling_rate",
    "feedback_scaling_rate",
    "ef_reset_rate",
    "cgd_minus_ef_rate",
]

#: the largest finite IEEE half-precision value, (2 - 2^-10) 2^15
FP16_MAX = 65504.0
#: half the smallest float16 subnormal, 2^-25: round to nearest (ties to even) sends |x| <= it to 0
FP16_HALF_SUBNORMAL = 2.0 ** -25


@bound(kind="equal", provenance="N", paper="sign",
       statement="scaled sign with a = ||v||_1/d: ||C(v) - v||^2 = ||v||^2 - ||v||_1^2/d exactly")
def scaled_sign_l1_error(norm2: float, norm1: float, d: int) -> float:
    r"""Error of the EF-signSGD scaled sign, :math:`\|v\|^2 - \|v\|_1^2/d` [N].

    :math:`\|a\,\mathrm{sgn}(v) - v\|^2 = \|v\|^2 - 2a\|v\|_1 + a^2 d` (since
    :math:`\langle \mathrm{sgn}(v), v\rangle = \|v\|_1`), and :math:`a = \|v\|_1/d` gives the form.

    Examples
    --------
    >>> scaled_sign_l1_error(1.0, 1.0, 4)    # a 1-sparse unit vector: 1 - 1/d
    0.75
    """
    return norm2 - norm1 * norm1 / d


@bound(kind="equal", provenance="N", paper="sign",
       statement="scaled sign with a = ||v||/sqrt(d): ||C(v) - v||^2 = 2 ||v||^2 (1 - ||v||_1/(sqrt(d) ||v||))")
def scaled_sign_l2_error(norm2: float, norm1: float, d: int) -> float:
    r"""Error of the 1-bit-Adam-scaled sign, :math:`2\|v\|^2 - 2\|v\|\,\|v\|_1/\sqrt d` [N].

    Examples
    --------
    >>> round(scaled_sign_l2_error(1.0, 1.0, 1000), 4)   # 1-sparse at d = 1000: 1.94 ||v||^2
    1.9368
    """
    return 2.0 * norm2 - 2.0 * math.sqrt(norm2) * norm1 / math.sqrt(d)


@bound(kind="upper", provenance="N", paper="sign",
       statement="a contraction: ||C(v) - v||^2 <= ||v||^2 (the squared norm of v itself)")
def contraction_limit(norm2: float) -> float:
    r"""The contraction limit :math:`\|v\|^2`: a compressor with :math:`\|C(v)-v\|^2 > \|v\|^2` is not one [N].

    Examples
    --------
    >>> contraction_limit(2.5)
    2.5
    """
    return norm2


@bound(kind="lower", provenance="N", paper="sign",
       statement="not a contraction: ||C(v) - v||^2 >= ||v||^2 (the squared norm of v itself)")
def non_contraction_limit(norm2: float) -> float:
    r"""The same limit :math:`\|v\|^2`, as the lower bound a compressor that is not a contraction exceeds [N].

    Examples
    --------
    >>> non_contraction_limit(2.5)
    2.5
    """
    return norm2


@bound(kind="equal", provenance="N", paper="net",
       statement="summing n float16 gradients of scale s before dividing by n overflows iff n s > 65504")
def fp16_sum_overflows(n: int, s: float, limit: float = FP16_MAX) -> float:
    r"""1.0 if :math:`n s >` ``limit`` (65504: the sum of ``n`` values ``s`` leaves float16's range), else 0.0 [N].

    The exact threshold of round-to-nearest is 65520 (halfway to the next binade's first value
    :math:`2^{16}`); cells are kept away from both (ratios 0.9 and 1.1), where the two agree.

    Examples
    --------
    >>> fp16_sum_overflows(64, 1100.0), fp16_sum_overflows(64, 900.0)
    (1.0, 0.0)
    """
    return 1.0 if n * s > limit else 0.0


@bound(kind="upper", provenance="N", paper="natural",
       statement="natural compression: E||C(v) - v||^2 <= ||v||^2/8 (beta = 1/8)")
def natural_variance_bound(norm2: float) -> float:
    r""":math:`\|v\|^2/8` [N].

    Per coordinate :math:`(2^{e+1} - t)(t - 2^e) \le t^2/8`, with equality at :math:`t = \tfrac43 2^e`.

    Examples
    --------
    >>> natural_variance_bound(8.0)
    1.0
    """
    return norm2 / 8.0


@bound(kind="equal", provenance="N", paper="natural", constant=True,
       statement="an unbiased compressor: E C(v) - v = 0 along every direction")
def bias_zero() -> float:
    """The bias of an unbiased compressor, 0 [N].

    Examples
    --------
    >>> bias_zero()
    0.0
    """
    return 0.0


@bound(kind="equal", provenance="N", paper="net",
       statement="dividing n float16 gradients of scale s by n before summing flushes them to 0 iff s/n <= 2^-25 "
                 "(half the smallest subnormal)")
def fp16_divide_first_underflows(n: int, s: float, limit: float = FP16_HALF_SUBNORMAL) -> float:
    r"""1.0 if :math:`s/n \le 2^{-25}` (each divided value rounds to 0 in float16), else 0.0 [N].

    The smallest positive float16 is :math:`2^{-24}`; round to nearest sends :math:`|x| < 2^{-25}` to 0 and
    the tie :math:`2^{-25}` to 0 (even). Summing first keeps :math:`n s` in range (for :math:`n s \le 65504`)
    and the division then returns about :math:`s`. Cells are kept at least 10% from the threshold, where the
    float16 rounding of :math:`s` itself (below 3% for :math:`s \ge 10^{-6}`) cannot move them across.

    Examples
    --------
    >>> fp16_divide_first_underflows(1024, 1e-5), fp16_divide_first_underflows(8, 1e-5)
    (1.0, 0.0)
    """
    return 1.0 if s / n <= limit else 0.0


def _eps(delta: float) -> float:
    if not (0 < delta <= 1):
        raise ValueError(f"delta = {delta!r} is not allowed; use 0 < delta <= 1")
    return math.sqrt(1.0 - delta)


def _check_lm(L: float, mu: float) -> None:
    if not (0 < mu <= L < math.inf):
        raise ValueError(f"mu = {mu!r}, L = {L!r} are not allowed; use 0 < mu <= L")


@bound(kind="equal", provenance="S", paper="thomsen",
       statement="the optimal step of EF and of EF21 on L-smooth mu-strongly convex functions with a delta-"
                 "compressor: 2/(L + mu) delta/(1 + sqrt(1 - delta))^2 (Thomsen, Taylor, Dieuleveut 2025)")
def ef_optimal_step(L: float, mu: float, delta: float) -> float:
    r""":math:`\eta_{EF} = \eta_{EF21} = \frac{2}{L+\mu}\frac{\delta}{(1+\sqrt{1-\delta})^2}` [S].

    As stated in issue 27 for Thomsen, Taylor & Dieuleveut 2025 (arXiv 2506.05271); the paper was not
    read. :func:`ef_optimal_rate` derives [N] that this step balances the worst fixed scaling at both
    ends of the spectrum.

    Examples
    --------
    >>> round(ef_optimal_step(1.0, 0.1, 0.5), 6)
    0.311951
    """
    _check_lm(L, mu)
    e = _eps(delta)
    return 2.0 / (L + mu) * delta / (1.0 + e) ** 2


@bound(kind="equal", provenance="S", paper="thomsen",
       statement="the optimal step of compressed GD without feedback: 2/((1 + sqrt(1 - delta))(L + mu)) "
                 "(Thomsen, Taylor, Dieuleveut 2025)")
def cgd_optimal_step(L: float, mu: float, delta: float) -> float:
    r""":math:`\eta_{CGD} = \frac{2}{(1+\sqrt{1-\delta})(L+\mu)}` [S] (as stated in issue 27; paper not read).

    Not the minimiser of compressed GD's worst case over fixed scalings, :math:`2/((1+\varepsilon)L +
    (1-\varepsilon)\mu)`, nor of the one-step PEP worst case (:mod:`theory.pep`, the same step): the paper's
    compressor class or measure must differ from those; :func:`cgd_scaling_rate` gives the rate at any step.

    Examples
    --------
    >>> round(cgd_optimal_step(1.0, 0.1, 0.5), 6)
    1.065066
    """
    _check_lm(L, mu)
    return 2.0 / ((1.0 + _eps(delta)) * (L + mu))


@bound(kind="equal", provenance="N", paper="thomsen",
       statement="EF and EF21 at eta_EF on diag(mu, L) with the worst fixed scaling C(v) = c v, |1 - c| <= "
                 "sqrt(1 - delta): both contract at (tau + sqrt(tau^2 + 4 eps))/2, tau = (1 - eps)(L - mu)/(L + mu)")
def ef_optimal_rate(L: float, mu: float, delta: float) -> float:
    r"""Worst-case rate of EF and EF21 at :math:`\eta_{EF}` over fixed scalings, in closed form [N].

    **Derivation.** On a 1-D quadratic of curvature :math:`\lambda` with :math:`C(v) = c v`, EF
    (:math:`p = g + e`, :math:`x' = x - \eta c p`, :math:`e' = (1-c)p`) and EF21 (:math:`h' = (1-c)h +
    c g`, :math:`x' = x - \eta h'`) are linear maps of :math:`(x, e)` and :math:`(x, h)` with matrices
    :math:`\begin{pmatrix}1-\eta c\lambda & -\eta c\\(1-c)\lambda & 1-c\end{pmatrix}` and
    :math:`\begin{pmatrix}1-\eta c\lambda & -\eta(1-c)\\c\lambda & 1-c\end{pmatrix}`: the same trace
    :math:`1 - c + 1 - \eta c\lambda` and determinant :math:`1 - c`, so **the same eigenvalues at every step
    and curvature** (the claimed equality, for this class). For the stretch :math:`c = 1 + \varepsilon`
    the determinant is :math:`-\varepsilon` and the spectral radius :math:`(|\tau| + \sqrt{\tau^2 +
    4\varepsilon})/2`, :math:`\tau = -\varepsilon + 1 - \eta(1+\varepsilon)\lambda`; it is largest at the ends
    :math:`\lambda \in \{\mu, L\}`, and :math:`|\tau(\mu)| = |\tau(L)|` gives
    :math:`\eta = 2(1-\varepsilon)/((1+\varepsilon)(L+\mu)) = \eta_{EF}` (the [S] step: derived here as the
    balancing step of the stretch), with :math:`|\tau| = (1-\varepsilon)(L-\mu)/(L+\mu)`. That the stretch
    is the worst scaling at this step is checked by :func:`feedback_scaling_rate` (and judged by the claim).

    Examples
    --------
    >>> round(ef_optimal_rate(1.0, 0.1, 0.5), 6)
    0.96921
    """
    _check_lm(L, mu)
    e = _eps(delta)
    tau = (1.0 - e) * (L - mu) / (L + mu)
    return (tau + math.sqrt(tau * tau + 4.0 * e)) / 2.0


@bound(kind="equal", provenance="N", paper="thomsen",
       statement="compressed GD x' = x - lr c grad f(x) on diag(mu, L), worst fixed scaling |1 - c| <= sqrt(1 - "
                 "delta): rate max(|1 - lr (1 - eps) mu|, |1 - lr (1 + eps) L|)")
def cgd_scaling_rate(L: float, mu: float, delta: float, lr: float) -> float:
    r"""Worst rate of compressed GD over fixed scalings: :math:`\max|1-\eta c\lambda|` at the corners [N].

    :math:`\mu_\varepsilon = (1-\varepsilon)\mu`, :math:`L_\varepsilon = (1+\varepsilon)L`.

    :math:`|1 - \eta c\lambda|` is convex in :math:`c\lambda \in [(1-\varepsilon)\mu, (1+\varepsilon)L]`, so its
    maximum is at a corner. (The square of it is the f-gap rate of :func:`theory.pep.inexact_gd_rate_closed_form`.)

    Examples
    --------
    >>> round(cgd_scaling_rate(1.0, 0.1, 0.5, 1.0650662502307362), 6)
    0.968805
    """
    _check_lm(L, mu)
    e = _eps(delta)
    return max(abs(1.0 - lr * (1.0 - e) * mu), abs(1.0 - lr * (1.0 + e) * L))


def _sr2(a, b, c, d):
    """Spectral radius of the 2 x 2 matrix [[a, b], [c, d]]."""
    tr, det = a + d, a * d - b * c
    disc = tr * tr - 4.0 * det
    if disc >= 0:
        r = math.sqrt(disc)
        return max(abs(tr + r), abs(tr - r)) / 2.0
    return math.sqrt(det)


def _power11(a, b, c, d, R):
    """The (1, 1) entry of [[a, b], [c, d]]^R."""
    m = (1.0, 0.0, 0.0, 1.0)
    for _ in range(R):
        m = (m[0] * a + m[1] * c, m[0] * b + m[1] * d, m[2] * a + m[3] * c, m[2] * b + m[3] * d)
    return m[0]


@bound(kind="equal", provenance="N", paper="thomsen",
       statement="EF / EF21 on diag(mu, L) with C(v) = c v over the grid of n_scalings values c in [1 - eps, 1 + eps]: "
                 "worst rate max spectral radius; with the memory reset every R steps, max |(M^R)_11|^(1/R)")
def feedback_scaling_rate(L: float, mu: float, delta: float, lr: float, reset_every: int = 0,
                          n_scalings: int = 41) -> float:
    r"""Worst per-step rate of EF (EF21: the same) over the scalings :math:`c_j` and :math:`\lambda \in \{\mu, L\}` [N].

    :math:`c_j = 1 - \varepsilon + 2\varepsilon j/(J-1)`, :math:`j = 0..J-1` (``J = n_scalings``); ``M`` is EF's
    matrix of :func:`ef_optimal_rate`. Without reset (``reset_every = 0``) the rate is the spectral radius of
    ``M``; a memory reset every ``R`` steps (the bucket-rebuild / checkpoint bug: :math:`e = 0` at steps
    :math:`R, 2R, \dots`) makes the ``R``-step map :math:`x \mapsto (M^R)_{11} x`, so the rate is
    :math:`|(M^R)_{11}|^{1/R}`: ``R = 1`` is compressed GD without feedback, and :math:`R \to \infty` tends to
    the spectral radius. (EF21's reset, :math:`h = 0`, is a different map; only EF's is given here.)

    Examples
    --------
    >>> eta = ef_optimal_step(1.0, 0.1, 0.5)
    >>> round(feedback_scaling_rate(1.0, 0.1, 0.5, eta), 6) == round(ef_optimal_rate(1.0, 0.1, 0.5), 6)
    True
    >>> r1 = feedback_scaling_rate(1.0, 0.1, 0.5, eta, reset_every=1)   # a reset every step: no feedback
    >>> round(r1, 6) == round(cgd_scaling_rate(1.0, 0.1, 0.5, eta), 6)
    True
    """
    _check_lm(L, mu)
    e = _eps(delta)
    if int(n_scalings) < 2 or int(reset_every) < 0:
        raise ValueError(f"n_scalings = {n_scalings!r} (>= 2) or reset_every = {reset_every!r} (>= 0) not allowed")
    worst = 0.0
    J, R = int(n_scalings), int(reset_every)
    for j in range(J):
        c = 1.0 - e + 2.0 * e * j / (J - 1)
        for lam in (mu, L):
            a, b, cc, d = 1.0 - lr * c * lam, -lr * c, (1.0 - c) * lam, 1.0 - c
            rate = _sr2(a, b, cc, d) if R == 0 else abs(_power11(a, b, cc, d, R)) ** (1.0 / R)
            worst = max(worst, rate)
    return worst


@bound(kind="equal", provenance="S+N", paper="thomsen",
       statement="EF at its stated optimal step eta_EF with the memory reset every R steps, worst fixed scaling on "
                 "diag(mu, L): rate max |(M^R)_11|^(1/R) (R = 1: compressed GD at eta_EF)")
def ef_reset_rate(L: float, mu: float, delta: float, reset_every: int, n_scalings: int = 41) -> float:
    r""":func:`feedback_scaling_rate` at :func:`ef_optimal_step` ([S] step, [N] rate), with the reset period ``R``.

    Examples
    --------
    >>> round(ef_reset_rate(1.0, 0.1, 0.5, 1), 6), round(ef_reset_rate(1.0, 0.1, 0.5, 0), 6)
    (0.990863, 0.96921)
    """
    return feedback_scaling_rate(L, mu, delta, ef_optimal_step(L, mu, delta), reset_every, n_scalings)


@bound(kind="equal", provenance="S+N", paper="thomsen",
       statement="worst fixed-scaling rate of compressed GD at eta_CGD minus that of EF / EF21 at eta_EF, on "
                 "diag(mu, L): cgd_scaling_rate(eta_CGD) - ef_optimal_rate")
def cgd_minus_ef_rate(L: float, mu: float, delta: float) -> float:
    r"""Compressed GD at its stated step minus EF at its: :math:`\rho_{CGD}(\eta_{CGD}) - \rho_{EF}` ([S] steps, [N]).

    Negative on every :math:`(\mu/L, \delta)` tried: in the fixed-scaling class, compressed GD without
    feedback at :math:`\eta_{CGD}` contracts slightly *faster* than EF at :math:`\eta_{EF}`.

    Examples
    --------
    >>> round(cgd_minus_ef_rate(1.0, 0.1, 0.5), 7)
    -0.0004052
    """
    return cgd_scaling_rate(L, mu, delta, cgd_optimal_step(L, mu, delta)) - ef_optimal_rate(L, mu, delta)
