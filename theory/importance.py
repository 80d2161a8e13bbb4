r"""Identities for "Variance reduction in SGD by distributed importance sampling".

G. Alain, A. Lamb, C. Sankar, A. Courville, Y. Bengio, arXiv:1511.06481 (2015; ICLR 2016 workshop).

**Provenance.** The paper's full text and numbers were not available (see
``papers/importance_sampling.md`` section 0). Every identity below is derived and checked numerically
in those notes, tag **[N]**; the paper's *qualitative* claims (importance sampling by gradient norm is
unbiased and minimises the variance; stale weights still help; training is faster) are tagged
**[P]** or **[S]** where they come from the abstract or a summary. Nothing here is presented as the
paper's theorem or quotes its numbering, which is unknown [X].

Order claims (``is.optimal_is_min``, ``is.training_faster``) compare measured
values with each other and have no bound here; their specs carry the provenance.

The identities involve data-dependent sums (per-example gradient norms); each bound takes the sums it
needs as arguments (the experiment emits them as columns of its rows, e.g. ``norm_mean``,
``gbar_sq``), so the formula lives here and the observable stays a raw measurement.
"""

from __future__ import annotations

from theory._bound import bound

__all__ = [
    "unbiased_bias",
    "trace_cov_minimum",
    "trace_cov_uniform",
    "trace_cov_from_moment",
    "stale_over_uniform_upper",
    "norm_trick_error",
    "comm_bytes_ratio",
    "comm_bytes_ratio_uplink",
]


@bound(
    kind="equal",
    provenance="P+N",
    paper="is",
    statement="E_q[g_I/(N q_I)] = g_bar for every proposal q > 0, stale q included (C1)",
    constant=True,
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
    statement="Tr Cov under q* = |g_n|/sum|g_m| equals (((1/N) sum |g_n|)^2 - |g_bar|^2)/M (C3)",
)
def trace_cov_minimum(norm_mean: float, gbar_sq: float, batch_size: int = 1) -> float:
    r"""Minimum :math:`\mathrm{Tr\,Cov}` over proposals, reached by :math:`q^*_n \propto \|g_n\|` (C3; equal).

    **Statement**: for one draw :math:`I\sim q` with weight :math:`1/(Nq_I)`,
    :math:`\mathrm{Tr\,Cov} = \frac1{N^2}\sum_n \|g_n\|^2/q_n - \|\bar g\|^2` (B4). By Cauchy-Schwarz,
    :math:`\sum_n a_n^2/q_n \ge (\sum_n a_n)^2` with equality iff :math:`q_n \propto a_n`, so the
    minimum is :math:`\bar a^2 - \|\bar g\|^2` with :math:`\bar a = \frac1N\sum_n\|g_n\|`; a minibatch of
    :math:`M` i.i.d. draws divides it by :math:`M` (C4). That :math:`q^*` minimises the variance is the
    paper's claim [P]; the value is derived here [N].

    Parameters
    ----------
    norm_mean : float
        :math:`\frac1N\sum_n\|g_n\|` at the parameters where the variance is measured.
    gbar_sq : float
        :math:`\|\bar g\|^2`, the squared norm of the full gradient there.
    batch_size : int
        :math:`M`.

    Examples
    --------
    >>> trace_cov_minimum(2.0, 4.0)   # norms (1, 3), g_bar = 2: every norm points the same way
    0.0
    >>> trace_cov_minimum(2.0, 1.0, batch_size=3)
    1.0
    """
    return (norm_mean**2 - gbar_sq) / batch_size


@bound(
    kind="equal",
    provenance="N",
    paper="is",
    statement="Tr Cov of uniform sampling equals ((1/N) sum |g_n|^2 - |g_bar|^2)/M (B4 with q = 1/N)",
)
def trace_cov_uniform(norm_sq_mean: float, gbar_sq: float, batch_size: int = 1) -> float:
    r""":math:`\mathrm{Tr\,Cov}` of uniform sampling: :math:`(\frac1N\sum_n\|g_n\|^2 - \|\bar g\|^2)/M` ([N]; equal).

    B4 with :math:`q_n = 1/N`. It exceeds :func:`trace_cov_minimum` by the variance of the norms over
    :math:`M`, :math:`(\overline{a^2} - \bar a^2)/M`, which is what importance sampling removes.

    Examples
    --------
    >>> trace_cov_uniform(5.0, 4.0)   # norms (1, 3), g_bar = 2
    1.0
    """
    return (norm_sq_mean - gbar_sq) / batch_size


@bound(
    kind="equal",
    provenance="N",
    paper="is",
    statement="Tr Cov of any proposal q equals ((1/N^2) sum |g_n|^2/q_n - |g_bar|^2)/M (B4, C4)",
)
def trace_cov_from_moment(weighted_sq: float, gbar_sq: float, batch_size: int = 1) -> float:
    r""":math:`\mathrm{Tr\,Cov}` of the importance-sampled minibatch gradient for a proposal ``q`` (B4, C4 [N]; equal).

    **Statement**: with :math:`\hat g = \frac1M\sum_{m} g_{I_m}/(Nq_{I_m})`, :math:`I_m` i.i.d. from ``q``,
    :math:`\mathbb{E}\|\hat g-\bar g\|^2 = (\sum_n q_n\|g_n/(Nq_n)\|^2 - \|\bar g\|^2)/M`. Its one
    data-dependent sum, ``weighted_sq`` :math:`= \frac1{N^2}\sum_n\|g_n\|^2/q_n`, is a column of the
    experiment's rows (the second moment of one reweighted draw).

    Examples
    --------
    >>> trace_cov_from_moment(5.0, 4.0, batch_size=2)
    0.5
    """
    return (weighted_sq - gbar_sq) / batch_size


@bound(
    kind="upper",
    provenance="S",
    paper="is",
    statement="over training, the stale proposal's Tr Cov stays at or below the uniform one: "
              "max_t T_stale/T_unif <= 1 (empirical report)",
    constant=True,
)
def stale_over_uniform_upper() -> float:
    r"""Largest ratio of the stale proposal's Tr Cov to the uniform one over training: at most one.

    **Statement** (upper; C6): :math:`T_{stale} \ge T^*` always [N], but :math:`T_{stale} \le T_{unif}`
    is NOT a theorem: badly wrong stale scores can exceed the uniform variance. The paper reports
    empirically that the stale variance lies between ideal and uniform [S]; with the lower end a
    theorem, the report's content is the upper end, checked here for moderate staleness. Observable:
    :math:`\max_t T_{stale}(t)/T_{unif}(t)` (both the exact Tr Cov of the proposal the master used at
    step ``t``). The statement IS the constant 1; the claim fails for long refresh periods, which is its
    negative control.

    Examples
    --------
    >>> stale_over_uniform_upper()
    1.0
    """
    return 1.0


@bound(
    kind="equal",
    provenance="S+N",
    paper="is",
    statement="|g_n|^2 = sum_l |delta_n^l|^2 (|h_n^(l-1)|^2 + 1) for dense layers, exact (C7)",
    constant=True,
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


_BYTES = 8  # float64 scores, gradients and parameters


@bound(
    kind="equal",
    provenance="N",
    paper="is",
    statement="bytes(score workers)/bytes(gradient workers), both directions = R (N_train + W D) / (2 T W D), "
              "R = T//P + 2",
)
def comm_bytes_ratio(n_train: int, n_params: int, n: int, period: int, steps: int) -> float:
    r"""Bytes of score-computing over gradient-computing workers, both directions ([N]; equal).

    **Model.** Over ``T = steps`` updates with ``W`` workers and ``D = n_params`` parameters (all float64):

    * *score workers* (the importance-sampling scheme): in each refresh round every worker fetches the
      current parameters (downlink, :math:`8D` each) and returns one score per example of its shard
      (uplink, :math:`8 N_{train}` in total), so :math:`8R(N_{train} + WD)` bytes for :math:`R` rounds.
      simcomm's period schedule has :math:`R = \lfloor T/P\rfloor + 2` rounds: the initial pass at
      :math:`\theta_0`, refreshes at steps :math:`0, P, 2P, \dots \le T` (the last one at the final
      evaluation);
    * *gradient workers* (data-parallel SGD, minibatch of at least ``W`` examples): every step each worker
      fetches the parameters and returns a gradient: :math:`2\cdot 8\,TWD` bytes.

    Ratio :math:`R(N_{train} + WD)/(2TWD)`. **Crossover**: for :math:`T \gg P`, :math:`R \approx T/P`,
    so scores cost less iff :math:`N_{train}/P < WD\,(2 - 1/P)`: the uplink-only comparison
    :math:`N_{train}/P < WD` of the seed summary ignores the parameter broadcast, which both schemes pay
    but the score scheme pays only once per round.

    Examples
    --------
    >>> comm_bytes_ratio(100, 10, 4, 10, 100)   # R = 12: 12 * 140 / (2 * 100 * 40)
    0.21
    """
    rounds = steps // period + 2
    return rounds * (n_train + n * n_params) / (2.0 * steps * n * n_params)


@bound(
    kind="equal",
    provenance="N",
    paper="is",
    statement="uplink only (no parameter broadcast): bytes(scores)/bytes(gradients) = R N_train / (T W D)",
)
def comm_bytes_ratio_uplink(n_train: int, n_params: int, n: int, period: int, steps: int) -> float:
    r"""The uplink-only ratio :math:`R N_{train}/(TWD)`, :math:`R = \lfloor T/P\rfloor + 2` ([N]; equal).

    The comparison before the parameter broadcast was counted; the wrong reference of
    ``is.communication_crossover``'s negative control (it differs from :func:`comm_bytes_ratio` by the
    downlink).

    Examples
    --------
    >>> comm_bytes_ratio_uplink(100, 10, 4, 10, 100)
    0.3
    """
    rounds = steps // period + 2
    return rounds * n_train / (steps * n * n_params)
