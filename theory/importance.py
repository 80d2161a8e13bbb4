r"""Identities for "Variance reduction in SGD by distributed importance sampling".

G. Alain, A. Lamb, C. Sankar, A. Courville, Y. Bengio, arXiv:1511.06481 (2015; ICLR 2016 workshop).

**Provenance.** The paper's full text and numbers were not available (see
``papers/importance_sampling.md`` section 0). Every identity below is derived and checked numerically
in those notes, tag **[N]**; the paper's *qualitative* claims (importance sampling by gradient norm is
unbiased and minimises the variance; stale weights still help; training is faster) are tagged
**[P]** or **[S]** where they come from the abstract or a summary. Nothing here is presented as the
paper's theorem or quotes its numbering, which is unknown [X].

Order claims (``is.optimal_is_min``, ``is.training_faster``, ``is.communication``) compare measured
values with each other and have no bound here; their specs carry the provenance.

Because the identities involve data-dependent sums (per-example gradient norms), each bound is stated
for a *normalised* observable that the experiment computes, so the bound is a constant.
"""

from __future__ import annotations

from theory._bound import bound

__all__ = [
    "unbiased_bias",
    "optimal_minimum_ratio",
    "smoothing_increment_lower",
    "stale_position_upper",
    "norm_trick_error",
]


@bound(
    kind="equal",
    provenance="P+N",
    paper="is",
    statement="E_q[g_I/(N q_I)] = g_bar for every proposal q > 0, stale q included (C1)",
)
def unbiased_bias() -> float:
    r"""Relative bias of the importance-sampled gradient along the full gradient: zero.

    **Statement** (equal; C1 in the notes): for :math:`I \sim q` with every :math:`q_n > 0`,
    :math:`\mathbb{E}[g_I/(Nq_I)] = \sum_n q_n g_n/(Nq_n) = \bar g`. It holds for stale :math:`q`
    because the same :math:`q` is used to sample and to reweight. The paper claims unbiasedness [P];
    the one-line proof is [N]. The observable is
    :math:`\langle \mathrm{mean}_K \hat g - \bar g, \bar g\rangle / \|\bar g\|^2`.

    Returns
    -------
    float
        ``0.0``.

    Examples
    --------
    >>> unbiased_bias()
    0.0
    """
    return 0.0


@bound(
    kind="equal",
    provenance="P+N",
    paper="is",
    statement="Tr Cov under q* = |g_n|/sum|g_m| equals ((1/N) sum |g_n|)^2 - |g_bar|^2 (C3)",
)
def optimal_minimum_ratio() -> float:
    r"""Empirical Tr Cov of the ideal proposal divided by its closed form: one.

    **Statement** (equal; C3, [N]): with :math:`q^*_n = \|g_n\|/\sum_m\|g_m\|`,
    :math:`\mathrm{Tr\,Cov}(\hat g_{q^*}) = (\frac1N\sum_n\|g_n\|)^2 - \|\bar g\|^2` (divided by :math:`M`
    for a minibatch of :math:`M` i.i.d. draws). That :math:`q^*` minimises the variance is the paper's
    claim [P]; the minimum value is derived here [N].

    Returns
    -------
    float
        ``1.0``.

    Examples
    --------
    >>> optimal_minimum_ratio()
    1.0
    """
    return 1.0


@bound(
    kind="lower",
    provenance="N",
    paper="is",
    statement="Tr Cov of q proportional to |g_n| + c is non-decreasing in c (C5, Chebyshev sum inequality)",
)
def smoothing_increment_lower() -> float:
    r"""Increments of the normalised Tr Cov between consecutive smoothing constants: at least zero.

    **Statement** (lower; C5, [N], not claimed by the paper as far as known): with :math:`a_n=\|g_n\|`,
    :math:`F(c) = (S+Nc)\sum_n a_n^2/(a_n+c)` has
    :math:`F'(c) = N\sum_n a_n^2(a_n-\bar a)/(a_n+c)^2 \ge 0`, so Tr Cov grows from the ideal value
    (:math:`c=0`) to the uniform value (:math:`c\to\infty`). Observable: the increment of the Tr Cov
    measured from sampled minibatches (common random numbers across :math:`c`),
    :math:`(\hat T(c_j)-\hat T(c_{j-1}))/(T_{unif}-T^*)`, whose expectation is at least zero.

    Returns
    -------
    float
        ``0.0``.

    Examples
    --------
    >>> smoothing_increment_lower()
    0.0
    """
    return 0.0


@bound(
    kind="upper",
    provenance="S",
    paper="is",
    statement="over training, stale-score Tr Cov stays between the ideal and the uniform Tr Cov (empirical report)",
)
def stale_position_upper() -> float:
    r"""Position of the stale proposal's Tr Cov between ideal (0) and uniform (1): at most one.

    **Statement** (upper; C6): :math:`T_{stale} \ge T^*` always [N], but :math:`T_{stale} \le T_{unif}`
    is NOT a theorem: badly wrong stale scores can exceed the uniform variance. The paper reports
    empirically that the stale variance lies between ideal and uniform [S]; this checks that report for
    moderate staleness. Observable: :math:`\max_t (T_{stale}-T^*)/(T_{unif}-T^*)`.

    Returns
    -------
    float
        ``1.0``.

    Examples
    --------
    >>> stale_position_upper()
    1.0
    """
    return 1.0


@bound(
    kind="equal",
    provenance="S+N",
    paper="is",
    statement="|g_n|^2 = sum_l |delta_n^l|^2 (|h_n^(l-1)|^2 + 1) for dense layers, exact (C7)",
)
def norm_trick_error() -> float:
    r"""Absolute error of per-example norms from one forward/backward pass: zero.

    **Statement** (equal; C7): for a dense layer :math:`\partial\ell_n/\partial W = h_n\delta_n^\top`,
    so :math:`\|\partial\ell_n/\partial W\|_F^2 = \|h_n\|^2\|\delta_n\|^2` and the bias adds
    :math:`\|\delta_n\|^2`. The shortcut is cited by the paper [S]; the formula is derived here [N].
    Observable: :math:`\max_n |\,\|g_n\|_{trick} - \|g_n\|_{explicit}|` in float64.

    Returns
    -------
    float
        ``0.0``.

    Examples
    --------
    >>> norm_trick_error()
    0.0
    """
    return 0.0
