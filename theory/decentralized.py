r"""Bounds for decentralized methods beyond doubly stochastic gossip: push-sum, gradient tracking, random graphs.

Everything here except :func:`choco_gossip_consensus` (see its tag) is [N]: derived in this project (the
derivations are in the docstrings) and checked
by simulation, NOT a theorem quoted from a paper. The methods themselves come from the literature
(push-sum: Kempe, Dobra & Gehrke 2003; gradient tracking: Nedic, Olshevsky & Shi 2017; exact
diffusion: Yuan et al. 2019; Epidemic Learning's s-out sampling: de Vos et al. 2023), but the exact
statements checked are this project's. They are filed under the paper key ``expgraph`` (the
decentralized side of simcomm).

Notation: :math:`W` the mixing matrix (``W[i, j]`` the weight node ``i`` puts on node ``j``),
:math:`\rho = \max_{m \ne 0}|\lambda_m(W)| = \|W - J\|_2` for a normal doubly stochastic ``W``,
:math:`b^2 = \frac1n\sum_i\|\nabla f_i(x^\star)\|^2` the heterogeneity at the optimum, ``lr`` the
constant step size.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = [
    "pushsum_average_error",
    "dsgd_heterogeneity_floor",
    "floor_fraction",
    "matching_contraction",
    "s_out_contraction",
    "random_gossip_contraction",
    "choco_gossip_consensus",
    "link_drop_rate",
    "link_drop_consensus",
    "link_drop_mode_contraction",
    "equistatic_norm",
    "equistatic_edges",
]

PAPER = "expgraph"


@bound(
    kind="equal",
    provenance="N",
    paper="pushsum",
    constant=True,
    statement="push-sum over a strongly connected column-stochastic W: the ratio z_i = x_i / w_i tends to the exact "
              "average of the starting values at every node (distance 0)",
)
def pushsum_average_error() -> float:
    r"""Limit of :math:`\max_i\|z_i^{(k)} - \bar x^{(0)}\|_\infty` under push-sum: 0.

    **Statement** (equal): let :math:`W` be column stochastic (:math:`\mathbf 1^\top W = \mathbf
    1^\top`), primitive (strongly connected with a self-loop). Then :math:`W^k \to v\mathbf 1^\top`
    with :math:`Wv = v`, :math:`\mathbf 1^\top v = 1`, :math:`v > 0` (Perron-Frobenius), so the
    numerators :math:`x^{(k)} = W^k x^{(0)} \to v\,(\mathbf 1^\top x^{(0)}) = n v \bar x^{(0)}` and the
    weights :math:`w^{(k)} = W^k\mathbf 1 \to n v`: the ratio tends to :math:`\bar x^{(0)}` at every
    node, geometrically. Plain gossip with the same :math:`W` (no weights) ends at
    :math:`n v_i\,\bar x^{(0)}`, off by the factor :math:`n v_i \ne 1` whenever the in-weights are
    uneven (the negative control).

    Provenance: N (the argument is the standard one of Kempe et al. 2003; this exact statement and its
    check are this project's).

    Examples
    --------
    >>> pushsum_average_error()
    0.0
    """
    return 0.0


def _check_floor_args(lr, rho, mu):
    if not (lr > 0 and 0 <= rho < 1 and mu > 0 and lr * mu <= 1):
        raise ValueError(f"need lr > 0, 0 <= rho < 1, mu > 0 and lr * mu <= 1; got lr={lr}, rho={rho}, mu={mu}")


@bound(
    kind="upper",
    provenance="N",
    paper=PAPER,
    statement="DSGD (ATC, exact gradients, constant step lr <= 1/L) on quadratics with a common Hessian and a normal "
              "doubly stochastic W: at its fixed point (1/n) sum_i ||x_i - x*||^2 <= lr^2 rho^2 b^2 / (1 - (1 - lr mu) "
              "rho)^2 <= lr^2 rho^2 b^2/(1 - rho)^2",
)
def dsgd_heterogeneity_floor(lr: float, rho: float, b: float, mu: float) -> float:
    r"""DSGD's heterogeneity floor: :math:`\mathrm{lr}^2\rho^2 b^2/(1 - (1 - \mathrm{lr}\,\mu)\rho)^2`.

    **Statement** (upper; [N]): let :math:`f_i(x) = \frac12 (x - c_i)^\top H (x - c_i)` share the
    Hessian :math:`H = \mathrm{diag}(h)`, :math:`\mu \le h_j \le L`, :math:`\mathrm{lr}\,L \le 1`,
    and let :math:`W` be normal and doubly stochastic. DSGD in adapt-then-combine form with exact
    gradients, :math:`X \leftarrow W(X - \mathrm{lr}\,\nabla F(X))`, converges to a fixed point with

    .. math:: \frac1n\sum_i \|x_i - x^\star\|^2 \le
              \frac{\mathrm{lr}^2 \rho^2 b^2}{(1 - (1 - \mathrm{lr}\,\mu)\rho)^2}
              \le \frac{\mathrm{lr}^2\rho^2 b^2}{(1-\rho)^2}.

    Derivation: per coordinate :math:`j` with :math:`a = \mathrm{lr}\,h_j \in (0, 1]` the fixed point
    solves :math:`(I - (1-a)W)x = aWc`. In the unitary eigenbasis of :math:`W` (:math:`W` normal),
    mode :math:`m` gives :math:`\hat x_m = a\lambda_m\hat c_m/(1 - (1-a)\lambda_m)`; mode 0
    (:math:`\lambda_0 = 1`) gives :math:`\bar x = \bar c = x^\star`, so the distance is the sum over
    :math:`m \ne 0` of :math:`|\mathrm{lr}\,\lambda_m/(1 - (1-a)\lambda_m)|^2\,h_j^2|\hat c_m|^2`.
    With :math:`|\lambda_m| \le \rho`, :math:`|1 - (1-a)\lambda_m| \ge 1 - (1-a)\rho \ge 1 - (1 -
    \mathrm{lr}\mu)\rho`, and :math:`\frac1n\sum_j h_j^2\sum_{m\ne0}|\hat c_m|^2 = b^2` (the
    :math:`c_i - x^\star` have no mode-0 part), the bound follows. Equality needs the heterogeneity in
    the slowest real mode and on the flattest coordinate; for generic heterogeneity it is loose by the
    spread of the spectrum.

    Parameters
    ----------
    lr : float
        Constant step size, ``0 < lr * mu <= 1`` (and ``lr * L <= 1`` for the statement).
    rho : float
        :math:`\max_{m\ne0}|\lambda_m(W)|`, in ``[0, 1)``.
    b : float
        Heterogeneity at the optimum.
    mu : float
        Smallest curvature.

    Examples
    --------
    >>> round(dsgd_heterogeneity_floor(0.1, 0.5, 1.0, 0.1), 6)   # 0.01 * 0.25 / (1 - 0.99 * 0.5)^2
    0.009803
    """
    _check_floor_args(lr, rho, mu)
    return (lr * rho * b) ** 2 / (1.0 - (1.0 - lr * mu) * rho) ** 2


@bound(
    kind="upper",
    provenance="N",
    paper="tracking",
    statement="gradient tracking (ATC, exact gradients, the same constant step) has no heterogeneity floor: after T "
              "steps (1/n) sum_i ||x_i - x*||^2 is below a stated fraction of DSGD's floor bound",
)
def floor_fraction(lr: float, rho: float, b: float, mu: float, fraction: float) -> float:
    r"""``fraction`` times :func:`dsgd_heterogeneity_floor`: the level a floor-free method must go below.

    **Statement** (upper; [N]): gradient tracking keeps :math:`\bar y^k = \bar g^k` (doubly
    stochastic :math:`W`, tracker started at the gradient), so every fixed point has
    :math:`\bar g = 0` and consensus: the optimum, whatever :math:`b`. At a step at which its
    iteration is a contraction it converges linearly, so after ``T`` steps its distance
    :math:`\frac1n\sum_i\|x_i - x^\star\|^2` is below any fixed fraction of DSGD's floor for ``T``
    large enough; the spec states the fraction (``1e-6``) and ``T`` beforehand. A method WITH a floor
    of the size of DSGD's (a tracker started at zero, or no tracking at all) breaks it.

    Examples
    --------
    >>> floor_fraction(0.1, 0.5, 1.0, 0.1, 1e-6) == 1e-6 * dsgd_heterogeneity_floor(0.1, 0.5, 1.0, 0.1)
    True
    """
    if not fraction > 0:
        raise ValueError(f"fraction must be > 0, got {fraction}")
    return float(fraction) * dsgd_heterogeneity_floor(lr, rho, b, mu)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="one uniform random (near-)perfect matching, pairs averaging: E||W x - xbar||^2 = (n-2)/(2(n-1)) "
              "||x - xbar||^2 for n even and ||x - xbar||^2 / 2 for n odd, for every x",
)
def matching_contraction(n: int) -> float:
    r"""Expected one-step contraction of a uniform random matching: :math:`\frac{n-2}{2(n-1)}` (n even), 1/2 (odd).

    **Statement** (equal; [N]): with :math:`e = x - \mathbf 1\bar x` (:math:`\sum_i e_i = 0`) and
    :math:`W = (I + P)/2` for a uniform perfect matching :math:`P` (n even),
    :math:`\|We\|^2 = \frac12\sum_{\{i,j\}\in P}(e_i + e_j)^2`. Each pair is matched with probability
    :math:`1/(n-1)`, so :math:`E\|We\|^2 = \frac{1}{2(n-1)}\sum_{i<j}(e_i+e_j)^2 =
    \frac{1}{2(n-1)}\big((n-2)\|e\|^2 + (\sum_i e_i)^2\big) = \frac{n-2}{2(n-1)}\|e\|^2`. For odd
    ``n`` one uniform node is left alone (probability :math:`1/n`) and each pair is matched with
    probability :math:`1/n`: :math:`E\|We\|^2 = \frac{\|e\|^2}{n} + \frac{(n-2)\|e\|^2}{2n} =
    \frac{\|e\|^2}{2}`. ``W`` is doubly stochastic, so :math:`\bar x` is kept and this is the
    expected contraction of :math:`E\|x - \mathbf 1\bar x\|^2` per round, for every ``x``.

    Examples
    --------
    >>> matching_contraction(2), round(matching_contraction(16), 6), matching_contraction(7)
    (0.0, 0.466667, 0.5)
    """
    n = int(n)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    return (n - 2) / (2.0 * (n - 1)) if n % 2 == 0 else 0.5


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="Epidemic Learning s-out round (each node sends to s uniform distinct others, receivers average): "
              "E sum_i ||x_i' - xbar||^2 = beta ||x - xbar||^2 with beta = E[(N - K)/(N (1 + K))], "
              "K ~ Binomial(N, s/N), N = n - 1, for every x",
)
def s_out_contraction(n: int, s: int) -> float:
    r"""Expected one-round contraction of EL's s-out averaging about the old mean: :math:`E[\frac{N-K}{N(1+K)}]`.

    **Statement** (equal; [N]): every node sends its model to ``s`` distinct nodes drawn uniformly
    from the :math:`N = n-1` others, independently, and every node replaces its model by the
    average of its own and the received ones, :math:`x_i' = (x_i + \sum_{j\to i}x_j)/(1+K_i)`.
    Then for every ``x``, with :math:`\bar x` the mean BEFORE the round,

    .. math:: E\sum_i\|x_i' - \bar x\|^2 = \beta_s\sum_i\|x_i - \bar x\|^2,\qquad
              \beta_s = E\Big[\frac{N - K}{N(1 + K)}\Big],\ K\sim\mathrm{Bin}(N, s/N).

    Derivation: node :math:`j \ne i` includes :math:`i` with probability :math:`q = s/N`,
    independently over :math:`j`, so :math:`K_i \sim \mathrm{Bin}(N, q)` and, given :math:`K_i = k`,
    the senders are a uniform :math:`k`-subset of the others. With :math:`e = x - \mathbf 1\bar x`,
    the others' deviations have mean :math:`-e_i/N`; sampling :math:`k` of them without
    replacement, :math:`E\|e_i + \sum_S e_j\|^2 = (1-\frac kN)^2\|e_i\|^2 + \frac{k(N-k)}{N-1}
    (\frac{Q_i}{N} - \frac{\|e_i\|^2}{N^2})`, :math:`Q_i = \sum_{j\ne i}\|e_j\|^2`. Summing over
    :math:`i` (:math:`\sum_i Q_i = N\|e\|^2`) and dividing by :math:`(1+k)^2`, the coefficient of
    :math:`\|e\|^2` is :math:`\frac{(N-k)^2 + k(N-k)(N+1)}{N^2(1+k)^2} = \frac{N-k}{N(1+k)}`.
    (:math:`s = N`: every node hears everyone, :math:`\beta = 0`; the round is not mean-preserving, so
    this is the distance to the OLD mean, the quantity EL's analysis contracts.)

    Examples
    --------
    >>> s_out_contraction(10, 9), round(s_out_contraction(16, 1), 6)
    (0.0, 0.601753)
    """
    n, s = int(n), int(s)
    N = n - 1
    if not (n >= 2 and 1 <= s <= N):
        raise ValueError(f"need n >= 2 and 1 <= s <= n - 1, got n={n}, s={s}")
    q = s / N
    return float(sum(math.comb(N, k) * q**k * (1 - q) ** (N - k) * (N - k) / (N * (1 + k)) for k in range(N + 1)))


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="expected one-round contraction of a random topology drawn every round: matching_contraction(n) "
              "for sampling = matching, s_out_contraction(n, s) for sampling = s_out",
)
def random_gossip_contraction(sampling: str, n: int, s: int) -> float:
    r"""Dispatch on ``sampling``: :func:`matching_contraction` or :func:`s_out_contraction` ([N], equal).

    Examples
    --------
    >>> random_gossip_contraction("matching", 8, 1) == matching_contraction(8)
    True
    """
    if sampling == "matching":
        return matching_contraction(n)
    if sampling == "s_out":
        return s_out_contraction(n, s)
    raise ValueError(f"unknown sampling {sampling!r}; use 'matching' or 's_out'")


@bound(
    kind="upper",
    provenance="R+N",
    paper="choco",
    statement="CHOCO-Gossip (Koloskova, Stich & Jaggi 2019, Theorem 2, recalled) with a delta-compressor, "
              "xhat^0 = 0, consensus step gamma* = rho^2 delta/(16 rho + rho^2 + 4 beta^2 + 2 rho beta^2 "
              "- 8 rho delta) and a centred start: E sum_i ||x_i^T - xbar||^2 <= 2 (1 - rho^2 delta/82)^T "
              "sum_i ||x_i^0 - xbar||^2",
)
def choco_gossip_consensus(steps: int, gap: float, beta_w: float, delta: float) -> float:
    r"""CHOCO-Gossip's consensus error after ``steps`` steps at the paper's consensus step, relative to the start.

    **Statement** (upper): :math:`W` symmetric doubly stochastic with spectral gap
    :math:`\rho = 1 - |\lambda_2(W)|` (``gap``; the paper's :math:`\rho` is this gap, not the module's
    :math:`\|W - J\|_2`) and :math:`\beta = \|I - W\|_2` (``beta_w``), a
    compressor with :math:`E\|Q(v) - v\|^2 \le (1 - \delta)\|v\|^2` (``delta``), public copies
    from :math:`\hat x^{(0)} = 0` and :math:`\gamma^\star = \frac{\rho^2\delta}{16\rho + \rho^2 +
    4\beta^2 + 2\rho\beta^2 - 8\rho\delta}`. Then

    .. math:: \frac{E\sum_i\|x_i^{(T)} - \bar x\|^2}{\sum_i\|x_i^{(0)} - \bar x\|^2}
              \le 2\Big(1 - \frac{\rho^2\delta}{82}\Big)^T.

    Provenance: R + N. The rate :math:`(1 - \rho^2\delta/82)^t` of the Lyapunov function
    :math:`e_t = E\sum_i(\|x_i^{(t)} - \bar x\|^2 + \|x_i^{(t)} - \hat x_i\|^2)` at
    :math:`\gamma^\star` is Theorem 2 of Koloskova, Stich & Jaggi (ICML 2019) as recalled here, not
    checked against the paper's text [R]. The factor 2 is derived here [N]: the consensus error is
    at most :math:`e_T`, and with the start centred (:math:`\bar x = 0`) and :math:`\hat x^{(0)} =
    0`, :math:`e_0 \le 2\sum_i\|x_i^{(0)} - \bar x\|^2` (the copy term is :math:`\|x^{(0)}\|^2`,
    or :math:`E\|x^{(0)} - Q(x^{(0)})\|^2 \le \|x^{(0)}\|^2` if the copies are counted after
    the first update). Upper bound; not tight (the constants are worst case).

    Examples
    --------
    >>> choco_gossip_consensus(0, 0.4, 1.6, 0.25)
    2.0
    >>> round(choco_gossip_consensus(3000, 0.4, 1.6, 0.25), 4)
    0.4627
    """
    if not (0 < gap <= 1 and 0 < delta <= 1 and beta_w > 0 and steps >= 0):
        raise ValueError(f"need 0 < gap <= 1, 0 < delta <= 1, beta_w > 0, steps >= 0; got {gap}, {delta}, "
                         f"{beta_w}, {steps}")
    return 2.0 * (1.0 - gap * gap * delta / 82.0) ** int(steps)


def _drop_second_moment(lap: float, q: float, w: float) -> float:
    return (1.0 - (1.0 - q) * lap) ** 2 + 2.0 * q * (1.0 - q) * w * lap


@bound(
    kind="upper",
    provenance="N",
    paper=PAPER,
    statement="gossip on a symmetric doubly stochastic W with equal edge weights w whose edges fail independently "
              "with probability q per step (failed weight kept by the endpoints): E||x' - xbar||^2 <= r ||x - "
              "xbar||^2, r = max over l in {l_2, l_n} of (1 - (1-q) l)^2 + 2 q (1-q) w l, l = 1 - lambda(W)",
)
def link_drop_rate(q: float, w: float, lap_low: float, lap_high: float) -> float:
    r"""Mean-square consensus rate per step under Bernoulli edge failures: :math:`\lambda_2(E[W_t^2])`.

    **Statement** (upper; [N]): :math:`W = I - L` symmetric doubly stochastic with every edge weight
    :math:`w` (ring, torus, hypercube, complete graph), :math:`L = \sum_e w L_e`,
    :math:`L_e = (e_i - e_j)(e_i - e_j)^\top`. Each edge works with probability :math:`1 - q`,
    independently: :math:`W_t = I - \sum_e \xi_e w L_e`, :math:`\xi_e \sim \mathrm{Bern}(1-q)`. With
    :math:`L_e^2 = 2L_e` and :math:`E[\xi_e\xi_f] = (1-q)^2 + q(1-q)[e = f]`,

    .. math:: E[W_t^2] = I - 2(1-q)L + (1-q)^2L^2 + 2q(1-q)\,w\,L,

    a polynomial in :math:`L`, with eigenvalues :math:`f(\ell) = (1 - (1-q)\ell)^2 + 2q(1-q)w\ell` at
    the Laplacian eigenvalues :math:`\ell = 1 - \lambda(W)`. :math:`W_t` keeps the average, so for
    :math:`e = x - \mathbf 1\bar x`, :math:`E\|W_te\|^2 = e^\top E[W_t^2]e \le r\|e\|^2` with
    :math:`r = \max_{\ell \ne 0} f(\ell)`; :math:`f` is convex, so the maximum is at the smallest
    nonzero :math:`\ell_2 = 1 - \lambda_2` (``lap_low``) or the largest :math:`\ell_n = 1 -
    \lambda_{\min}` (``lap_high``). (The bound of Boyd et al. 2006 for randomized gossip, with this
    second moment derived here.) ``q = 0`` gives :math:`\max(\lambda_2^2, \lambda_{\min}^2) = \rho^2`.

    Examples
    --------
    >>> round(link_drop_rate(0.0, 1 / 3, 1 - 0.5, 1 - (-1 / 3)), 6)   # ring n = 6 without drops: rho^2 = 1/4
    0.25
    >>> round(link_drop_rate(0.2, 1 / 3, 2 / 3 * (1 - math.cos(math.pi / 8)), 4 / 3), 4)   # ring n = 16
    0.9259
    """
    if not (0.0 <= q < 1.0 and w > 0 and 0 < lap_low <= lap_high <= 2.0):
        raise ValueError(f"need 0 <= q < 1, w > 0, 0 < lap_low <= lap_high <= 2; got q={q}, w={w}, "
                         f"lap_low={lap_low}, lap_high={lap_high}")
    return max(_drop_second_moment(lap_low, q, w), _drop_second_moment(lap_high, q, w))


@bound(
    kind="upper",
    provenance="N",
    paper=PAPER,
    statement="after T steps of gossip with Bernoulli(q) edge failures: E sum_i ||x_i^T - xbar||^2 <= "
              "link_drop_rate(q, w, l_2, l_n)^T sum_i ||x_i^0 - xbar||^2",
)
def link_drop_consensus(steps: int, q: float, w: float, lap_low: float, lap_high: float) -> float:
    r"""Relative mean-square consensus error after ``steps`` failing-link steps: :math:`r^T` ([N], upper).

    Iterates :func:`link_drop_rate` (the failures of different steps are independent, so
    :math:`E\|e_{t+1}\|^2 = E[e_t^\top E[W^2] e_t] \le r\,E\|e_t\|^2`).

    Examples
    --------
    >>> link_drop_consensus(2, 0.0, 1 / 3, 0.5, 4 / 3) == link_drop_rate(0.0, 1 / 3, 0.5, 4 / 3) ** 2
    True
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    return link_drop_rate(q, w, lap_low, lap_high) ** int(steps)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="one gossip step with Bernoulli(q) edge failures from an eigenvector v of W (L v = l v, W with equal "
              "edge weights w): E||W_t v||^2 = ((1 - (1-q) l)^2 + 2 q (1-q) w l) ||v||^2 exactly",
)
def link_drop_mode_contraction(q: float, w: float, lap: float) -> float:
    r"""Exact one-step mean-square factor of a Laplacian eigenvector under edge failures: :math:`f(\ell)`.

    **Statement** (equal; [N]): with :math:`E[W_t^2]` the polynomial in :math:`L` derived in
    :func:`link_drop_rate`, an eigenvector :math:`v` of :math:`L` (eigenvalue :math:`\ell`, ``lap``)
    is one of :math:`E[W_t^2]`, so :math:`E\|W_tv\|^2 = v^\top E[W_t^2]v = f(\ell)\|v\|^2`,
    :math:`f(\ell) = (1 - (1-q)\ell)^2 + 2q(1-q)w\ell`, exactly (not a bound). At :math:`\ell_2`
    it is the mean-square rate :math:`r` of the slowest mode, the consensus rate of the random mixing.

    Examples
    --------
    >>> link_drop_mode_contraction(0.0, 0.25, 0.5)   # no failures: lambda^2 = (1 - 0.5)^2
    0.25
    """
    if not (0.0 <= q < 1.0 and w > 0 and 0 <= lap <= 2.0):
        raise ValueError(f"need 0 <= q < 1, w > 0, 0 <= lap <= 2; got q={q}, w={w}, lap={lap}")
    return _drop_second_moment(lap, q, w)


def _check_equi(M, p, n, variant):
    if variant not in ("d", "u"):
        raise ValueError(f"variant must be 'd' (D-EquiStatic) or 'u' (U-EquiStatic), got {variant!r}")
    if not (M >= 1 and 0 < p < 1 and n >= 3):
        raise ValueError(f"need M >= 1, 0 < p < 1, n >= 3; got M={M}, p={p}, n={n}")


@bound(
    kind="upper",
    provenance="N",
    paper="equitopo",
    statement="EquiStatic with M offsets uniform on 1..n-1 (W = (I + sum_m P^{u_m})/(M+1), or its symmetrisation): "
              "with probability >= 1 - p, ||W - J||_2 <= (1 + M/(n-1) + 2 sqrt(M ln(4(n-1)/p)))/(M+1) (D) and "
              "(1 + M/(n-1) + sqrt(2 M ln(2(n-1)/p)))/(M+1) (U)",
)
def equistatic_norm(M: int, p: float, n: int, variant: str) -> float:
    r"""A :math:`(1-p)`-probability bound on :math:`\|W - J\|_2` of D- or U-EquiStatic with ``M`` offsets ([N]).

    **Statement** (upper; [N], Hoeffding plus a union bound, derived here; the paper's own edge count
    :math:`M(\epsilon, p)` is not known to this project): ``W`` is a normal circulant, so
    :math:`\|W - J\|_2 = \max_{k\ne0}|\lambda_k|` with :math:`\lambda_k = (1 + S_k)/(M+1)`,
    :math:`S_k = \sum_m\omega^{ku_m}` (D) or :math:`\sum_m\cos(2\pi ku_m/n)` (U). For
    :math:`k \ne 0`, :math:`E\,\omega^{ku} = -1/(n-1)`, so :math:`|1 + S_k| \le 1 + M/(n-1) +
    |\sum_m Y_m|` with centred :math:`Y_m` whose real and imaginary parts have range 2. Hoeffding:
    :math:`P(|\sum_m \mathrm{Re}\,Y_m| \ge s) \le 2e^{-s^2/(2M)}`; for D, :math:`|Y| \ge t` needs
    a part :math:`\ge t/\sqrt2`, so :math:`P(|\sum Y| \ge t) \le 4e^{-t^2/(4M)}`; a union over
    the :math:`n-1` frequencies gives, with probability :math:`\ge 1-p`,

    .. math:: \|W_D - J\|_2 \le \frac{1 + \frac{M}{n-1} + 2\sqrt{M\ln\frac{4(n-1)}{p}}}{M+1},\qquad
              \|W_U - J\|_2 \le \frac{1 + \frac{M}{n-1} + \sqrt{2M\ln\frac{2(n-1)}{p}}}{M+1}.

    The rate is :math:`O(\sqrt{\ln(n/p)/M})`: at fixed ``M`` it grows with :math:`\sqrt{\ln n}` (no
    fixed ``M`` can work for every ``n``: by Dirichlet's theorem some frequency has every
    :math:`ku_m/n` near an integer), so the edge count for a target :math:`\epsilon` is
    :func:`equistatic_edges`, :math:`O(\ln(n/p)/\epsilon^2)`, and the consensus rate
    :math:`\epsilon` it buys does not depend on ``n``.

    Examples
    --------
    >>> round(equistatic_norm(256, 0.1, 1024, "u"), 4)
    0.2823
    """
    _check_equi(M, p, n, variant)
    if variant == "d":
        dev = 2.0 * math.sqrt(M * math.log(4.0 * (n - 1) / p))
    else:
        dev = math.sqrt(2.0 * M * math.log(2.0 * (n - 1) / p))
    return (1.0 + M / (n - 1) + dev) / (M + 1)


@bound(
    kind="upper",
    provenance="N",
    paper="equitopo",
    statement="the smallest M with equistatic_norm(M, p, n, variant) <= eps: P(||W - J||_2 < eps) >= 1 - p with "
              "M(eps, p, n) = O(ln(n/p)/eps^2) offsets",
)
def equistatic_edges(eps: float, p: float, n: int, variant: str) -> float:
    r"""Edge count :math:`M(\epsilon, p, n)`: the smallest ``M`` with :func:`equistatic_norm` at most eps ([N]).

    About :math:`4\ln(4n/p)/\epsilon^2` (D) and :math:`2\ln(2n/p)/\epsilon^2` (U) for small
    :math:`\epsilon`; ``inf`` if no ``M`` reaches ``eps`` (``eps <= 1/(n-1)``, the offset-mean term).

    Examples
    --------
    >>> equistatic_edges(0.5, 0.1, 1024, "u"), equistatic_edges(0.5, 0.1, 1024, "d")
    (82.0, 173.0)
    """
    _check_equi(1, p, n, variant)
    if not 1.0 / (n - 1) < eps < 1:
        return math.inf
    lo, hi = 1, 2
    while equistatic_norm(hi, p, n, variant) > eps:
        lo, hi = hi, 2 * hi
        if hi > 2**40:
            return math.inf
    while lo < hi:  # the bound decreases in M once M is past its first few values: bisect for the first M below
        mid = (lo + hi) // 2
        if equistatic_norm(mid, p, n, variant) <= eps:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)
