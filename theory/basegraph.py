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

__all__ = ["is_power", "log_base", "exact_defect", "period_bound", "period_lower"]

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
