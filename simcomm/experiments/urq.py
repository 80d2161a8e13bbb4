"""Experiments for the URQ / delay / IAG paper (papers/urq_delay.md; bounds in theory/urq.py).

Each function is pure: all randomness comes from ``rng`` (the vector a quantizer is tested on comes
from the fixed ``v_seed`` so that every replicate estimates the same expectation).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.compress import compressor_from_settings, compressor_names
from simcomm.experiments._registry import Param, experiment
from simcomm.models import make_problem
from simcomm.optim import async_compressed_gd, compressed_gd, compressed_iag, stable_step_bracket

_Q = {
    "quantizer": None,  # its choices come from the registry, below
    "s": Param("int", default=4, low=1, doc="QSGD levels"),
    "p": Param("float", default=0.25, low=0.0, low_open=True, high=1.0, doc="Bernoulli keep probability"),
    "k": Param("int", default=4, low=1, doc="rand_k kept coordinates (scaled by d/k)"),
    "delta": Param("float", default=0.1, low=0.0, low_open=True, doc="stochastic rounding grid step"),
}
#: every registered unbiased compressor these experiments can build from the settings above (at their defaults)
QUANTIZER_NAMES = compressor_names(tuple(k for k in _Q if k != "quantizer"), unbiased=True,
                                   defaults={k: p.default for k, p in _Q.items() if p is not None})
_Q["quantizer"] = Param("str", default="qsgd", choices=QUANTIZER_NAMES, doc="unbiased random quantizer")


#: negative control of the D1 claims: the step ignores the compression (added later: unkeyed at its default)
_STEP = Param("str", default="alpha", choices=("alpha", "uncompressed"), keyed_at_default=False,
              doc="negative control only: uncompressed runs at lr = 1/L, the plain-GD step, instead of 1/(alpha L)")


def _d1_step(params, a: float, L: float) -> float:
    """The D1 step 1/(alpha L), or 1/L under the ``step = "uncompressed"`` negative control."""
    return 1.0 / (L if params.get("step", "alpha") == "uncompressed" else a * L)


def _quantizer(params):
    return compressor_from_settings(params["quantizer"], {k: params[k] for k in _Q if k != "quantizer"})


def _check_k(params):
    if params.get("quantizer") == "rand_k" and params["k"] > params["d"]:
        raise ValueError(f"k = {params['k']} > d = {params['d']}; use k <= d")


def _vector(kind: str, d: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    if kind == "gaussian":
        return g.standard_normal(d)
    if kind == "sparse":  # 10% non-zeros
        v = np.zeros(d)
        idx = g.choice(d, max(1, d // 10), replace=False)
        v[idx] = g.standard_normal(idx.size)
        return v
    if kind == "heavy":  # Student t with 1.5 degrees of freedom: a few huge coordinates
        return g.standard_t(1.5, d)
    return np.ones(d) * np.where(g.random(d) < 0.5, -1.0, 1.0)  # "equal": QSGD/ternary worst cases


@experiment(
    "urq_quantizer",
    columns=("direction",),
    params={
        **_Q,
        "d": Param("int", default=100, low=1, doc="dimension"),
        "vector": Param("str", default="gaussian", choices=("gaussian", "sparse", "heavy", "equal"),
                        doc="test vector v"),
        "v_seed": Param("int", default=20180618, low=0, doc="seed of the fixed test vector (same in every replicate)"),
        "draws": Param("int", default=2000, low=2, doc="quantizations of v per replicate"),
        "miscale": Param("float", default=0.0, low=-0.5, high=0.5,
                         doc="negative control only: the output is multiplied by 1 + miscale (a biased quantizer)"),
    },
    check=_check_k,
)
def urq_quantizer(params, rng, backend):
    """Monte Carlo moments of Q(v) for a fixed v (urq.unbiased, urq.variance).

    Metrics: ``bias`` = <mean Q(v) - v, w>/(|v| |w|) for ``direction`` w = v and w = a fixed random
    sign vector (expectation 0); ``variance`` = mean |Q(v) - v|^2 over the draws (raw), with the
    statistics of v that the closed forms of ``theory.urq.variance_exact`` need as columns: ``norm2``
    (|v|^2), ``norm1``, ``norm_inf`` and ``frac_sum`` = sum_i f_i (1 - f_i), f_i the fractional part of
    v_i on the quantizer's own grid (QSGD: s |v_i| / |v|; stochastic rounding: v_i / delta; nan for the
    others, whose closed forms do not use it). These depend on v only, so they are the same in every
    replicate. ``variance_over_norm2`` (at most beta(d)), ``beta`` and ``bits`` are reported alongside.
    ``miscale`` != 0 turns the quantizer into a biased one, Q'(v) = (1 + miscale) Q(v), for the
    claims' negative controls.
    """
    q = _quantizer(params)
    d = params["d"]
    v = _vector(params["vector"], d, params["v_seed"])
    w = np.where(np.random.default_rng(params["v_seed"] + 1).random(d) < 0.5, -1.0, 1.0)
    M = params["draws"]
    scale = 1.0 + params["miscale"]
    chunk = max(1, min(M, 2_000_000 // d))
    qsum = np.zeros(d)
    err2 = 0.0
    for lo in range(0, M, chunk):
        m = min(chunk, M - lo)
        Q = scale * np.asarray(q.apply(np.broadcast_to(v, (m, d)).copy(), rng=rng), dtype=np.float64)
        qsum += Q.sum(axis=0)
        err2 += float(((Q - v) ** 2).sum())
    mean = qsum / M
    n2 = float(v @ v)
    nv = math.sqrt(n2)
    grid = {"qsgd": params["s"] * np.abs(v) / (nv if nv > 0 else 1.0),
            "stochastic_round": v / params["delta"]}.get(params["quantizer"])
    frac = grid - np.floor(grid) if grid is not None else None
    stats = dict(norm2=n2, norm1=float(np.abs(v).sum()), norm_inf=float(np.abs(v).max()),
                 frac_sum=float((frac * (1.0 - frac)).sum()) if frac is not None else math.nan)
    emp = err2 / M
    return [
        dict(metric="bias", value=float((mean - v) @ v) / n2, direction="v"),
        dict(metric="bias", value=float((mean - v) @ w) / (nv * math.sqrt(d)), direction="sign"),
        dict(metric="variance", value=emp, **stats),
        dict(metric="variance_over_norm2", value=emp / n2),
        dict(metric="beta", value=float(q.beta(d))),
        dict(metric="bits", value=float(q.bits(d))),
    ]


_PROBLEM = {
    "problem": Param("str", default="quadratic",
                     choices=("quadratic", "ridge", "logistic_breast_cancer", "logistic_digits"),
                     doc="strongly convex problem with known L, mu, f*"),
    "d": Param("int", default=50, low=1, doc="dimension (quadratic, ridge)"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothness (quadratic, ridge)"),
    "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="strong convexity (quadratic, ridge)"),
}


def _check_problem(params):
    if params["mu"] > params["L"]:
        raise ValueError(f"mu = {params['mu']} > L = {params['L']}; use mu <= L")
    _check_k(params)


def _check_nonconvex(params):
    _check_k(params)
    if not params["f0_gap"] < params["d"] * params["L"] / 2:
        raise ValueError(f"f0_gap = {params['f0_gap']} must be < d*L/2 = {params['d'] * params['L'] / 2:g}")


def _check_floor(params):
    _check_problem(params)
    if not params["K1"] < params["K"]:
        raise ValueError(f"K1 = {params['K1']} must be < K = {params['K']}")


_QUAD = {**_PROBLEM, "problem": Param("str", default="quadratic", choices=("quadratic", "ridge"),
                                      doc="strongly convex problem whose L and mu are the cell's parameters")}


@experiment(
    "urq_rate",
    params={**_Q, **_QUAD,
            "target": Param("float", default=1e-4, low=0.0, low_open=True, high=1.0, high_open=True,
                            doc="run until the bound predicts gap ratio 'target' (sets K)"),
            "step": _STEP,
            "lr_scale": Param("float", default=1.0, low=0.0, low_open=True, keyed_at_default=False,
                              doc="negative control only: the run's step is the D1 step times this (the bound "
                                  "keeps the D1 rate)")},
    check=_check_problem,
)
def urq_rate(params, rng, backend):
    """Single-stream compressed GD at lr = 1/(alpha L) (D1): the per-step rate of f - f*.

    ``rate`` = ((f(x_K) - f*)/(f(x_0) - f*))**(1/K), with K = ln(1/target)/(mu/(alpha L)) so the
    bound predicts a gap ratio ``target``; ``alpha`` uses the worst-case beta(d).
    """
    q = _quantizer(params)
    p = make_problem(params["problem"], n=1, d=params["d"], L=params["L"], mu=params["mu"], rotate=True, rng=rng) \
        if params["problem"] == "quadratic" else make_problem(params["problem"], n=1, d=params["d"], L=params["L"],
                                                              mu=params["mu"], rng=rng)
    a = q.alpha(p.d)
    K = max(1, math.ceil(math.log(1.0 / params["target"]) * a * p.L / p.mu))
    tr = compressed_gd(p, q, lr=_d1_step(params, a, p.L) * params["lr_scale"], steps=K, mode="aggregate",
                       record_every=K, rng=rng, backend=backend)
    g0, gK = tr.f_gap[0, 0], tr.f_gap[0, -1]
    rate = (max(gK, 0.0) / g0) ** (1.0 / K) if math.isfinite(gK) else math.inf
    note = tr.notes()[0]
    # derived quantities (K, alpha) stay out of the rows: extra columns would split the claim's cells;
    # the bound 1 - mu/(alpha L) is theory.urq.rate_strongly_convex, not recomputed here
    return [dict(metric="rate", value=rate, note=note)]


@experiment(
    "urq_nonconvex",
    params={**_Q,
            "d": Param("int", default=100, low=1, doc="dimension"),
            "L": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothness"),
            "f0_gap": Param("float", default=20.0, low=0.0, low_open=True, doc="f(x0) - f*, < d L / 2"),
            "K": Param("int", default=200, low=1, doc="iterations"),
            "step": _STEP},
    check=lambda prm: _check_nonconvex(prm),
)
def urq_nonconvex(params, rng, backend):
    """Single-stream compressed GD at lr = 1/(alpha L) on a smooth non-convex sum (D1, non-convex).

    ``avg_grad_norm2`` = (1/K) sum_{k<K} |grad f(x_k)|^2.
    """
    q = _quantizer(params)
    p = make_problem("nonconvex", n=1, d=params["d"], L=params["L"], f0_gap=params["f0_gap"], rng=rng)
    a = q.alpha(p.d)
    tr = compressed_gd(p, q, lr=_d1_step(params, a, p.L), steps=params["K"], mode="aggregate", record_every=params["K"],
                       track_grad=True, rng=rng, backend=backend)
    return [dict(metric="avg_grad_norm2", value=float(tr.grad2_mean[0]), note=tr.notes()[0])]


@experiment(
    "urq_floor",
    params={**_Q,
            "d": Param("int", default=20, low=1, doc="dimension"),
            "n": Param("int", default=8, low=1, doc="workers", former="N"),
            "L": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothness of every f_i"),
            "mu": Param("float", default=0.5, low=0.0, low_open=True, doc="strong convexity"),
            "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="step size", former="gamma"),
            "sigma2": Param("float", default=1.0, low=0.0, doc="(1/n) sum |grad f_i(x*)|^2 (0: identical workers)"),
            "e0": Param("float", default=1.0, low=0.0, low_open=True, doc="|x0 - x*|^2"),
            "K1": Param("int", default=400, low=0, doc="first iteration of the plateau average"),
            "K": Param("int", default=1000, low=1, doc="last iteration"),
            "lr_scale": Param("float", default=1.0, low=0.0, low_open=True, keyed_at_default=False,
                              doc="negative control only: the run's step is lr times this (the bound keeps lr)"),
            "sigma2_scale": Param("float", default=1.0, low=0.0, low_open=True, keyed_at_default=False,
                                  doc="negative control only: the workers' heterogeneity is sigma2 times this "
                                      "(the bound keeps sigma2)")},
    check=lambda prm: _check_floor(prm),
)
def urq_floor(params, rng, backend):
    """n workers quantize local gradients (D2): plateau = mean of |x_k - x*|^2 over K1 <= k <= K.

    ``lr_scale`` != 1 (negative control) runs at ``lr * lr_scale`` while the cell keeps ``lr``;
    ``sigma2_scale`` != 1 (negative control) draws workers ``sigma2_scale`` times more heterogeneous
    than the cell's ``sigma2``, which the bound is told.
    """
    q = _quantizer(params)
    p = make_problem("quadratic", n=params["n"], d=params["d"], L=params["L"], mu=params["mu"],
                     sigma2=params["sigma2"] * params["sigma2_scale"], e0=params["e0"], rotate=True, rng=rng)
    tr = compressed_gd(p, q, lr=params["lr"] * params["lr_scale"], steps=params["K"], mode="workers", rng=rng,
                       backend=backend)
    plateau = float(tr.dist2[0, params["K1"]:].mean())
    return [dict(metric="plateau", value=plateau, note=tr.notes()[0])]


@experiment(
    "delay_exact",
    params={**_Q,
            "quantizer": Param("str", default="none", choices=QUANTIZER_NAMES,
                               doc="URQ applied to the delayed gradient (none: plain delayed GD)"),
            "d": Param("int", default=5, low=1, doc="dimension of the quadratic"),
            "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
            "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="smallest curvature"),
            "tau": Param("int", default=4, low=0, high=64, doc="constant delay"),
            "steps": Param("int", default=2000, low=100, doc="iterations per probe at tau = 0"),
            "steps_per_tau": Param("int", default=500, low=0, doc="extra iterations per unit of tau"),
            "iters": Param("int", default=11, low=1, high=40, doc="bisection halvings (geometric)"),
            "delay": Param("str", default="constant", choices=("constant", "uniform"), keyed_at_default=False,
                           doc="negative control only: uniform draws delays in [0, tau] (the limits are for a "
                               "constant tau)"),
            "grad_scale": Param("int", default=1, low=1, keyed_at_default=False,
                                doc="negative control only: the gradient summed over this many workers with the "
                                    "same data where their mean is meant, so the steps see the curvature "
                                    "grad_scale * L while the cell (and the bound) keep L; 1 changes nothing")},
    check=_check_problem,
)
def delay_exact(params, rng, backend):
    r"""Measured stability threshold of delayed (compressed) GD on a quadratic, by geometric bisection.

    Runs :func:`simcomm.optim.async_compressed_gd` with one worker and a CONSTANT delay ``tau``,
    :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_{k-\tau}))`, on a diagonal quadratic with spectrum in
    ``[mu, L]``. A probe ``lr`` is stable when the run does not diverge and the mean of
    :math:`\|x_k - x^\star\|^2` over the last 10% of the ``K = steps + steps_per_tau * tau``
    iterations is at most its mean over iterations ``[0.4 K, 0.5 K)``: once the slowest mode dominates
    this is the sign of its growth rate, so the test does not depend on the start (unlike comparing with
    ``x_0``); a run that has decayed below 1e-20 of its start (rounding level) counts as stable. Near
    the threshold the dominant root moves off the unit circle at a rate of order
    :math:`L\,\delta\gamma` per step, and the other roots are at least :math:`\sim 1/\tau` inside it,
    so ``K`` of several hundred ``tau`` resolves a relative step error well below the bisection's.

    Every probe replays the SAME random stream (common random numbers: same quantizer noise), so
    stability is monotone in lr up to the dynamics. The initial bracket is
    ``[0.1/(L (tau + 1)), 4/L]``; after ``iters`` halvings its relative width is
    ``(40 (tau + 1)) ** (2 ** -iters) - 1`` (0.2% at tau = 0 to 0.4% at tau = 64 for iters = 11).

    Rows: ``lr_max`` = geometric midpoint of the final bracket (problem units); ``alpha`` (the URQ's
    second-moment factor, worst case over d) is a column for bounds that need it. ``delay = "uniform"``
    (negative control) draws each step's delay uniformly in ``[0, tau]`` instead; ``grad_scale = s``
    (negative control) runs on the quadratic s f, whose gradient is the sum of s identical workers'
    gradients (curvatures s mu to s L) while the row keeps ``L``.
    """
    q = _quantizer(params)
    tau = params["tau"]
    s = params["grad_scale"]
    # diagonal Hessian: Bernoulli keeps act on eigen-coordinates, the setting of the 2/(alpha L) limit
    p = make_problem("quadratic", n=1, d=params["d"], L=params["L"] * s, mu=params["mu"] * s, sigma2=0.0, rng=rng)
    g = largest_stable_async_step(p, q, params, tau, rng, decay=1.0)
    return [dict(metric="lr_max", value=g, alpha=float(q.alpha(p.d)))]


def largest_stable_async_step(p, q, params, tau: int, rng, *, decay: float) -> float:
    r"""The largest step of delayed (``q``-compressed) GD on ``p`` that still converges, by bisection.

    A run of ``params["steps"] + params["steps_per_tau"] * tau`` steps (``params["delay"]`` delays up to
    ``tau``, one stream drawn from ``rng`` and reused for every trial step) is stable when it did not
    diverge and the mean of :math:`\|x - x^\star\|^2` over its last tenth is at most ``decay`` times its mean
    over steps 0.4 K to 0.5 K, or below 1e-20 of the start (a run decayed to rounding level only jitters,
    whatever the windows' order). The bracket ``[0.1/(L (tau + 1)), 4/L]`` is halved ``params["iters"]``
    times (:func:`simcomm.optim.stable_step_bracket`); the result is its geometric midpoint.
    """
    K = params["steps"] + params["steps_per_tau"] * tau
    every = max(1, K // 100)
    stream = int(rng.integers(2**63))

    def stable(lr):
        tr = async_compressed_gd(p, q, lr=lr, steps=K, tau=tau, delay=params["delay"], record_every=every,
                                 rng=np.random.default_rng(stream))
        if tr.diverged_at[0] >= 0:
            return False
        d2 = tr.dist2[0]
        if not np.isfinite(d2).all():
            return False
        early = d2[(tr.step >= 0.4 * K) & (tr.step < 0.5 * K)].mean()
        late = d2[tr.step >= K - K // 10].mean()
        return bool(late <= decay * early or late <= 1e-20 * d2[0])

    lo, hi = stable_step_bracket(stable, 0.1 / (p.L * (tau + 1)), 4.0 / p.L, params["iters"])
    return math.sqrt(lo * hi) if math.isfinite(hi) and lo > 0 else (hi if lo == 0 else math.inf)


def second_moment_operator(c: float, tau: int, alpha: float, delay: str = "constant") -> np.ndarray:
    r"""Linear map of :math:`\mathbb E[z z^\top]` for one coordinate of delayed compressed GD (vectorised).

    One eigen-coordinate of :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_{k - \tau}))` with curvature
    :math:`\lambda`, under a quantizer that multiplies each coordinate by an independent factor
    :math:`m_k` with :math:`\mathbb E m_k = 1`, :math:`\mathbb E m_k^2 = \alpha` (Bernoulli
    sparsification: :math:`m_k = b_k/p`, :math:`\alpha = 1/p`), is
    :math:`e_{k+1} = e_k - c\,m_k e_{k-\tau}` with :math:`c = \gamma\lambda`. With the state
    :math:`z_k = (e_k, \dots, e_{k-\tau})`, :math:`z_{k+1} = S z_k - c\,m_k\,u\,v_{d_k}^\top z_k`
    (``S`` the shift that keeps :math:`e_k` and ages the rest, :math:`u = e_1`, :math:`v_d = e_{d+1}`),
    so :math:`M = \mathbb E[z z^\top]` obeys

    .. math:: M' = S M S^\top - c\,\mathbb E_d[S M v_d u^\top + u v_d^\top M S^\top]
              + c^2\alpha\,\mathbb E_d[(v_d^\top M v_d)\, u u^\top],

    exactly (the factor and the delay :math:`d_k` are independent of the past). Returned as the
    :math:`(\tau+1)^2` square matrix acting on ``vec(M)``. ``delay = "constant"``: :math:`d_k = \tau`;
    ``"uniform"``: :math:`d_k` uniform on ``0..tau`` (a negative control).

    Examples
    --------
    >>> second_moment_operator(0.5, 0, 4.0)   # tau = 0: 1 - 2c + alpha c^2
    array([[1.]])
    """
    m = tau + 1
    S = np.zeros((m, m))
    S[0, 0] = 1.0
    S[np.arange(1, m), np.arange(m - 1)] = 1.0
    T = np.kron(S, S)
    delays = [tau] if delay == "constant" else list(range(m))
    w = 1.0 / len(delays)
    for d in delays:
        E = np.zeros((m, m))
        E[0, d] = 1.0   # u v_d^T
        T -= w * c * (np.kron(E, S) + np.kron(S, E))
        T += w * c * c * alpha * np.kron(E, E)
    return T


def _spectral_radius(T: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(T))))


def _ms_cost(p):
    """(seconds, bytes): ~45 dense eigenvalue problems of size (tau + 1)^2 (about 3e-9 n^3 s each)."""
    n = (p["tau"] + 1) ** 2
    return 45 * (3e-9 * n**3 + 1e-4), 3 * 8 * n * n


@experiment(
    "delay_ms_threshold",
    deterministic=True,
    cost=_ms_cost,
    params={**_Q,
            "quantizer": Param("str", default="bernoulli", choices=("bernoulli",),
                               doc="Bernoulli sparsification (independent factor per coordinate)"),
            "d": Param("int", default=5, low=1, doc="dimension of the quadratic"),
            "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
            "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="smallest curvature"),
            "tau": Param("int", default=4, low=0, high=40, doc="constant delay"),
            "delay": Param("str", default="constant", choices=("constant", "uniform"),
                           doc="negative control only: uniform draws each step's delay in [0, tau]")},
    check=_check_problem,
)
def delay_ms_threshold(params, rng, backend):
    r"""Largest step at which delayed compressed GD is stable in MEAN SQUARE, from its exact second moments.

    On a diagonal quadratic with spectrum in ``[mu, L]`` and Bernoulli sparsification (keep
    probability ``p``, the compressor's :math:`\alpha = \mathbb E m^2`, unbiased), the coordinates
    decouple and each follows the scalar recursion of :func:`second_moment_operator` with
    :math:`c = \gamma\lambda`; :math:`\mathbb E\|x_k - x^\star\|^2` converges for every start iff the
    operator's spectral radius is below 1 for every eigenvalue, and since the radius depends on
    :math:`\gamma\lambda` only, the binding coordinate is :math:`\lambda = L`. The threshold is found
    by bisection on the radius to a relative 1e-12; ``lr_max`` is the STABLE end of the final bracket
    (so it never exceeds the true threshold by more than rounding). No sampling: what a finite
    Monte Carlo average of runs cannot give (near the threshold the second moment is carried by rare
    paths, so an average over runs looks stable above it).

    Rows: ``lr_max`` (problem units), with the compressor's ``alpha`` as a column.
    """
    del backend
    q = _quantizer(params)
    p = make_problem("quadratic", n=1, d=params["d"], L=params["L"], mu=params["mu"], sigma2=0.0, rng=rng)
    a = float(q.alpha(p.d))
    tau = params["tau"]

    def stable(lr):
        return _spectral_radius(second_moment_operator(lr * p.L, tau, a, params["delay"])) < 1.0

    lo, hi = stable_step_bracket(stable, 1e-3 / p.L, 4.0 / p.L, 1)
    while hi - lo > 1e-12 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if stable(mid) else (lo, mid)
    return [dict(metric="lr_max", value=lo, alpha=a)]


def _b_step(alpha, L, tau):
    # the seed summary's condition [B] with L -> alpha L: lr = 2 / [alpha L (1 + sqrt(1 + 8 tau (tau+1)))]
    return 2.0 / (alpha * L * (1.0 + math.sqrt(1.0 + 8.0 * tau * (tau + 1))))


@experiment(
    "iag_vs_gd",
    columns=("method",),
    params={**_Q, **_PROBLEM,
            "n": Param("int", default=8, low=1, doc="workers", former="N"),
            "eps": Param("float", default=1e-2, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) / (f(x0) - f*)"),
            "max_steps": Param("int", default=20000, low=1, doc="iteration budget per method"),
            "heterogeneous": Param("bool", default=True, doc="different data on each worker"),
            "gd_lr_scale": Param("float", default=1.0, low=0.0, low_open=True, keyed_at_default=False,
                                 doc="negative control only: synchronous GD runs at 1/(alpha L) times this"),
            "iag_at_gd_step": Param("bool", default=False, keyed_at_default=False,
                                    doc="negative control only: IAG runs at GD's step 1/(alpha L), the staleness "
                                        "tau = n - 1 ignored; false = the seed condition's step")},
    check=_check_problem,
)
def iag_vs_gd(params, rng, backend):
    """Iterations and uplink bits to reach (f - f*) <= eps (f(x0) - f*): sync compressed GD vs compressed IAG.

    Step sizes: GD lr = 1/(alpha L) (D1); IAG (cyclic and random order) the seed summary's condition
    with tau = n - 1 and L -> alpha L. tau = n - 1 is the staleness of cyclic order only: random order
    has unbounded staleness, so its run uses the same step OUTSIDE the condition (a step the
    condition does not cover, reported for comparison). Not reaching eps within ``max_steps``
    gives ``nan`` with a note (so an order claim cannot pass on it). ``gd_lr_scale`` != 1 (negative
    control) multiplies GD's step; ``iag_at_gd_step`` (negative control) gives both IAG orders GD's
    unscaled step 1/(alpha L), as if the aggregated gradient were fresh.
    """
    q = _quantizer(params)
    n = params["n"]
    kw = dict(rotate=True) if params["problem"] == "quadratic" else {}
    if params["problem"] == "quadratic":
        kw["sigma2"] = 1.0
    p = make_problem(params["problem"], n=n, d=params["d"], L=params["L"], mu=params["mu"],
                     heterogeneous=params["heterogeneous"], rng=rng, **kw)
    a = q.alpha(p.d)
    K = params["max_steps"]
    rows = []
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    kw = dict(stop_gap=stop, rng=rng, backend=backend)
    iag_lr = 1.0 / (a * p.L) if params["iag_at_gd_step"] else _b_step(a, p.L, n - 1)
    runs = {
        "gd": lambda: compressed_gd(p, q, lr=1.0 / (a * p.L) * params["gd_lr_scale"], steps=K, mode="workers", **kw),
        "iag_cyclic": lambda: compressed_iag(p, q, lr=iag_lr, steps=K, order="cyclic", **kw),
        "iag_random": lambda: compressed_iag(p, q, lr=iag_lr, steps=K, order="random", **kw),
    }
    for method, run in runs.items():
        tr = run()
        it = float(tr.first_below(stop)[0])
        reached = math.isfinite(it)
        note = tr.notes()[0] or ("" if reached else f"did not reach eps in {K} steps")
        bits = float(tr.bits[int(it)]) if reached else math.nan
        rows += [dict(metric="iterations_to_eps", value=it, method=method, note=note),
                 dict(metric="bits_to_eps", value=bits, method=method, note=note),
                 dict(metric="final_gap_ratio", value=float(tr.f_gap[0, -1] / tr.f_gap[0, 0]), method=method,
                      note=note)]
    return rows


def _check_bits(params):
    names = [t.strip() for t in params["quantizers"].split(",")]
    allowed = [n for n in QUANTIZER_NAMES if n != "stochastic_round"]  # no alpha, so no step 1/(alpha L)
    if any(t not in allowed for t in names) or len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"quantizers must list >= 2 distinct names from {', '.join(allowed)}, "
                         f"got {params['quantizers']!r}")
    if params["mu"] > params["L"]:
        raise ValueError(f"mu = {params['mu']} > L = {params['L']}; use mu <= L")
    if "rand_k" in names and params["k"] > params["d"]:
        raise ValueError(f"k = {params['k']} > d = {params['d']}; use k <= d")


@experiment(
    "urq_bits",
    columns=("quantizer",),
    params={**{k: v for k, v in _Q.items() if k != "quantizer"}, **_PROBLEM,
            "quantizers": Param("str", default="ternary,qsgd,none,bernoulli",
                                doc="comma-separated URQs compared in one cell (stochastic_round has no alpha)"),
            "eps": Param("float", default=1e-3, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) / (f(x0) - f*)"),
            "max_steps": Param("int", default=50000, low=1, doc="iteration budget"),
            "dense_ternary": Param("bool", default=False, keyed_at_default=False,
                                   doc="negative control only: count ternary messages as dense float32 (32 bits "
                                       "per entry) instead of their code"),
            "step": _STEP},
    check=_check_bits,
)
def urq_bits(params, rng, backend):
    """Bits to reach (f - f*) <= eps (f(x0) - f*) with single-stream compressed GD at lr = 1/(alpha L).

    Every quantizer of ``quantizers`` runs in this ONE cell on the same problem and the same random
    stream (common random numbers), so rows with different ``quantizer`` values are paired per
    replicate. Metrics: ``bits_to_eps`` and ``iterations_to_eps``, one row each per quantizer. The D1
    prediction K(eps) b(Q) is ``theory.urq.bits_to_eps`` (simcomm does not import theory).
    """
    p = make_problem(params["problem"], n=1, d=params["d"], L=params["L"], mu=params["mu"], rng=rng)
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    stream = int(rng.integers(2**63))
    rows = []
    for name in (t.strip() for t in params["quantizers"].split(",")):
        q = _quantizer({**params, "quantizer": name})
        a = q.alpha(p.d)
        tr = compressed_gd(p, q, lr=_d1_step(params, a, p.L), steps=params["max_steps"], mode="aggregate",
                           stop_gap=stop,
                           rng=np.random.default_rng(stream), backend=backend)
        it = float(tr.first_below(stop)[0])
        reached = math.isfinite(it)
        note = tr.notes()[0] or ("" if reached else f"did not reach eps in {params['max_steps']} steps")
        bits = 32.0 * p.d if (params["dense_ternary"] and name == "ternary") else q.bits(p.d)
        rows += [dict(metric="bits_to_eps", value=it * bits if reached else math.nan, quantizer=name, note=note),
                 dict(metric="iterations_to_eps", value=it, quantizer=name, note=note)]
    return rows
