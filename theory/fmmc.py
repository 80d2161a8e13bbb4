r"""Fastest-mixing weights (Boyd, Diaconis and Xiao, 2004) and a closed form for the ring derived here.

The paper: "Fastest Mixing Markov Chain on a Graph" (SIAM Review 46(4), 2004).

Pure functions of scalars (math only). :math:`\rho(W) = \|W - J\|_2`; the fastest-mixing chain (FMMC)
minimises it over symmetric nonnegative doubly stochastic ``W`` supported on a graph's edges.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = ["rho_metropolis", "ring_optimal_weight", "ring_optimal_rho", "ring_metropolis_weight"]

PAPER = "fmmc"


@bound(
    kind="upper",
    provenance="P+N",
    paper=PAPER,
    statement="rho(fastest-mixing W) <= rho(Metropolis-Hastings W) on the same graph",
)
def rho_metropolis(rho_mh: float) -> float:
    r"""The Metropolis-Hastings weights' rho, an upper bound on the optimal rho of the same graph.

    **Statement** (upper): the FMMC problem minimises :math:`\rho` over a convex set that contains
    the Metropolis-Hastings weights :math:`w_{ij} = 1/(1 + \max(d_i, d_j))`, so its optimum is at
    most :math:`\rho(W_{MH})` [P: BDX 2004 compare the optimum with the Metropolis-Hastings and
    max-degree chains]. A solver returns the optimum to its tolerance, so the measured
    :math:`\rho(W_{FMMC})` may exceed it by that tolerance only [N].

    Parameters
    ----------
    rho_mh : float
        :math:`\rho(W_{MH})` measured on the same graph (a column of the experiment's row).

    Examples
    --------
    >>> rho_metropolis(0.9)
    0.9
    """
    return float(rho_mh)


def _ring_cosines(n: int) -> tuple[float, float]:
    n = int(n)
    if n < 3:
        raise ValueError(f"the ring closed form needs n >= 3, got n={n}")
    return math.cos(2 * math.pi / n), math.cos(2 * math.pi * (n // 2) / n)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="ring C_n: optimal edge weight w* = 1/(2 - cos(2 pi/n) - cos(2 pi floor(n/2)/n)), "
              "= 1/(3 - cos(2 pi/n)) for even n",
)
def ring_optimal_weight(n: int) -> float:
    r"""Fastest-mixing edge weight of the ring :math:`C_n` (every edge the same).

    **Statement** (equal, [N]): for even :math:`n \ge 4`, :math:`w^\star = 1/(3 - \cos(2\pi/n))`
    and :math:`\rho^\star = (1 + \cos(2\pi/n))/(3 - \cos(2\pi/n))`.

    Derivation [N].

    1. Uniform weights suffice: :math:`\rho(W(w))` is convex in the edge weights ``w`` (a norm of an
       affine function) and unchanged when ``w`` is rotated or reflected along the ring (a
       permutation similarity). Averaging an optimal ``w`` over the ``2n`` symmetries of
       :math:`C_n` gives the uniform weight vector, with no larger :math:`\rho`.
    2. With weight ``w`` on every edge, :math:`W = (1 - 2w) I + w (S + S^{-1})` is circulant with
       eigenvalues :math:`\lambda_j = 1 - 2w(1 - \cos(2\pi j/n))`. Excluding :math:`j = 0`, the
       largest is :math:`\lambda_1 = 1 - 2w(1 - c_1)`, :math:`c_1 = \cos(2\pi/n)`, and the smallest
       is :math:`\lambda_{\lfloor n/2\rfloor} = 1 - 2w(1 - c_m)`,
       :math:`c_m = \cos(2\pi\lfloor n/2\rfloor/n)` (:math:`-1` for even ``n``).
    3. :math:`\rho(w) = \max(\lambda_1, -\lambda_{\lfloor n/2 \rfloor})`: the first term decreases
       and the second increases in ``w``, so the minimum is where they are equal,
       :math:`1 - 2w(1 - c_1) = 2w(1 - c_m) - 1`, i.e. :math:`w^\star = 1/(2 - c_1 - c_m)`,
       which is feasible (:math:`w^\star \le 1/2` since :math:`c_1 + c_m \le 0`). For even ``n``,
       :math:`w^\star = 1/(3 - c_1)` and :math:`\rho^\star = 4w^\star - 1 = (1 + c_1)/(3 - c_1)`.

    Checked against the SDP (``fmmc.ring_closed_form``). Metropolis-Hastings gives every edge 1/3
    (:func:`ring_metropolis_weight`), optimal only for ``n = 3, 4``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 3``.

    Examples
    --------
    >>> round(ring_optimal_weight(16), 9)
    0.481667618
    >>> ring_optimal_weight(4)   # the Metropolis weight is optimal at n = 4
    0.3333333333333333
    """
    c1, cm = _ring_cosines(n)
    return 1.0 / (2.0 - c1 - cm)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="ring C_n, even n: optimal rho* = (1 + cos(2 pi/n))/(3 - cos(2 pi/n))",
)
def ring_optimal_rho(n: int) -> float:
    r"""Optimal :math:`\rho` of the ring, :math:`\rho^\star = 1 - 2w^\star(1 - \cos(2\pi/n))`.

    Derivation in :func:`ring_optimal_weight`.

    Examples
    --------
    >>> round(ring_optimal_rho(6), 12)     # (1 + 1/2) / (3 - 1/2)
    0.6
    """
    c1, _ = _ring_cosines(n)
    return 1.0 - 2.0 * ring_optimal_weight(n) * (1.0 - c1)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="WRONG on purpose (negative control): the Metropolis-Hastings edge weight 1/3 is optimal on the ring",
    constant=True,
)
def ring_metropolis_weight(n: int) -> float:
    r"""Metropolis-Hastings edge weight of the ring, :math:`1/(1 + \max(d_i, d_j)) = 1/3` (``n >= 3``).

    Used as the negative control of ``fmmc.ring_closed_form``: claiming it optimal is false for
    every ``n >= 5`` (:func:`ring_optimal_weight` is above 1/3 there).

    Examples
    --------
    >>> ring_metropolis_weight(8)
    0.3333333333333333
    """
    _ring_cosines(n)
    return 1.0 / 3.0
