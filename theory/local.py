r"""Local-update training (local SGD / FedAvg, DiLoCo and its descendants): bounds as pure functions of scalars.

Sources and tags. The literature's statements are recalled, not quoted [R]: local SGD on heterogeneous
problems has an error floor from client drift that grows with the number ``H`` of local steps, of order
:math:`\eta^2 (H-1)^2 \zeta^2` in the step :math:`\eta` and the heterogeneity :math:`\zeta^2` (Koloskova et
al. 2020, "A unified theory of decentralized SGD with changing topology and local updates"; Woodworth,
Patel and Srebro 2020, "Minibatch vs local SGD with heterogeneous data") [R]; DiLoCo (Douillard et al. 2023)
and Streaming DiLoCo (Douillard et al. 2025) treat the averaged model difference as an outer gradient and
overlap its communication [R]; error feedback keeps a compressor's residual (Stich, Cordonnier and Jaggi
2018; Karimireddy et al. 2019) [R]. The bounds below are derived here [N] for the setting the experiments
simulate (full gradients, quadratics), with their derivations in the docstrings; none is a paper's theorem.

Setting of :func:`local_sgd_floor`: worker :math:`i` holds :math:`f_i(x) = \frac12 x^\top A_i x - b_i^\top
x` with :math:`\mu_{\min} I \preceq A_i`, :math:`\eta\,\lambda_{\max}(A_i) \le 1`; the server's model after
a round of ``H`` full-gradient steps per worker is their average.
"""

from __future__ import annotations

import math

from theory._bound import bound
from theory.urq import delay_threshold_exact

__all__ = ["local_sgd_floor", "local_sgd_floor_distance", "local_sgd_floor_growth", "outer_step_delayed",
           "round_curvature", "ef_residual_bound"]

PAPER = "local"


def local_sgd_floor_distance(lr: float, H: int, mu: float, drift: float) -> float:
    r"""Bound on :math:`\|x_\infty - x^\star\|` at local SGD's fixed point ([N]; upper): :func:`local_sgd_floor`."""
    lr, mu = float(lr), float(mu)
    H = int(H)
    if H <= 1:
        return 0.0
    contraction = 1.0 - (1.0 - lr * mu) ** H
    return lr * lr * H * (H - 1) / 2.0 * float(drift) / contraction


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="local SGD (H full-gradient steps per worker, then the average) on heterogeneous quadratics "
                 "converges to x_inf with f(x_inf) - f* <= (L/2) [lr^2 H (H-1)/2 * mean_i ||A_i - A|| "
                 "||grad f_i(x*)|| / (1 - (1 - lr mu_min)^H)]^2")
def local_sgd_floor(lr: float, H: int, L: float, mu: float, drift: float) -> float:
    r"""Heterogeneity floor of local SGD: :math:`f(x_\infty) - f^\star \le \frac L2 D^2` ([N]; upper).

    .. math:: D = \frac{\eta^2 H(H-1)/2 \cdot \frac1n\sum_i \|A_i - \bar A\|\,\|\nabla f_i(x^\star)\|}
                       {1 - (1 - \eta\mu_{\min})^H},

    ``L`` :math:`= \lambda_{\max}(\bar A)`, ``mu`` :math:`= \mu_{\min}` (the smallest eigenvalue of any
    :math:`A_i`), ``drift`` :math:`= \frac1n\sum_i\|A_i - \bar A\|\,\|\nabla f_i(x^\star)\|`.

    Derivation [N]. After ``H`` steps from :math:`x`, worker :math:`i` holds :math:`x^\star + (I-\eta A_i)^H
    (x - x^\star) + P_i(x_i^\star - x^\star)` with :math:`P_i = I - (I-\eta A_i)^H`; the average is an affine
    map with linear part :math:`I - S`, :math:`S = \frac1n\sum_i P_i \succeq (1 - (1-\eta\mu_{\min})^H) I`,
    so its fixed point satisfies :math:`S(x_\infty - x^\star) = \frac1n\sum_i P_i(x_i^\star - x^\star)`.
    With :math:`g_i = \nabla f_i(x^\star) = -A_i(x_i^\star - x^\star)`, :math:`P_i(x_i^\star - x^\star) =
    -\eta\sum_{j<H}(I-\eta A_i)^j g_i`, and since :math:`\sum_i g_i = 0` the common term
    :math:`(I-\eta\bar A)^j` may be subtracted: :math:`\|(I-\eta A_i)^j - (I-\eta\bar A)^j\| \le j\eta\|A_i -
    \bar A\|` (telescoping; every factor has norm at most 1 when :math:`\eta\lambda_{\max} \le 1`). Summing
    :math:`j < H` gives the numerator; :math:`f - f^\star = \frac12 (x-x^\star)^\top\bar A(x-x^\star)` the
    factor :math:`L/2`. At first order in :math:`\eta H` the floor is :math:`\frac L2 ((H-1)\eta\,\mathrm{drift}
    / (2\mu))^2`: the :math:`\eta^2(H-1)^2\zeta^2` drift term recalled from the literature [R]; with equal
    :math:`A_i` (``drift = 0``) there is no floor, and ``H = 1`` is parallel gradient descent (none either).

    Examples
    --------
    >>> local_sgd_floor(0.1, 1, 1.0, 0.1, 5.0), local_sgd_floor(0.1, 8, 1.0, 0.1, 0.0)
    (0.0, 0.0)
    >>> round(local_sgd_floor(0.1, 2, 1.0, 0.1, 1.0), 8)   # D = 0.01 / (1 - 0.99^2)
    0.12625944
    """
    return 0.5 * float(L) * local_sgd_floor_distance(lr, H, mu, drift) ** 2


def round_curvature(lr: float, H: int, lam: float) -> float:
    r"""Curvature of a round of ``H`` inner GD steps along an eigenvalue: :math:`1 - (1-\eta\lambda)^H` ([N]).

    The round maps the error :math:`e` along that eigenvector to :math:`(1-\eta\lambda)^H e`, so the
    pseudo-gradient is :math:`(1 - (1-\eta\lambda)^H)\,e`: an outer "gradient" of curvature in
    :math:`(0, 1]` for :math:`0 < \eta\lambda \le 1`.

    >>> round(round_curvature(0.1, 1, 1.0), 12), round(round_curvature(0.5, 3, 1.0), 6)
    (0.1, 0.875)
    """
    return 1.0 - (1.0 - float(lr) * float(lam)) ** int(H)


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="outer SGD on pseudo-gradients delayed by `delay` rounds (an overlapped outer update) is stable "
                 "iff outer_lr < 2 sin(pi/(2(2 delay + 1))) / (1 - (1 - lr L)^H)")
def outer_step_delayed(lr: float, H: int, L: float, delay: int) -> float:
    r"""Largest stable outer step when the outer update acts on pseudo-gradients ``delay`` rounds old ([N]; equal).

    On a quadratic with identical workers the round is linear: along an eigenvalue :math:`\lambda` the
    pseudo-gradient is :math:`c_\lambda e` with :math:`c_\lambda` = :func:`round_curvature`. An outer
    SGD step of size :math:`\gamma` applied to the pseudo-gradient of :math:`\tau` rounds ago is delayed
    gradient descent on curvature :math:`c_\lambda`, :math:`e_{r+1} = e_r - \gamma c_\lambda e_{r-\tau}`,
    stable iff :math:`\gamma c_\lambda < 2\sin(\pi/(2(2\tau+1)))` (:func:`theory.urq.delay_threshold_exact`,
    the delay condition of the URQ notes [N]); :math:`c_\lambda` grows with :math:`\lambda` (for
    :math:`\eta\lambda \le 1`), so the largest eigenvalue ``L`` binds. ``delay = 0`` gives :math:`2/c_L`
    (DiLoCo without overlap); one round of delay halves it. How many rounds an overlap of :math:`\tau`
    inner steps delays the outer update depends on the merge (in :mod:`simcomm.optim._local` the merge
    replaces the fragment, so the pseudo-gradient of the next round is formed from the merged model and
    the delay is 0 rounds, at the price of the :math:`\tau` inner steps discarded); the bound is the
    stability condition of the delayed outer iteration as such.

    >>> outer_step_delayed(1.0, 1, 1.0, 0), round(outer_step_delayed(1.0, 1, 1.0, 1), 12)
    (2.0, 1.0)
    """
    return delay_threshold_exact(int(delay), round_curvature(lr, H, L))


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="error feedback with a q-contraction (||C(v) - v||^2 <= q ||v||^2) on pseudo-gradients of norm "
                 "<= G keeps a residual ||e||^2 <= 2 q (1 + q) G^2 / (1 - q)^2 at every round")
def ef_residual_bound(q: float, G: float) -> float:
    r"""Bound on the squared error-feedback residual of pseudo-gradients ([N] from the standard argument [R]; upper).

    :math:`e' = p - C(p)`, :math:`p = e + \Delta`: :math:`\|e'\|^2 \le q\|e + \Delta\|^2 \le q(1+s)\|e\|^2 +
    q(1 + 1/s)\|\Delta\|^2`; with :math:`s = (1-q)/(2q)` the factor of :math:`\|e\|^2` is :math:`(1+q)/2 < 1`
    and that of :math:`\|\Delta\|^2` is :math:`q(1+q)/(1-q)`, so from :math:`e_0 = 0` by induction
    :math:`\|e\|^2 \le \frac{q(1+q)/(1-q)}{1 - (1+q)/2} G^2 = \frac{2q(1+q)}{(1-q)^2}G^2` (the memory argument of
    Stich et al. 2018 [R], written out here). The server's model then differs from the uncompressed
    iteration's by the workers' mean residual times the outer step: bounded, so an outer iteration that
    converges keeps converging and the compressor's bias does not accumulate. With decay
    :math:`\beta < 1` on the memory (SparseLoCo, DeMo) the same argument holds with :math:`q` replaced by
    :math:`\beta^2 q` in the factor of :math:`\|e\|^2`.

    >>> ef_residual_bound(0.0, 3.0), ef_residual_bound(0.5, 1.0)
    (0.0, 6.0)
    """
    q = float(q)
    if not 0.0 <= q < 1.0:
        return math.inf
    return 2.0 * q * (1.0 + q) / (1.0 - q) ** 2 * float(G) ** 2


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="local SGD's heterogeneity floor grows like (H - 1)^2 with the inner steps H at first order in lr H: "
                 "floor(H) / floor(2) = (H - 1)^2")
def local_sgd_floor_growth(H: int) -> float:
    r"""First-order growth of local SGD's floor with ``H``: :math:`f_\infty(H)/f_\infty(2) = (H-1)^2` ([N]; equal).

    The fixed point of :func:`local_sgd_floor`'s derivation is, at first order in :math:`\eta H`,
    :math:`x_\infty - x^\star = \frac{(H-1)\eta}{2}\bar A^{-1}\frac1n\sum_i (A_i - \bar A)\nabla f_i(x^\star)`
    (expand :math:`P_i = H\eta A_i - \binom H2\eta^2A_i^2 + O(\eta^3)`, the first term cancels because
    :math:`\sum_i\nabla f_i(x^\star) = 0`), so the floor :math:`\frac12(x_\infty-x^\star)^\top\bar A(x_\infty-x^\star)`
    is :math:`(H-1)^2` times its value at ``H = 2``: the :math:`\eta^2(H-1)^2\zeta^2` drift term of the
    literature [R]. The next order changes the ratio by a relative :math:`O(\eta L H)`.

    >>> local_sgd_floor_growth(2), local_sgd_floor_growth(9)
    (1.0, 64.0)
    """
    return float((int(H) - 1) ** 2)
