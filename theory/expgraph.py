r"""Bounds for exponential graphs from Ying, Yuan, Chen, Hu, Pan & Yin (NeurIPS 2021).

The paper: "Exponential Graph is Provably Efficient for Decentralized Deep Training" (arXiv 2110.13363).

Everything here is a pure function of scalars (math/numpy only). Provenance tags follow
papers/exponential_graph.md: [P] the paper's text, [C] the authors' code, [N] derived here and checked
numerically (NOT the paper's theorem), [R] recollection. The paper's full text was not available;
where its exact statement is unknown, the function states the precise [N] version that is checked.

Notation: :math:`\rho = \|W - J\|_2`, :math:`J = \mathbf{1}\mathbf{1}^\top/n`,
:math:`\tau = \lceil \log_2 n \rceil` (computed with integers), :math:`\omega = e^{2\pi i/n}`,
:math:`S` the cyclic shift :math:`(Sx)_i = x_{i+1}`.
"""

from __future__ import annotations

import math

import numpy as np

from theory._bound import bound

__all__ = [
    "ceil_log2",
    "rho_bound_static_exponential",
    "rho_static_exponential_even",
    "one_peer_deviation_pow2",
    "one_peer_deviation",
    "one_peer_deviation_floor",
    "gap_order_slope",
    "gap_order",
    "eigenvalues",
    "consensus_rate",
    "noisy_consensus_error",
    "transient_iterations",
]

PAPER = "expgraph"


def ceil_log2(n: int) -> int:
    r""":math:`\tau = \lceil \log_2 n \rceil` in exact integer arithmetic (``(n - 1).bit_length()``).

    Examples
    --------
    >>> [ceil_log2(n) for n in (2, 3, 4, 5, 1024, 1025)]
    [1, 2, 2, 3, 10, 11]
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return (n - 1).bit_length()


def _is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@bound(
    kind="upper",
    provenance="P+N",
    paper=PAPER,
    statement="rho(W_exp) <= 1 - 2/(1 + ceil(log2 n)) for every n >= 2, strict for odd n >= 5",
)
def rho_bound_static_exponential(n: int) -> float:
    r"""Upper bound on :math:`\rho` of the static exponential graph (papers C1).

    **Statement** (upper): for :math:`W_{exp} = (I + \sum_{t<\tau} S^{2^t})/(\tau+1)`,

    .. math:: \rho(W_{exp}) \le 1 - \frac{2}{1 + \lceil\log_2 n\rceil},

    with equality for every even :math:`n` and strict inequality for odd :math:`n \ge 5`
    (:math:`n = 3` gives the complete graph, :math:`\rho = 0`).

    Provenance: P+N. The bound and its attainment for even n are in the paper's supplement [P];
    strictness for odd n is "established numerically" there [P] and re-checked here [N].
    The theorem number is not known [X].

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Examples
    --------
    >>> rho_bound_static_exponential(16)
    0.6
    """
    return 1.0 - 2.0 / (1.0 + ceil_log2(n))


@bound(
    kind="equal",
    provenance="P+N",
    paper=PAPER,
    statement="rho(W_exp) = 1 - 2/(1 + ceil(log2 n)) for every even n (attained by lambda_{n/2})",
)
def rho_static_exponential_even(n: int) -> float:
    r"""Exact :math:`\rho` of the static exponential graph for even :math:`n` (papers C1).

    **Statement** (equal): for even :math:`n`, :math:`\lambda_{n/2} = (1 - 1 + (\tau - 1))/(\tau+1)`
    because :math:`\omega^{(n/2)2^t}` is :math:`-1` for :math:`t = 0` and :math:`+1` for
    :math:`t \ge 1`, and this is the largest :math:`|\lambda_m|, m \ne 0`, so
    :math:`\rho = 1 - 2/(1 + \lceil\log_2 n\rceil)`.

    Provenance: P+N (supplement snippet: "bound attained if n is even, :math:`\lambda_{n/2}` is
    that eigenvalue"; verified numerically here).

    Parameters
    ----------
    n : int
        Even number of nodes, ``n >= 2``.

    Raises
    ------
    ValueError
        For odd ``n`` (the statement is about even n only).

    Examples
    --------
    >>> rho_static_exponential_even(1000) == rho_bound_static_exponential(1000)
    True
    """
    if int(n) % 2:
        raise ValueError(f"the equality holds for even n only, got n={n}")
    return 1.0 - 2.0 / (1.0 + ceil_log2(n))


@bound(
    kind="equal",
    provenance="P+N",
    paper=PAPER,
    constant=True,
    statement="for n = 2^tau, any tau consecutive one-peer matrices multiply to J (deviation 0), any start phase",
)
def one_peer_deviation_pow2(n: int) -> float:
    r"""Exact averaging of the one-peer exponential sequence when :math:`n` is a power of 2 (papers C2).

    **Statement** (equal): if :math:`n = 2^\tau`, then for every start phase :math:`k`,

    .. math:: \|W^{(k+\tau-1)} \cdots W^{(k)} - J\| = 0,
              \quad W^{(k)} = (I + S^{2^{k \bmod \tau}})/2.

    Proof [N]: circulants commute, and
    :math:`\prod_{t<\tau}(I + S^{2^t})/2 = 2^{-\tau}\sum_{m<2^\tau} S^m = J` (binary expansion).
    Holds for any order of the hop lengths too.

    Provenance: P+N. The paper's abstract says a sequence of log(n) one-peer graphs "can together
    achieve exact averaging" [P]; the precise statement (powers of 2, any phase) is derived here [N].

    The value IS the statement (exact averaging), so it is the constant 0 for every ``n``: the
    function does not refuse other ``n``, because the claim's negative control evaluates the same
    prediction at ``n`` not a power of 2, where the true deviation is
    :func:`one_peer_deviation` ``> 0`` and the claim must come out violated.

    Parameters
    ----------
    n : int
        Number of nodes (the statement is about powers of 2).

    Examples
    --------
    >>> one_peer_deviation_pow2(4096)
    0.0
    """
    del n  # the prediction is 0 whatever n; see above
    return 0.0


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="one-period one-peer deviation = 2^-tau max_{m!=0} |sin(pi m r/n)/sin(pi m/n)|, r = 2^tau - n",
)
def one_peer_deviation(n: int) -> float:
    r"""Exact one-period deviation :math:`\|\prod_{t<\tau} W^{(t)} - J\|_2` of the one-peer sequence, any n.

    **Statement** (equal, [N]): with :math:`r = 2^\tau - n`,
    :math:`\prod_{t<\tau}(I + S^{2^t})/2 = 2^{-\tau}\sum_{j<2^\tau} S^j = (nJ + \sum_{j<r} S^j)/2^\tau`, so

    .. math:: \Big\|\prod W^{(t)} - J\Big\|_2 = 2^{-\tau}\,\Big\|\sum_{j<r} S^j - rJ\Big\|_2
              = 2^{-\tau} \max_{m \ne 0}
              \left|\frac{\sin(\pi m r / n)}{\sin(\pi m / n)}\right| .

    It is 0 exactly when :math:`r = 0` (n a power of 2).

    Provenance: N (derived here; not in the paper, whose statement for general n is unknown [R]).

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Examples
    --------
    >>> one_peer_deviation(7)   # r = 1: exactly 2^-3
    0.125
    """
    n = int(n)
    tau = ceil_log2(n)
    r = (1 << tau) - n
    if r == 0:
        return 0.0
    m = np.arange(1, n)
    # reduce m*r mod n in integers before the sine so large n stays accurate
    ratio = np.abs(np.sin(np.pi * ((m * r) % n) / n) / np.sin(np.pi * m / n))
    return float(ratio.max() / (1 << tau))


@bound(
    kind="lower",
    provenance="N",
    paper=PAPER,
    statement="for n not a power of 2 the one-period one-peer deviation is >= 2^-tau sqrt(r(n-r)/(n-1)) > 0, "
              "r = 2^tau - n",
)
def one_peer_deviation_floor(n: int) -> float:
    r"""Floor on the one-period deviation of the one-peer sequence when :math:`n` is not a power of 2.

    **Statement** (lower, [N]): with :math:`r = 2^\tau - n \in [1, n-1]`,

    .. math:: \Big\|\prod_{t<\tau} W^{(t)} - J\Big\|_2 \;\ge\; 2^{-\tau}\sqrt{\frac{r(n-r)}{n-1}}
              \;\ge\; 2^{-\tau} \;>\; 0 .

    Derivation: the deviation is :math:`2^{-\tau}\|P_r - rJ\|_2`, :math:`P_r = \sum_{j<r} S^j`
    (see :func:`one_peer_deviation`); its Frobenius norm squared is :math:`r(n-r)`, spread over
    :math:`n-1` nonzero modes, so the largest mode is at least the RMS. Equality for
    :math:`n = 2^\tau - 1` (r = 1), where the deviation is exactly :math:`2^{-\tau} \approx 1/n`.

    So exactness fails for EVERY non-power of 2, but the deviation is NOT bounded away from 0
    uniformly in n: next to a power of 2 it is of order :math:`1/n` (e.g. :math:`n = 1023`:
    :math:`2^{-10}`), while typical n (12, 24, 48, 100, 1000) give about 0.2 (papers C2).

    Provenance: N (derived here, not from the paper).

    Parameters
    ----------
    n : int
        Number of nodes, not a power of 2, ``n >= 3``.

    Raises
    ------
    ValueError
        If ``n`` is a power of 2 (the deviation is then 0).

    Examples
    --------
    >>> one_peer_deviation_floor(7)
    0.125
    """
    n = int(n)
    if _is_pow2(n):
        raise ValueError(f"n={n} is a power of 2: the deviation is 0, see one_peer_deviation_pow2")
    tau = ceil_log2(n)
    r = (1 << tau) - n
    return math.sqrt(r * (n - r) / (n - 1)) / (1 << tau)


_SLOPES = {"ring": -2.0, "torus": -1.0, "exponential": 0.0}


@bound(
    kind="slope",
    provenance="R+N",
    paper=PAPER,
    statement="log-log slope of 1 - rho against n over [n_min, n_max]: ring -2, 2-D torus -1, "
              "static exponential that of 1/log2 n",
)
def gap_order_slope(topology: str, n_min: float = 16, n_max: float = 65536) -> float:
    r"""Predicted log-log slope of the spectral gap :math:`1 - \rho` against :math:`n` over :math:`[n_1, n_2]`.

    **Statement** (slope): :math:`1-\rho = \Theta(f(n))` with :math:`f(n) = n^{-2}` for the ring,
    :math:`n^{-1}` for the square 2-D torus and :math:`1/\log_2 n` for the static exponential graph
    (:func:`gap_order`). The predicted slope is the secant slope of :math:`\log f` against
    :math:`\log n` over the fitted range: exactly -2 and -1 for the power laws, and
    :math:`-\ln(\log n_2/\log n_1)/\ln(n_2/n_1)` for the logarithmic law (-1/6 for
    :math:`[16, 65536]`): it decays slower than any power of n, and a constant gap (slope 0) or a
    :math:`1/n` gap (slope -1) would both be told apart from it by a tolerance of 0.1.

    Provenance: R+N. The orders are recalled from the paper's Table 1 [R]; for ring
    :math:`1-\rho = \tfrac{2}{3}(1-\cos(2\pi/n))`, torus :math:`\tfrac{2}{5}(1-\cos(2\pi/\sqrt n))`
    and exponential :math:`\ge 2/(1+\lceil\log_2 n\rceil)` (equality for even n) they are checked
    here [N].

    Parameters
    ----------
    topology : {"ring", "torus", "exponential"}
    n_min, n_max : float
        The range of n the slope is fitted over (only the logarithmic law depends on it).

    Examples
    --------
    >>> gap_order_slope("ring"), gap_order_slope("torus"), round(gap_order_slope("exponential", 16, 65536), 4)
    (-2.0, -1.0, -0.1667)
    """
    # the secant slope of the order function itself (exact -2, -1 for the power laws)
    return math.log(gap_order(topology, n_max) / gap_order(topology, n_min)) / math.log(n_max / n_min)


@bound(
    kind="order",
    provenance="R+N",
    paper=PAPER,
    statement="order of 1 - rho: ring n^-2, 2-D torus n^-1, static exponential 1/log2(n) (constants omitted)",
)
def gap_order(topology: str, n: float) -> float:
    r"""The order function :math:`f(n)` with :math:`1 - \rho = \Theta(f(n))` (constants omitted).

    ``ring``: :math:`n^{-2}`; ``torus``: :math:`n^{-1}`; ``exponential``: :math:`1/\log_2 n`.
    Provenance as :func:`gap_order_slope`, whose predicted slope is the secant slope of this function
    (the shape is judged through that slope; an ``order`` claim needs no bound).

    Parameters
    ----------
    topology : {"ring", "torus", "exponential"}
    n : float
        Number of nodes, ``n >= 2``.

    Examples
    --------
    >>> gap_order("exponential", 1024)
    0.1
    """
    if topology == "exponential":
        return 1.0 / math.log2(n)
    if topology not in _SLOPES:
        raise ValueError(f"no predicted order for topology {topology!r}; known: {sorted(_SLOPES)}")
    return float(n) ** _SLOPES[topology]


def eigenvalues(topology: str, n: int) -> np.ndarray:
    r"""Eigenvalues of the mixing matrix of a named topology, from closed forms (complex, length n).

    Conventions match simcomm's constructors: ``ring`` :math:`(1+2\cos(2\pi m/n))/3`
    (n = 2: weights 1/2); ``exponential`` :math:`(1+\sum_{t<\tau}\omega^{m 2^t})/(\tau+1)`;
    ``torus`` on the most square factorisation :math:`n = r c` (:math:`r \le c`, both >= 2, a side
    of 2 gives one neighbour), weights :math:`1/(\deg+1)`; ``hypercube``
    :math:`(1 + \dim - 2j)/(\dim+1)` with multiplicity :math:`\binom{\dim}{j}`; ``star``
    (Metropolis) :math:`\{1, 0, 1-1/n \ (\times n-2)\}`; ``complete`` :math:`\{1, 0, \dots\}`.
    The first entry is always the consensus eigenvalue 1.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(np.sort(np.abs(eigenvalues("ring", 8)))[-2], (1 + np.sqrt(2)) / 3))
    True
    """
    n = int(n)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    m = np.arange(n)
    if topology == "ring":
        if n == 2:
            return np.array([1.0, 0.0], dtype=complex)
        return ((1 + 2 * np.cos(2 * np.pi * m / n)) / 3).astype(complex)
    if topology == "exponential":
        tau = ceil_log2(n)
        lam = np.ones(n, dtype=complex)
        for t in range(tau):
            lam += np.exp(2j * np.pi * ((m * (1 << t)) % n) / n)
        return lam / (tau + 1)
    if topology == "torus":
        r = math.isqrt(n)
        while r >= 2 and n % r:
            r -= 1
        if r < 2:
            raise ValueError(f"torus needs n = r*c with both sides >= 2, got n={n}")
        c = n // r

        def side(s):
            a = np.arange(s)
            return (2 * np.cos(2 * np.pi * a / s), 2) if s >= 3 else (np.cos(np.pi * a), 1)

        (ar, dr), (ac, dc) = side(r), side(c)
        return ((1 + ar[:, None] + ac[None, :]) / (1 + dr + dc)).ravel().astype(complex)
    if topology == "hypercube":
        if not _is_pow2(n):
            raise ValueError(f"hypercube needs n a power of 2, got n={n}")
        dim = n.bit_length() - 1
        j = np.array([bin(i).count("1") for i in range(n)])
        return ((1 + dim - 2 * j) / (dim + 1)).astype(complex)
    if topology == "star":
        return np.concatenate([[1.0, 0.0], np.full(n - 2, 1 - 1 / n)]).astype(complex)
    if topology == "complete":
        return np.concatenate([[1.0], np.zeros(n - 1)]).astype(complex)
    raise ValueError(f"no closed-form spectrum for topology {topology!r}")


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="for a static normal doubly stochastic W, gossip x <- W x contracts ||x - mean|| per step "
              "at rate rho = max_{m!=0}|lambda_m|",
)
def consensus_rate(topology: str, n: int) -> float:
    r"""Asymptotic per-step contraction of the consensus error under gossip :math:`x \leftarrow Wx`.

    **Statement** (equal, [N]): for normal doubly stochastic :math:`W` with eigenvalues
    :math:`\lambda_m`,
    :math:`\|x_k - \mathbf{1}\bar x\|^2 = \sum_{m \ne 0} |c_m|^2 |\lambda_m|^{2k}`, so
    :math:`\|x_{k+1} - \mathbf{1}\bar x\| / \|x_k - \mathbf{1}\bar x\| \to \rho = \max_{m\ne0}|\lambda_m|`
    for any start with a nonzero component on a top mode (almost every random start).
    The value is computed from :func:`eigenvalues`.

    Provenance: N (standard linear algebra; papers (f)4).

    Parameters
    ----------
    topology : {"ring", "torus", "exponential", "hypercube", "star", "complete"}
    n : int
        Number of nodes.

    Examples
    --------
    >>> round(consensus_rate("star", 10), 12)
    0.9
    """
    lam = eigenvalues(topology, n)
    return float(np.abs(lam[1:]).max())


@bound(
    kind="equal",
    provenance="N",
    paper=PAPER,
    statement="stationary (1/n) E||x - 1 xbar^T||_F^2 of x <- W(x - lr xi) "
              "= lr^2 sigma^2 d (1/n) sum_{m!=0} |l_m|^2/(1-|l_m|^2)",
)
def noisy_consensus_error(lr: float, sigma: float, d: int, topology: str, n: int) -> float:
    r"""Stationary per-node consensus error of noisy gossip (papers C6).

    **Statement** (equal, [N]): for :math:`x_{k+1} = W(x_k - \gamma\xi_k)`,
    :math:`\xi_k` i.i.d. :math:`N(0, \sigma^2 I)` in :math:`\mathbb{R}^{n \times d}`, :math:`W` normal
    and doubly stochastic with :math:`|\lambda_m| < 1` for :math:`m \ne 0`,

    .. math:: \lim_{k\to\infty} \frac1n \mathbb{E}\|x_k - \mathbf{1}\bar x_k^\top\|_F^2
              = \gamma^2\sigma^2 d\, \frac1n \sum_{m\ne0} \frac{|\lambda_m|^2}{1-|\lambda_m|^2}.

    Derivation: :math:`e = (I-J)x` obeys :math:`e_{k+1} = (W-J)(e_k - \gamma\xi_k)`; in the unitary
    eigenbasis each mode is an AR(1) with variance :math:`v = |\lambda|^2(v + \gamma^2\sigma^2)`.
    Not from the paper.

    Parameters
    ----------
    lr : float
        Step size, > 0.
    sigma : float
        Noise standard deviation per coordinate, >= 0.
    d : int
        Dimension (columns of ``x``).
    topology : str
        A name accepted by :func:`eigenvalues`.
    n : int
        Number of nodes.

    Examples
    --------
    >>> round(noisy_consensus_error(0.1, 1.0, 1, "exponential", 16), 5)
    0.00181
    """
    mag2 = np.abs(eigenvalues(topology, n)[1:]) ** 2
    if np.any(mag2 >= 1.0):
        return math.inf
    return float(lr**2 * sigma**2 * d * np.sum(mag2 / (1.0 - mag2)) / n)


@bound(
    kind="lower",
    provenance="R+N",
    paper=PAPER,
    statement="transient iterations: T >= max(n^3 rho^4/(sigma^2 (1-rho)^2), n^3 rho^4 b^4/(sigma^6 (1-rho)^4), "
              "n rho^2/(sigma^2 (1-rho)^2)) up to constants",
)
def transient_iterations(n: int, rho: float, sigma: float, b: float = 0.0) -> float:
    r"""Transient iterations of DSGD/DmSGD: the T after which the linear-speedup term dominates (papers C5).

    **Definition** [R; standard]: the number of iterations before every network-dependent term of
    the rate (papers C3, [R], constants unknown)

    .. math:: \frac{\sigma}{\sqrt{nT}} + \frac{\rho^{2/3}\sigma^{2/3}}{T^{2/3}(1-\rho)^{1/3}}
              + \frac{\rho^{2/3} b^{2/3}}{T^{2/3}(1-\rho)^{2/3}} + \frac{\rho}{(1-\rho)T}

    is below the linear-speedup term :math:`\sigma/\sqrt{nT}`. Solving each comparison [N]:

    .. math:: T \ge \max\Big(\frac{n^3\rho^4}{\sigma^2(1-\rho)^2},\;
              \frac{n^3\rho^4 b^4}{\sigma^6(1-\rho)^4},\;
              \frac{n\rho^2}{\sigma^2(1-\rho)^2}\Big),

    i.e. :math:`\Theta(n^3/(1-\rho)^2)` for homogeneous data (b = 0). (papers C5 writes
    :math:`\sigma^4` in the b-term; solving :math:`\sigma/\sqrt{nT} \ge \rho^{2/3}b^{2/3}/(T^{2/3}(1-\rho)^{2/3})`
    gives :math:`\sigma^6`.) Hidden constants of C3 are unknown, so only the shape (growth in
    n and in :math:`1/(1-\rho)`) is meaningful.

    Provenance: R+N (rate form recalled [R]; the solving is done here [N]).

    Parameters
    ----------
    n : int
        Number of nodes.
    rho : float
        :math:`\|W - J\|_2` in ``[0, 1)``.
    sigma : float
        Gradient-noise standard deviation, > 0.
    b : float
        Data heterogeneity, >= 0.

    Examples
    --------
    >>> transient_iterations(8, 0.5, 1.0)
    128.0
    """
    if not 0.0 <= rho < 1.0:
        return math.inf if rho >= 1.0 else math.nan
    gap = 1.0 - rho
    t_sigma = n**3 * rho**4 / (sigma**2 * gap**2)
    t_b = n**3 * rho**4 * b**4 / (sigma**6 * gap**4)
    t_last = n * rho**2 / (sigma**2 * gap**2)
    return float(max(t_sigma, t_b, t_last))
