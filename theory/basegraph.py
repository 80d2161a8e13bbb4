r"""Bounds for the Base-(k+1) graph of Takezawa, Sato, Niwa and Yamada (NeurIPS 2023).

The paper: "Beyond Exponential Graph: Communication-Efficient Topologies for Decentralized Learning
via Finite-time Convergence".

Pure functions of scalars (math only). Notation: ``n`` nodes, at most ``k`` peers per node and step,
base :math:`b = k + 1`, :math:`\tau` the length of the sequence (its period), :math:`J =
\mathbf 1\mathbf 1^\top/n`. Logarithms of integers are compared in exact integer arithmetic where
the statement is about powers of ``b``.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = ["is_power", "log_base", "exact_defect", "period_bound", "period_lower", "consensus_noise_ratio"]

PAPER = "basegraph"


def is_power(n: int, b: int) -> bool:
    """Whether ``n = b^p`` for an integer ``p >= 0`` (integer arithmetic).

    Examples
    --------
    >>> is_power(27, 3), is_power(12, 2), is_power(1, 5)
    (True, False, True)
    """
    n, b = int(n), int(b)
    while n > 1 and n % b == 0:
        n //= b
    return n == 1


def log_base(n: int, b: int) -> float:
    r""":math:`\log_b n`: the exact integer ``p`` when ``n = b^p``, else ``log(n)/log(b)``.

    Examples
    --------
    >>> log_base(243, 3), round(log_base(10, 2), 6)
    (5.0, 3.321928)
    """
    n, b = int(n), int(b)
    if is_power(n, b):
        p = 0
        while n > 1:
            n //= b
            p += 1
        return float(p)
    return math.log(n) / math.log(b)


@bound(
    kind="equal",
    provenance="P+N",
    paper=PAPER,
    statement="W^(tau-1)...W^(0) = J exactly; any 2 tau - 1 consecutive steps multiply to J; every W symmetric, "
              "doubly stochastic, <= k peers (every defect is 0)",
    constant=True,
)
def exact_defect(n: int = 2, k: int = 1) -> float:
    r"""Every defect of the Base-(k+1) sequence is zero.

    **Statement** (equal): for every :math:`n \ge 1` and :math:`k \ge 1` the Base-(k+1) graph is a
    finite sequence :math:`W^{(0)}, \dots, W^{(\tau-1)}` of symmetric, nonnegative, doubly stochastic
    matrices with at most ``k`` off-diagonal nonzeros per row, and
    :math:`W^{(\tau-1)} \cdots W^{(0)} = J` [P: the paper's finite-time convergence theorem; the
    authors' test checks the product for k = 1..4, n = 1..99 [C]].

    From any start phase [N]: any :math:`2\tau - 1` consecutive steps of the periodic sequence contain
    one whole period :math:`P = J`, so their product is :math:`A J B = J` for doubly stochastic
    ``A``, ``B``. (A window of only :math:`\tau` steps starting mid-period is in general NOT ``J``:
    the matrices do not commute; only the hyper-hypercube's do.)

    The defects measured against this zero: :math:`\|P - J\|_F` (phase 0, one period),
    :math:`\max_{k_0}\|W^{(k_0+2\tau-2)}\cdots W^{(k_0)} - J\|_F`, the largest row/column-sum error or
    negative entry, :math:`\max|W - W^\top|`, and :math:`\max(0, \deg - k)`.

    Provenance: P+N.

    Parameters
    ----------
    n, k : int
        Cell parameters (the value does not depend on them).

    Examples
    --------
    >>> exact_defect(25, 2)
    0.0
    """
    del n, k
    return 0.0


@bound(
    kind="upper",
    provenance="P+C",
    paper=PAPER,
    statement="period tau <= 2 log_{k+1}(n) + 2, and tau = log_{k+1}(n) when n is a power of k + 1",
)
def period_bound(n: int, k: int) -> float:
    r"""Upper bound on the length of the Base-(k+1) sequence.

    **Statement** (upper): :math:`\tau \le 2\log_{k+1} n + 2` for every ``n`` (the authors' test
    asserts exactly this for k = 1..4, n = 1..99 [C]); for :math:`n = (k+1)^p` the graph is the
    k-peer hyper-hypercube with :math:`\tau = p = \log_{k+1} n` [P].

    At powers of ``k + 1`` the upper bound is an equality because no sequence can be shorter
    [N]: with at most ``k`` peers, a node's value after ``t`` steps depends on at most
    :math:`(k+1)^t` initial values, and ``J`` needs all ``n`` of them, so
    :math:`\tau \ge \lceil\log_{k+1} n\rceil` (:func:`period_lower`).

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 1``.
    k : int
        Maximum number of peers, ``>= 1``.

    Examples
    --------
    >>> period_bound(27, 2), round(period_bound(25, 2), 4)
    (3.0, 7.8599)
    """
    b = int(k) + 1
    if is_power(n, b):
        return log_base(n, b)
    return 2.0 * log_base(n, b) + 2.0


@bound(
    kind="lower",
    provenance="N",
    paper=PAPER,
    statement="any exact-averaging sequence with <= k peers per step has tau >= ceil(log_{k+1} n)",
)
def period_lower(n: int, k: int) -> float:
    r"""Information-spread lower bound :math:`\lceil\log_{k+1} n\rceil` on any exact sequence.

    See :func:`period_bound` for the argument.

    Used as a negative control of ``basegraph.length``: claiming that EVERY ``n`` reaches it (as an
    upper bound) is false for the Base-(k+1) graph, e.g. ``n = 12, k = 1`` needs 5 > 4 steps.

    Examples
    --------
    >>> period_lower(12, 1), period_lower(9, 2)
    (4.0, 2.0)
    """
    b, n = int(k) + 1, int(n)
    p, reach = 0, 1
    while reach < n:  # integer ceil(log_b n)
        reach *= b
        p += 1
    return float(p)


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="at a small constant step, the stationary RMS consensus error of DSGD on one periodic gossip sequence "
              "over another's (same problem, same noise, b = 0) is sqrt(N_a / N_b), N = the phase-averaged noise sum "
              "(1/tau) sum_phases sum_m ||W^(k-1) ... W^(k-1-m) - J||_F^2",
)
def consensus_noise_ratio(noise_sum_base: float, noise_sum_other: float) -> float:
    r"""Ratio of stationary RMS consensus errors of DSGD on two gossip sequences: :math:`\sqrt{N_a/N_b}`.

    **Statement** (equal, [N]): DSGD in adapt-then-combine form, :math:`X_{k+1} = W^{(k)}(X_k - \gamma
    G_k)` with :math:`G_k = \nabla F(X_k) + \sigma\Xi_k`, :math:`\Xi_k` i.i.d. standard normal in
    :math:`\mathbb R^{n\times d}`, doubly stochastic :math:`W^{(k)}` with period :math:`\tau`. With
    :math:`C = I - J`, :math:`CX_{k+1} = (W^{(k)} - J)(CX_k - \gamma C G_k)` (because :math:`W J = J W = J`),
    so

    .. math:: CX_k = -\gamma \sum_{m \ge 0} Q_{k,m}\, G_{k-1-m}, \qquad
              Q_{k,m} = W^{(k-1)} \cdots W^{(k-1-m)} - J .

    When every node has the same minimiser (heterogeneity ``b = 0``), the deterministic part of
    :math:`G` is :math:`H_i(x_i - x^\star)`, itself of order :math:`\gamma`; the noise alone gives
    :math:`\mathbb E\|CX_k\|_F^2 = \gamma^2\sigma^2 d \sum_m \|Q_{k,m}\|_F^2` (independent steps, and
    :math:`Q\,C = Q`). Averaged over the phases of the period (a tail average over many periods),
    the stationary mean square is :math:`\gamma^2\sigma^2 d\,N` with the noise sum
    :math:`N = \frac1\tau\sum_{\text{phases}}\sum_m \|Q_{k,m}\|_F^2`, up to a relative correction
    of order :math:`\gamma L \bar m` (the curvature damps lag :math:`m` by about
    :math:`(1 - \gamma h)^{2m}`; :math:`\bar m` is the noise-weighted mean lag). The ratio of the RMS
    errors of two sequences at the same :math:`\gamma, \sigma, d` is therefore
    :math:`\sqrt{N_a/N_b}`, whatever the number of steps or messages once both are stationary.

    For a Base-(k+1) graph :math:`Q_{k,m} = 0` once the window holds a whole period, so :math:`N` is a
    finite sum; for the one-peer exponential graph at n not a power of 2 the products never reach
    ``J`` and :math:`N` is a geometric series. Finite-time exactness does not make :math:`N` small:
    the Base-2 graph's idle nodes and weak first layers leave more noise in the first lags, and its
    ``N`` is 1.27-1.53 times the one-peer graph's at n = 12, 24, 25, 48, 100 (ratio of RMS errors
    1.13-1.24): at the same step, DSGD on the Base-2 graph keeps a HIGHER consensus error.

    ``noise_sum_base`` and ``noise_sum_other`` are statistics of the row: the experiment computes
    them from the sequences' matrices (the gossip kernel applied to the identity), the run measures
    the errors; this function is the formula that relates them.

    Provenance: N (derived here; the paper states no such ratio).

    Parameters
    ----------
    noise_sum_base, noise_sum_other : float
        Phase-averaged noise sums :math:`N` of the two sequences, ``> 0``.

    Examples
    --------
    >>> consensus_noise_ratio(4.0, 1.0)
    2.0
    """
    a, b = float(noise_sum_base), float(noise_sum_other)
    if not (a >= 0 and b > 0):
        return math.nan
    return math.sqrt(a / b)
