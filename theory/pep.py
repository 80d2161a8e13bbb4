r"""Tight worst cases by performance estimation (PEP): compressed GD and delayed GD on smooth strongly convex functions.

A *performance estimation problem* (Drori & Teboulle 2014; Taylor, Hendrickx & Glineur 2017) asks for the
worst value of a performance measure after ``N`` steps of a method, over every function of a class and every
start satisfying an initial condition. For :math:`L`-smooth :math:`\mu`-strongly convex functions the
interpolation conditions of Taylor et al. make it an exact semidefinite program (SDP) in the Gram matrix of the
iterates, gradients and directions (and the function values): its optimal value is attained by some function of
the class, so it is the **tight** bound, not a sufficient one. PEPit (Goujaud, Moucer, Glineur, Hendrickx,
Taylor, Dieuleveut; the ``pep`` extra, PyPI ``pepit``) writes the SDP; cvxpy with Clarabel solves it (SCS when
Clarabel fails).

Every number here is **[N]**: computed here by the SDP and checked against closed forms where one is known
(tests/test_pep.py); none is any of the four papers' theorems. The bounds are registered with ``paper=PAPER``
(performance estimation), not under a seed paper.

Solved problems are cached by their parameters: the shipped file ``theory/_pep_cache.json`` holds every problem
the ``pep.*`` claims use (full and quick grids, controls), with its solver status and solve time, so the claims
run without PEPit. A problem not in the cache is solved when PEPit is installed (and kept in memory; set the
environment variable ``SIMCOMM_PEP_CACHE`` to a JSON file to keep it there too); without PEPit it is a one-line
error. A solve whose status is not ``optimal`` (e.g. ``optimal_inaccurate``) is recorded with its status and
never used as a bound: the bound is then ``nan`` (the claim's cell is ill-posed, with the reason).

Regenerate the shipped cache (maintainers, PEPit installed) with
``SIMCOMM_PEP_CACHE=theory/_pep_cache.json simcomm check pep --full --controls``.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from theory._bound import bound

__all__ = [
    "PEPResult",
    "solve_inexact_gd",
    "solve_delay_certified",
    "compressed_gd_rate",
    "compressed_gd_rate_attained",
    "inexact_gd_rate_closed_form",
    "compressed_gd_rate_descent_lemma",
    "delay_step_certified",
    "cache_key",
    "lookup",
]

PAPER = "pep"
_SHIPPED = Path(__file__).with_name("_pep_cache.json")
#: a solve is used only with this status (cvxpy's name); anything else is recorded and reported
OK = "optimal"
#: largest number of method steps in one SDP (PEP problems of up to 4 iterations solve in well under a second)
MAX_STEPS = 4


@dataclass(frozen=True)
class PEPResult:
    """A solved (or cached) performance estimation problem.

    Attributes
    ----------
    value : float
        The worst-case value (``nan`` when ``status`` is not ``"optimal"``).
    status : str
        The solver's status (cvxpy's words: ``optimal``, ``optimal_inaccurate``, ``infeasible``, ...),
        ``"optimal"`` for a bisection only when every solve that decided it was optimal.
    seconds : float
        Wall-clock time of the solve(s) when it was computed.
    solver : str
        The SDP solver that produced it (``CLARABEL`` or ``SCS``).
    extra : dict
        Problem-specific outputs (the worst-case instance, the bisection's bracket, ...).
    """

    value: float
    status: str
    seconds: float
    solver: str
    extra: dict = field(default_factory=dict)


def cache_key(problem: str, **params) -> str:
    """Canonical cache key: the problem name and its parameters, numbers to 12 significant digits.

    Examples
    --------
    >>> cache_key("inexact_gd", L=1, mu=0.1, delta=0.25, lr=1.0, n=1)
    'inexact_gd|L=1|delta=0.25|lr=1|mu=0.1|n=1'
    """
    parts = [f"{k}={float(v):.12g}" for k, v in sorted(params.items())]
    return "|".join([problem, *parts])


_MEMORY: dict[str, dict] = {}
_LOADED: dict[str, dict] = {}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"PEP cache {path} cannot be read ({exc}); delete it or fix its JSON") from None


def _cache() -> dict:
    if not _LOADED:
        _LOADED.update(_read(_SHIPPED))
        extra = os.environ.get("SIMCOMM_PEP_CACHE")
        if extra and Path(extra).resolve() != _SHIPPED.resolve():
            _LOADED.update(_read(Path(extra)))
    return _LOADED


def lookup(key: str) -> PEPResult | None:
    """The cached result for ``key`` (shipped file, ``SIMCOMM_PEP_CACHE``, this process), or ``None``."""
    entry = _MEMORY.get(key) or _cache().get(key)
    if entry is None:
        return None
    value = entry["value"] if entry["status"] == OK else math.nan
    return PEPResult(float(value), entry["status"], float(entry["seconds"]), entry["solver"],
                     dict(entry.get("extra", {})))


def _store(key: str, res: PEPResult) -> None:
    entry = {"value": res.value if math.isfinite(res.value) else None, "status": res.status,
             "seconds": round(res.seconds, 4), "solver": res.solver, "extra": res.extra}
    _MEMORY[key] = entry
    target = os.environ.get("SIMCOMM_PEP_CACHE")
    if target:
        path = Path(target)
        data = _read(path)
        data[key] = entry
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
        tmp.replace(path)  # atomic: a reader never sees a torn file


def _pepit():
    """PEPit's modules, imported lazily (the ``pep`` extra), or a one-line error naming the missing problem."""
    try:
        import PEPit
        import PEPit.functions
        import PEPit.primitive_steps
    except ImportError:
        return None
    return PEPit


def _missing(key: str) -> ValueError:
    return ValueError(f"PEP problem {key!r} is not in the shipped cache and PEPit is not installed; "
                      "install it with: pip install 'simcomm[pep]'")


def _solve(problem) -> tuple[float, str, str]:
    """Solve a PEPit problem with Clarabel, falling back to SCS; ``(dual value, status, solver)``."""
    import contextlib
    import io
    import warnings

    last = (math.nan, "solver_error", "CLARABEL")
    for solver in ("CLARABEL", "SCS"):
        try:
            # PEPit prints its feasibility checks even at verbose=0; cvxpy warns on inaccurate solutions:
            # both are captured, the status below says the same thing in one word
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = problem.solve(wrapper="cvxpy", solver=solver, verbose=0)
        except Exception:  # noqa: BLE001 (cvxpy.error.SolverError and numerical failures inside the solver)
            last = (math.nan, "solver_error", solver)
            continue
        status = str(problem.wrapper.prob.status)
        last = (float(value) if value is not None else math.nan, status, solver)
        if status == OK:
            return last
    return last


def _check_class(L: float, mu: float) -> None:
    if not (0 < mu <= L < math.inf):
        raise ValueError(f"mu = {mu!r}, L = {L!r} are not allowed; use 0 < mu <= L")


def solve_inexact_gd(L: float, mu: float, delta: float, lr: float, n: int = 1) -> PEPResult:
    r"""Worst case of ``n`` steps of GD with a relative inexact direction, by PEP (cached).

    **The SDP.** Over every :math:`L`-smooth :math:`\mu`-strongly convex :math:`f` (any dimension) and every
    start with :math:`f(x_0) - f_\star \le 1`, maximise :math:`f(x_n) - f_\star` where
    :math:`x_{t+1} = x_t - \gamma d_t` and :math:`\|d_t - \nabla f(x_t)\|^2 \le \varepsilon^2\|\nabla f(x_t)\|^2`,
    :math:`\varepsilon^2 = 1 - \delta`. A deterministic :math:`\delta`-compressor
    (:math:`\|C(v) - v\|^2 \le (1-\delta)\|v\|^2`, e.g. top-k with :math:`\delta = k/d`) gives exactly such a
    direction, and every such direction is a :math:`\delta`-compressor of the gradient (e.g.
    :math:`C(v) = (1 \mp \varepsilon)v`), so this is the tight worst case of compressed GD over all
    :math:`\delta`-compressors. Variables: the Gram matrix of :math:`(x_0 - x_\star, \nabla f(x_t), d_t)` and
    the values :math:`f(x_t)`; constraints: the smooth strongly convex interpolation inequalities at
    :math:`\{x_\star, x_0, \dots, x_{n-1}\}`, the ``n`` inexactness inequalities and the initial condition.

    Returns
    -------
    PEPResult
        ``value``: the worst-case ratio :math:`(f(x_n) - f_\star)/(f(x_0) - f_\star)`; for ``n = 1``
        ``extra`` holds the worst-case instance read off the Gram matrix: the curvature
        ``h`` :math:`= \|g_0\|^2/\langle g_0, x_0 - x_\star\rangle`, the direction's component along the
        gradient ``c`` :math:`= \langle d_0, g_0\rangle/\|g_0\|^2` and its orthogonal part
        ``perp`` :math:`= \|d_0 - c g_0\|/\|g_0\|` (a 1-D quadratic with :math:`d = c\,g` when ``perp`` ~ 0).
    """
    _check_class(L, mu)
    if not (0 < delta <= 1):
        raise ValueError(f"delta = {delta!r} is not allowed; use 0 < delta <= 1")
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr = {lr!r} is not allowed; use a finite step lr > 0")
    if not (1 <= int(n) <= MAX_STEPS):
        raise ValueError(f"n = {n!r} steps is not allowed; use 1 <= n <= {MAX_STEPS}")
    key = cache_key("inexact_gd", L=L, mu=mu, delta=delta, lr=lr, n=n)
    if (hit := lookup(key)) is not None:
        return hit
    pepit = _pepit()
    if pepit is None:
        raise _missing(key)
    eps = math.sqrt(max(1.0 - delta, 0.0))
    t0 = time.perf_counter()
    pb = pepit.PEP()
    f = pb.declare_function(pepit.functions.SmoothStronglyConvexFunction, mu=mu, L=L)
    xs = f.stationary_point()
    fs = f(xs)
    x0 = pb.set_initial_point()
    pb.set_initial_condition(f(x0) - fs <= 1)
    x, steps = x0, []
    for _ in range(int(n)):
        if eps == 0.0:
            # delta = 1 is exact GD: the inexactness constraint ||d - g||^2 <= 0 has no interior point, which
            # costs the solver 3 digits (1e-6 -> 1e-3 relative, measured), so write d = g instead
            d = f.gradient(x)
            x_next = x - lr * d
        else:
            x_next, d, _fx = pepit.primitive_steps.inexact_gradient_step(x, f, gamma=lr, epsilon=eps,
                                                                         notion="relative")
        steps.append((x, d))
        x = x_next
    pb.set_performance_metric(f(x) - fs)
    value, status, solver = _solve(pb)
    extra = {}
    if status == OK and int(n) == 1:
        import numpy as np

        x0v, xsv = x0.eval(), xs.eval()
        g0, d0 = f.gradient(x0).eval(), steps[0][1].eval()
        gg = float(g0 @ g0)
        c = float(d0 @ g0) / gg
        extra = {"h": gg / float(g0 @ (x0v - xsv)), "c": c, "perp": float(np.linalg.norm(d0 - c * g0)) / math.sqrt(gg)}
    res = PEPResult(value if status == OK else math.nan, status, time.perf_counter() - t0, solver, extra)
    _store(key, res)
    return res


def _delay_lyapunov(window, xs, theta):
    r""":math:`V = \|x_k - x_\star\|^2 + \theta\sum_{i=1}^{\tau} i\,\|x_{k-\tau+i} - x_{k-\tau+i-1}\|^2`."""
    tau = len(window) - 1
    v = (window[-1] - xs) ** 2
    for i in range(1, tau + 1):
        v = v + theta * i * (window[i] - window[i - 1]) ** 2
    return v


def _delay_ratio(pepit, L, mu, lr, tau, theta):
    """Worst case of V(window after tau + 1 steps) / V(window) over the class, by one SDP."""
    pb = pepit.PEP()
    f = pb.declare_function(pepit.functions.SmoothStronglyConvexFunction, mu=mu, L=L)
    xs = f.stationary_point()
    pts = [pb.set_initial_point() for _ in range(tau + 1)]  # x_{-tau}, ..., x_0: any window
    pb.set_initial_condition(_delay_lyapunov(pts, xs, theta) <= 1)
    for _ in range(tau + 1):
        pts.append(pts[-1] - lr * f.gradient(pts[-1 - tau]))  # x_{k+1} = x_k - lr grad f(x_{k-tau})
    pb.set_performance_metric(_delay_lyapunov(pts[-(tau + 1):], xs, theta))
    return _solve(pb)


#: the Lyapunov weights tried at every step size: theta = 10^(-2), 10^(-1.875), ..., 10^1
_THETAS = tuple(10.0 ** (e / 8) for e in range(-16, 9))
#: a window counts as contracted when the SDP's worst-case ratio is below 1 - this: Clarabel's accuracy on these
#: SDPs is ~1e-8 (1e-6 leaves room); SCS, the fallback when Clarabel fails, is accurate to ~1e-4 only
_CONTRACT_TOL = {"CLARABEL": 1e-6, "SCS": 1e-3}


def solve_delay_certified(tau: int, L: float, mu: float, iters: int = 12) -> PEPResult:
    r"""Largest step of delayed GD with a PEP-certified contraction, by bisection (cached).

    **Method.** :math:`x_{k+1} = x_k - \gamma\nabla f(x_{k-\tau})` (constant delay :math:`\tau`, exact gradients).
    Its state is the window :math:`w_k = (x_{k-\tau}, \dots, x_k)`.

    **The SDP.** For a step :math:`\gamma` and a weight :math:`\theta > 0`, take the Lyapunov function
    :math:`V(w_k) = \|x_k - x_\star\|^2 + \theta\sum_{i=1}^{\tau} i\,\|x_{k-\tau+i} - x_{k-\tau+i-1}\|^2`
    (recent increments weigh more: they are the gradients still to be applied, the weighting of the classical
    delayed-gradient analyses) and maximise :math:`V(w_{\tau+1})` over every :math:`L`-smooth
    :math:`\mu`-strongly convex :math:`f` and every window with :math:`V(w_0) \le 1` (``tau + 1`` steps, so the
    new window shares no point with the old one; ``tau + 1 <= 4``). A value below 1 certifies
    :math:`V(w_{(\tau+1)j}) \le \rho^j V(w_0)`, i.e. linear convergence from every start, for every function of
    the class. ``theta`` is searched on 25 log-spaced values in ``[1e-2, 10]``; the step by bisection on
    ``[0, 2/L]`` (``iters`` halvings; the lower end, which is certified, is returned).

    The result is a **certified** step (a lower bound on the class's true stability limit, which this
    Lyapunov family may not reach), not the limit itself. Since quadratics belong to the class it can never
    exceed the exact quadratic threshold :math:`2\sin(\pi/(2(2\tau+1)))/L` (``theory.urq.delay_threshold_exact``).

    Returns
    -------
    PEPResult
        ``value``: the certified step; ``extra``: ``bracket`` (last certified, first uncertified step),
        ``theta`` (the weight certifying ``value``), ``rho`` (its worst-case ratio), ``solves``, and
        ``statuses`` (every non-optimal status met: such a step counted as not certified).
    """
    _check_class(L, mu)
    if not (0 <= int(tau) <= MAX_STEPS - 1):
        raise ValueError(f"tau = {tau!r} is not allowed here; use 0 <= tau <= {MAX_STEPS - 1} "
                         f"(the SDP runs tau + 1 <= {MAX_STEPS} steps)")
    tau = int(tau)
    key = cache_key("delay_certified", tau=tau, L=L, mu=mu, iters=iters)
    if (hit := lookup(key)) is not None:
        return hit
    pepit = _pepit()
    if pepit is None:
        raise _missing(key)
    t0 = time.perf_counter()
    lo, hi = 0.0, 2.0 / L  # no step >= 2/L contracts even without delay (f = L/2 x^2)
    best, solves, bad, solvers = (None, None), 0, set(), set()
    for _ in range(int(iters)):
        lr = 0.5 * (lo + hi)
        found = None
        for theta in _THETAS:
            value, status, solver = _delay_ratio(pepit, L, mu, lr, tau, theta)
            solves += 1
            solvers.add(solver)
            if status != OK:
                bad.add(status)
                continue
            if value < 1.0 - _CONTRACT_TOL[solver]:
                found = (theta, value)
                break
        if found:
            lo, best = lr, found
        else:
            hi = lr
    extra = {"bracket": [lo, hi], "theta": best[0], "rho": best[1], "solves": solves, "statuses": sorted(bad)}
    # a non-optimal solve only ever removes a certificate (the step counts as not certified), so the returned
    # step stays certified; the status says when that happened
    status = OK if lo > 0 or not bad else sorted(bad)[0]
    res = PEPResult(lo if status == OK else math.nan, status, time.perf_counter() - t0, "+".join(sorted(solvers)),
                    extra)
    _store(key, res)
    return res


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="GD with any deterministic delta-compressor, x+ = x - lr C(grad f(x)), on L-smooth mu-strongly "
                 "convex f: (f(x_K) - f*)/(f(x_0) - f*) <= rho^K, rho = the one-step PEP worst case")
def compressed_gd_rate(L: float, mu: float, delta: float, lr: float) -> float:
    r"""Tight one-step contraction of :math:`f - f_\star`, compressed GD with a :math:`\delta`-compressor ([N]; upper).

    The value of the SDP of :func:`solve_inexact_gd` with ``n = 1``: the largest
    :math:`(f(x_1) - f_\star)/(f(x_0) - f_\star)` over every :math:`L`-smooth :math:`\mu`-strongly convex ``f``
    and every direction with :math:`\|d - \nabla f(x_0)\|^2 \le (1-\delta)\|\nabla f(x_0)\|^2`. Applied at every
    step, it bounds the per-step factor :math:`((f(x_K) - f_\star)/(f(x_0) - f_\star))^{1/K}` of any run.
    ``nan`` when the solve was not ``optimal``.

    Examples
    --------
    >>> round(compressed_gd_rate(1.0, 0.1, 0.75, 1.0), 6)   # max((1 - 0.1 * 0.5)^2, 0.5^2), see the closed form
    0.9025
    """
    return solve_inexact_gd(L, mu, delta, lr, 1).value


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="the one-step PEP worst case of compressed GD with a delta-compressor is attained: on its "
                 "worst-case 1-D quadratic the simulated factor equals it")
def compressed_gd_rate_attained(L: float, mu: float, delta: float, lr: float) -> float:
    r"""The PEP worst case of :func:`compressed_gd_rate`, as the value a worst-case instance attains ([N]; equal).

    The SDP's optimum is attained by a function of the class (interpolation makes the PEP exact). Read off
    the Gram matrix (``extra`` of :func:`solve_inexact_gd`): a 1-D quadratic :math:`f = \frac h2 x^2` with
    ``h`` :math:`\in\{\mu, L\}` and the direction :math:`d = c\,\nabla f` with :math:`c = 1 \mp \varepsilon`
    (``perp`` below 1e-3: the instance is one-dimensional). Same number as :func:`compressed_gd_rate`,
    registered as an equality for the tightness claim.

    Examples
    --------
    >>> round(compressed_gd_rate_attained(1.0, 0.1, 0.91, 1.5), 6)   # eps = 0.3: max(0.8010, 0.95^2)
    0.9025
    """
    return solve_inexact_gd(L, mu, delta, lr, 1).value


@bound(kind="equal", provenance="R+N", paper=PAPER,
       statement="relative inexact GD (eps^2 = 1 - delta): worst-case f-contraction "
                 "max((1 - lr mu (1 - eps))^2, (1 - lr L (1 + eps))^2) (De Klerk, Glineur, Taylor 2020, Thm 5.3)")
def inexact_gd_rate_closed_form(L: float, mu: float, delta: float, lr: float) -> float:
    r"""Closed-form one-step worst case :math:`\max\{(1-\gamma\mu_\varepsilon)^2, (1-\gamma L_\varepsilon)^2\}` ([R+N]).

    :math:`\mu_\varepsilon = (1-\varepsilon)\mu`, :math:`L_\varepsilon = (1+\varepsilon)L`,
    :math:`\varepsilon = \sqrt{1-\delta}`: the worst case is a 1-D quadratic at either end of the spectrum
    whose direction is shortened (curvature :math:`\mu`) or lengthened (curvature :math:`L`) by
    :math:`\varepsilon\|\nabla f\|`. Recalled [R] from De Klerk, Glineur & Taylor (SIAM J. Optim. 30(3), 2020,
    Theorem 5.3; PEPit's ``inexact_gradient_descent`` example quotes it at
    :math:`\gamma = 2/(L_\varepsilon + \mu_\varepsilon)`), and checked here [N] against the SDP of
    :func:`solve_inexact_gd` to 1e-6 relative over a grid of :math:`(\mu/L, \delta, \gamma L)`
    (tests/test_pep.py), steps up to :math:`\gamma = 2/L_\varepsilon` included.

    Examples
    --------
    >>> inexact_gd_rate_closed_form(1.0, 0.1, 1.0, 1.0)   # exact gradients: (1 - mu/L)^2 at lr = 1/L
    0.81
    """
    _check_class(L, mu)
    if not (0 < delta <= 1):
        raise ValueError(f"delta = {delta!r} is not allowed; use 0 < delta <= 1")
    eps = math.sqrt(1.0 - delta)
    return max((1.0 - lr * mu * (1.0 - eps)) ** 2, (1.0 - lr * L * (1.0 + eps)) ** 2)


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="compressed GD with a delta-compressor, lr <= 1/L: f(x+) - f* <= (1 - lr delta mu)(f(x) - f*) "
                 "(descent lemma + PL)")
def compressed_gd_rate_descent_lemma(L: float, mu: float, delta: float, lr: float) -> float:
    r"""The usual analysis' rate :math:`1 - \gamma\delta\mu` for :math:`\gamma \le 1/L` ([N]; upper, not tight).

    The descent lemma gives :math:`f(x_+) \le f(x) - \gamma\langle g, d\rangle + \frac{L\gamma^2}2\|d\|^2`, and
    :math:`\|d-g\|^2 \le (1-\delta)\|g\|^2` gives :math:`\langle g, d\rangle \ge \frac12(\delta\|g\|^2 + \|d\|^2)`,
    so :math:`f(x_+) - f_\star \le (f(x) - f_\star) - \frac{\gamma\delta}2\|g\|^2` for :math:`\gamma \le 1/L`;
    strong convexity (:math:`\|g\|^2 \ge 2\mu(f - f_\star)`) closes it. This is the rate the biased-compression
    literature states for :math:`\gamma = 1/L` (:math:`1 - \delta\mu/L`, e.g. Beznosikov, Horvath, Richtarik &
    Safaryan 2020 [R]); derived here. It lies above the PEP worst case (:func:`compressed_gd_rate`):
    :math:`2(1-\sqrt{1-\delta}) \ge \delta`. ``inf`` for :math:`\gamma > 1/L`, where the argument does not apply.

    Examples
    --------
    >>> compressed_gd_rate_descent_lemma(1.0, 0.1, 0.5, 1.0)
    0.95
    """
    _check_class(L, mu)
    if not (0 < delta <= 1):
        raise ValueError(f"delta = {delta!r} is not allowed; use 0 < delta <= 1")
    return 1.0 - lr * delta * mu if lr * L <= 1.0 else math.inf


@bound(kind="lower", provenance="N", paper=PAPER,
       statement="delayed GD x_{k+1} = x_k - lr grad f(x_{k-tau}) contracts a window Lyapunov function on every "
                 "L-smooth mu-strongly convex f for lr below the PEP-certified step (bisection on the SDP)")
def delay_step_certified(tau: int, L: float, mu: float) -> float:
    r"""Largest step of delayed GD with a PEP contraction certificate on smooth strongly convex f ([N]; lower).

    See :func:`solve_delay_certified` for the SDP. Every quadratic with curvatures in :math:`[\mu, L]` is in the
    class, so its measured stability threshold must lie above this step (and the step below the exact
    quadratic threshold). ``nan`` when a solve that decided it was not ``optimal``.

    Examples
    --------
    >>> delay_step_certified(0, 1.0, 0.1) > 1.99   # no delay: GD contracts for every lr < 2/L
    True
    """
    return solve_delay_certified(tau, L, mu).value
