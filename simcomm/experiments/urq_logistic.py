"""Delayed and incremental compressed gradients beyond quadratics (papers/urq_delay.md; bounds in theory/urq.py).

Regularised logistic regression on the packaged scikit-learn data (``simcomm.models.logistic``): each f_i
is ``L``-smooth with ``L`` computed from the data (largest eigenvalue of the shard's scaled Gram matrix,
over four, plus ``l2``), ``mu = l2``, and ``f*`` from Newton's method. Not a quadratic: its Hessian
changes with x and its gradient saturates away from the data.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.urq import _Q, QUANTIZER_NAMES, _check_k, _quantizer, largest_stable_async_step
from simcomm.models import make_problem
from simcomm.optim import (
    DELAY_MODELS,
    IAG_ORDERS,
    Transform,
    async_compressed_gd,
    chain,
    compressed_gd,
    compressed_iag,
    descend,
    iag_memory,
    run,
    scale_by_lr,
)

_LOGISTIC = {
    "problem": Param("str", default="logistic_breast_cancer", choices=("logistic_breast_cancer", "logistic_digits"),
                     doc="regularised logistic regression on a packaged scikit-learn data set"),
    "l2": Param("float", default=0.1, low=0.0, low_open=True, doc="ridge weight (= mu)"),
    "n": Param("int", default=2, low=1, doc="workers"),
    "heterogeneous": Param("bool", default=False,
                           doc="label-sorted shards per worker (false: every worker holds the whole set)"),
}


def seed_condition(tau: int, L: float) -> float:
    """The seed summary's step condition 2/[L(1 + sqrt(1 + 8 tau (tau + 1)))] (theory.urq.delay_stepsize)."""
    return 2.0 / (L * (1.0 + math.sqrt(1.0 + 8.0 * tau * (tau + 1))))


def _tail(tr, K: int):
    """(tail_drop, note): (f - f*)(x_K) / (f - f*)(x_{K/2}); inf when the run diverged or is not finite."""
    g = tr.f_gap[0]
    h = int(np.searchsorted(tr.step, K // 2))
    note = tr.notes()[0]
    if tr.diverged_at[0] >= 0 or not (math.isfinite(g[-1]) and math.isfinite(g[h])) or g[h] <= 0:
        return math.inf, note or "diverged"
    return max(float(g[-1]), 0.0) / float(g[h]), note


def _horizon(mu: float, lr: float, decades: float) -> int:
    # K = 2 decades ln 10 / (mu lr): the witness rate (1 - mu lr / 2)^2 drops f - f* by at least
    # 10**decades over the last K/2 steps ((1 - x/2)^K <= exp(-x K/2))
    return 2 * math.ceil(decades * math.log(10.0) / (mu * lr))


@experiment(
    "delay_logistic_rate",
    params={**_Q, **_LOGISTIC,
            "tau": Param("int", default=4, low=0, high=64, doc="delay bound"),
            "delay": Param("str", default="constant", choices=DELAY_MODELS, doc="delay model"),
            "c": Param("float", default=1.0, low=0.0, low_open=True, high=4.0,
                       doc="step = c x the seed condition with L -> alpha L (the claim's domain is c <= 1)"),
            "decades": Param("float", default=1.0, low=0.0, low_open=True, high=10.0,
                             doc="the horizon gives the witness rate this many decades over its second half")},
    check=_check_k,
)
def delay_logistic_rate(params, rng, backend):
    r"""Delayed URQ-compressed GD on logistic regression at ``c`` x the seed condition: the tail drop.

    Runs :func:`simcomm.optim.async_compressed_gd` with ``n`` workers,
    :math:`x_{k+1} = x_k - \gamma\frac1n\sum_i Q_i(\nabla f_i(x_{k-\tau_i(k)}))`, delays ``delay``
    (constant :math:`\tau`, uniform on :math:`0..\tau`, or the greedy adversary), at
    :math:`\gamma = c\cdot 2/[\alpha L(1+\sqrt{1+8\tau(\tau+1)})]`: the seed condition with
    :math:`L \to \alpha L`, :math:`\alpha` the URQ's worst-case second-moment factor (1 for ``none``).
    The horizon is :math:`K = 2\lceil \mathrm{decades}\,\ln 10/(\mu\gamma)\rceil`.

    Row ``tail_drop`` = :math:`(f(x_K) - f^\star)/(f(x_{K/2}) - f^\star)` (``inf`` if the run diverged),
    with columns ``mu``, ``lr`` and ``tail_steps`` (:math:`K/2`) for the witness bound
    ``theory.urq.linear_tail_drop``.
    """
    q = _quantizer(params)
    p = make_problem(params["problem"], n=params["n"], heterogeneous=params["heterogeneous"], l2=params["l2"])
    a = float(q.alpha(p.d))
    lr = params["c"] * seed_condition(params["tau"], a * p.L)
    K = _horizon(p.mu, lr, params["decades"])
    tr = async_compressed_gd(p, q, lr=lr, steps=K, tau=params["tau"], delay=params["delay"],
                             record_every=max(1, K // 200), rng=rng, backend=backend)
    drop, note = _tail(tr, K)
    return [dict(metric="tail_drop", value=drop, mu=p.mu, lr=lr, tail_steps=K // 2, note=note)]


# compressed IAG on the logistic problem: the workers, the refresh order and the step's multiple
_IAG = {
    "n": Param("int", default=4, low=1, doc="workers (components of the aggregated gradient)"),
    "order": Param("str", default="cyclic", choices=IAG_ORDERS, doc="which worker refreshes per step"),
    "c": Param("float", default=1.0, low=0.0, low_open=True, high=4.0,
               doc="step = c x the seed condition with tau = n - 1, L -> alpha L"),
}


@experiment(
    "iag_logistic_rate",
    params={**_Q, **_LOGISTIC, **_IAG,
            "decades": Param("float", default=1.0, low=0.0, low_open=True, high=10.0,
                             doc="the horizon gives the witness rate this many decades over its second half")},
    check=_check_k,
)
def iag_logistic_rate(params, rng, backend):
    r"""Compressed IAG on logistic regression: the tail drop of f - f* (as :func:`delay_logistic_rate`).

    :func:`simcomm.optim.compressed_iag`, one worker refreshing its compressed gradient per step
    (``cyclic``: staleness exactly ``n - 1``; ``random``: unbounded), at ``c`` x the seed condition with
    :math:`\tau = n - 1` and :math:`L \to \alpha L`. Rows as :func:`delay_logistic_rate`.
    """
    q = _quantizer(params)
    p = make_problem(params["problem"], n=params["n"], heterogeneous=params["heterogeneous"], l2=params["l2"])
    a = float(q.alpha(p.d))
    lr = params["c"] * seed_condition(params["n"] - 1, a * p.L)
    K = _horizon(p.mu, lr, params["decades"])
    tr = compressed_iag(p, q, lr=lr, steps=K, order=params["order"], record_every=max(1, K // 200), rng=rng,
                        backend=backend)
    drop, note = _tail(tr, K)
    return [dict(metric="tail_drop", value=drop, mu=p.mu, lr=lr, tail_steps=K // 2, note=note)]


@experiment(
    "delay_logistic_threshold",
    params={**_Q, **_LOGISTIC,
            "quantizer": Param("str", default="none", choices=_Q["quantizer"].choices,
                               doc="URQ on the delayed gradients (none: exact)"),
            "n": Param("int", default=1, low=1, doc="workers"),
            "tau": Param("int", default=4, low=0, high=64, doc="delay bound"),
            "delay": Param("str", default="constant", choices=DELAY_MODELS, doc="delay model"),
            "steps": Param("int", default=2000, low=100, doc="iterations per probe at tau = 0"),
            "steps_per_tau": Param("int", default=500, low=0, doc="extra iterations per unit of tau"),
            "iters": Param("int", default=10, low=1, high=40, doc="bisection halvings (geometric)"),
            "grad_scale": Param("int", default=1, low=1, keyed_at_default=False,
                                doc="negative control only: the gradient summed over this many workers with the "
                                    "same data where their mean is meant, so the steps see the curvature "
                                    "grad_scale * L while the row (and the bound) keep L; 1 changes nothing")},
    check=_check_k,
    # exact gradients and constant delays draw nothing: the bisection is a deterministic recursion
    deterministic=lambda p: p["quantizer"] == "none" and p["delay"] == "constant",
)
def delay_logistic_threshold(params, rng, backend):
    r"""Measured stability threshold of delayed (compressed) GD on logistic regression, by geometric bisection.

    A probe ``lr`` runs :func:`simcomm.optim.async_compressed_gd` for
    ``K = steps + steps_per_tau * tau`` iterations; it is stable when the run does not diverge and the
    mean of :math:`\|x_k - x^\star\|^2` over the last 10% is at most HALF its mean over ``[0.4K, 0.5K)``
    (or below 1e-20 of the start: rounding). On logistic regression an unstable step need not blow up
    (the logistic gradient saturates, leaving a bounded oscillation), so "not decaying" is what counts
    as unstable; near the threshold a slowly decaying run also fails the test, so the measured
    threshold is biased LOW (against a lower-bound claim). Every probe replays the same random stream.
    Initial bracket ``[0.1/(L (tau + 1)), 4/L]``; relative width after ``iters`` halvings
    ``(40 (tau + 1)) ** (2 ** -iters) - 1`` (0.4% at tau = 0 to 0.7% at tau = 16 for 10).

    Rows: ``lr_max`` (geometric midpoint of the final bracket), with the problem's ``L``, ``mu`` and the
    URQ's ``alpha`` as columns (the bounds take them from the row). ``grad_scale = s`` (negative control)
    runs on :math:`s f`, the gradient summed over ``s`` identical workers (curvatures up to :math:`sL`,
    bracket scaled with them), while the row keeps the problem's ``L`` and ``mu``.
    """
    q = _quantizer(params)
    tau = params["tau"]
    p = make_problem(params["problem"], n=params["n"], heterogeneous=params["heterogeneous"], l2=params["l2"])
    run_p = p if params["grad_scale"] == 1 else _scaled(p, params["grad_scale"])
    g = largest_stable_async_step(run_p, q, params, tau, rng, decay=0.5)
    return [dict(metric="lr_max", value=g, L=p.L, mu=p.mu, alpha=float(q.alpha(p.d)))]


def _scaled(p, s: int):
    """The problem ``s f``: every gradient (and value) summed over ``s`` identical workers instead of averaged."""
    return dataclasses.replace(p, L=s * p.L, mu=s * p.mu, f_star=s * p.f_star, sigma2_star=s * s * p.sigma2_star,
                               grad=lambda X, idx: s * p.grad(X, idx), value=lambda X: s * p.value(X),
                               full_grad=lambda X: s * p.full_grad(X))


def _iterations_to_eps(tr, stop: float, horizon: int) -> tuple[float, str]:
    """(first recorded step with f - f* <= stop, note); ``inf`` with a note when the run misses it by ``horizon``."""
    it = float(tr.first_below(stop)[0])
    note = tr.notes()[0]
    if math.isfinite(it):
        return it, note
    return math.inf, note or f"did not reach eps in {horizon} steps"


def _gd_iterations(p, stop: float, cap: int = 1_000_000) -> int:
    """Iterations of exact, undelayed GD at the step 1/L to f - f* <= stop: the scale K_eps(0) of both claims."""
    tr = compressed_gd(p, _quantizer({**{k: v.default for k, v in _Q.items()}, "quantizer": "none"}),
                       lr=1.0 / p.L, steps=cap, mode="aggregate", stop_gap=stop, rng=0)
    it = tr.first_below(stop)[0]
    if not math.isfinite(it):
        raise RuntimeError(f"exact GD at 1/L did not reach the target in {cap} steps")
    return int(it)


#: how far past the bound a run is followed: a miss by HORIZON x the bound is a violation of any margin below it
HORIZON = 4.0


def _compressor_settings(entry: str) -> tuple[str, dict]:
    """``"qsgd:s=2"`` -> ("qsgd", {"s": 2}); ``"ternary"`` -> ("ternary", {})."""
    name, _, rest = entry.strip().partition(":")
    kw = {}
    for item in filter(None, rest.split(";")):
        key, _, value = item.partition("=")
        kw[key.strip()] = int(value) if key.strip() in ("s", "k") else float(value)
    return name.strip(), kw


def _check_compressors(params):
    entries = [e.strip() for e in params["compressors"].split(",") if e.strip()]
    if len(entries) < 1 or len(set(entries)) != len(entries):
        raise ValueError(f"compressors must list distinct entries, got {params['compressors']!r}")
    allowed = [n for n in QUANTIZER_NAMES if n != "stochastic_round"]  # no relative variance: no step 1/(alpha L)
    for e in entries:
        name, kw = _compressor_settings(e)
        if name not in allowed or not set(kw) <= {"s", "k", "p"}:
            raise ValueError(f"compressor entry {e!r}: use a name from {', '.join(allowed)}, optionally "
                             "followed by ':s=..' (qsgd levels), ':k=..' (rand_k) or ':p=..' (bernoulli)")


_UNSCALED_STEP = Param("str", default="alpha", choices=("alpha", "uncompressed"), keyed_at_default=False,
                       doc="negative control only: uncompressed runs every quantizer at the plain-GD step 1/L "
                           "(the step not scaled by 1/(1 + beta))")


@experiment(
    "urq_logistic_beta_iters",
    columns=("quantizer",),
    params={"problem": _LOGISTIC["problem"], "l2": _LOGISTIC["l2"],
            "compressors": Param("str", default="qsgd:s=1,qsgd:s=2,qsgd:s=4,qsgd:s=8,ternary,natural,"
                                                "rand_k:k=16,rand_k:k=8,rand_k:k=4",
                                 doc="comma-separated unbiased compressors run in one cell, each 'name' or "
                                     "'name:s=..' / 'name:k=..'"),
            "eps": Param("float", default=1e-4, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) <= eps (f(x0) - f*)"),
            "step": _UNSCALED_STEP},
    check=_check_compressors,
)
def urq_logistic_beta_iters(params, rng, backend):
    r"""Iterations to eps of URQ-compressed GD at the step :math:`1/((1+\beta)L)`, against the variance factor.

    Single-stream compressed GD, :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_k))`, on regularised logistic
    regression (one worker, the whole data set), at :math:`\gamma = 1/(\alpha L)` with
    :math:`\alpha = 1 + \beta` the compressor's worst-case second-moment factor (``Compressor.alpha(d)``).
    Every compressor of ``compressors`` runs in this ONE cell from the same random stream (common random
    numbers). ``K0`` is the iteration count of exact GD at :math:`1/L` to the same target (deterministic).

    Rows ``iterations_to_eps`` per compressor (``quantizer`` = its entry): the first step with
    :math:`f(x_k) - f^\star \le \varepsilon (f(x_0) - f^\star)`, ``inf`` (with a note) when the run misses it
    within ``HORIZON`` x :math:`\alpha K_0` steps; columns ``alpha``, ``beta``, ``K0`` for the bound
    ``theory.urq.iterations_beta`` (and ``alpha_shown``, alpha to 3 digits, for a figure's axis).
    ``step = "uncompressed"`` (negative control) runs every compressor at :math:`1/L`.
    """
    p = make_problem(params["problem"], n=1, heterogeneous=False, l2=params["l2"])
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    K0 = _gd_iterations(p, stop)
    stream = int(rng.integers(2**63))
    rows = []
    for entry in (e.strip() for e in params["compressors"].split(",") if e.strip()):
        name, kw = _compressor_settings(entry)
        q = _quantizer({**{k: v.default for k, v in _Q.items()}, **kw, "quantizer": name})
        a, b = float(q.alpha(p.d)), float(q.beta(p.d))
        lr = 1.0 / (p.L if params["step"] == "uncompressed" else a * p.L)
        H = math.ceil(HORIZON * a * K0)
        tr = compressed_gd(p, q, lr=lr, steps=H, mode="aggregate", stop_gap=stop,
                           rng=np.random.default_rng(stream), backend=backend)
        it, note = _iterations_to_eps(tr, stop, H)
        # alpha_shown: 1 + beta to 3 significant digits, for a figure's axis only (the bound takes alpha)
        rows.append(dict(metric="iterations_to_eps", value=it, quantizer=entry, alpha=a, beta=b, K0=float(K0),
                         alpha_shown=float(f"{a:.3g}"), note=note))
    return rows


def _frozen_iag(q, lr: float, order: str):
    """Compressed IAG whose aggregated memory is never refreshed (a bug): every step uses the table built at x0."""
    memory = iag_memory(q, order)

    def update(u, state, x, ctx):
        return state.total / ctx.problem.n, state

    return descend(chain(Transform(memory.init, update), scale_by_lr(lr)),
                   bits=lambda k, p: (p.n + k) * q.bits(p.d), name="iag_frozen")


@experiment(
    "iag_logistic_iters",
    params={**_Q, **_LOGISTIC, **_IAG,
            "eps": Param("float", default=1e-4, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) <= eps (f(x0) - f*)"),
            "step": Param("str", default="seed", choices=("seed", "no_delay"), keyed_at_default=False,
                          doc="negative control only: no_delay runs at 1/(alpha L), the step of tau = 0, ignoring "
                              "the staleness n - 1"),
            "memory": Param("str", default="refreshed", choices=("refreshed", "frozen"), keyed_at_default=False,
                            doc="negative control only: frozen never refreshes the server's aggregate after the "
                                "first messages (a bug)")},
    check=_check_k,
)
def iag_logistic_iters(params, rng, backend):
    r"""Iterations to eps of compressed IAG at the seed step, against the components ``n`` and the URQ.

    :func:`simcomm.optim.compressed_iag` (one worker refreshes its compressed gradient in the server's
    table per step; ``cyclic`` or ``random`` order) at :math:`\gamma = c\cdot 2/[\alpha L(1+\sqrt{1+8\tau
    (\tau+1)})]`, :math:`\tau = n - 1`. Row ``iterations_to_eps``: the first step with
    :math:`f - f^\star \le \varepsilon (f(x_0) - f^\star)`, ``inf`` (with a note) when missed within
    ``HORIZON`` x the bound's prediction :math:`K_0/(L\gamma)`; columns ``K0`` (exact GD at :math:`1/L`
    on the same problem), ``alpha``, ``tau`` for ``theory.urq.iterations_iag``.
    """
    q = _quantizer(params)
    n = params["n"]
    p = make_problem(params["problem"], n=n, heterogeneous=params["heterogeneous"], l2=params["l2"])
    a = float(q.alpha(p.d))
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    K0 = _gd_iterations(p, stop)
    lr = params["c"] * seed_condition(n - 1, a * p.L)
    H = math.ceil(HORIZON * K0 / (p.L * lr))
    run_lr = 1.0 / (a * p.L) if params["step"] == "no_delay" else lr
    if params["memory"] == "frozen":
        tr = run(p, _frozen_iag(q, run_lr, params["order"]), H, rng=rng, stop_gap=stop)
    else:
        tr = compressed_iag(p, q, lr=run_lr, steps=H, order=params["order"], stop_gap=stop, rng=rng,
                            backend=backend)
    it, note = _iterations_to_eps(tr, stop, H)
    return [dict(metric="iterations_to_eps", value=it, K0=float(K0), alpha=a, tau=n - 1, L=p.L, note=note)]
