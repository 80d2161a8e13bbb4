r"""Compressed GD with deterministic :math:`\delta`-compressors, next to the PEP worst case (bounds in theory/pep.py).

A deterministic :math:`\delta`-compressor satisfies :math:`\|C(v) - v\|^2 \le (1-\delta)\|v\|^2` for every ``v``.
Compressed GD, :math:`x_{k+1} = x_k - \gamma C(\nabla f(x_k))`, is then GD with a relative inexact direction
(:math:`\varepsilon^2 = 1-\delta`), whose tight worst case over :math:`L`-smooth :math:`\mu`-strongly convex
functions is a small SDP (performance estimation). The experiments here run simcomm's simulator
(:func:`simcomm.optim.compressed_gd`, one compressed stream) and report the measured per-step factor of
:math:`f - f^\star`; they compute no bound.

* ``pep_compressed_gd``: random rotated quadratics with spectrum in ``[mu, L]`` (both ends attained) and a
  random start, compressed by top-k (:math:`\delta = k/d`) or by the two extremal :math:`\delta`-compressors
  :math:`C(v) = (1 \mp \sqrt{1-\delta})\,v` ("shrink", "stretch"), which put the whole error along the gradient.
* ``pep_worst_case``: the worst-case instance of the SDP, replayed: 1-D quadratics
  :math:`f = \frac h2 x^2` with ``h`` at either end of ``[mu, L]`` and the direction
  :math:`d = (1 \pm \varepsilon)f'(x)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm.compress import Compressor, Message, TopK
from simcomm.experiments._registry import Param, experiment
from simcomm.models import Problem
from simcomm.optim import compressed_gd

#: the deterministic delta-compressors ``pep_compressed_gd`` runs
PEP_COMPRESSORS = ("top_k", "shrink", "stretch")


@dataclass(frozen=True)
class _Scaled(Compressor):
    r""":math:`C(v) = c\,v`: a deterministic :math:`\delta`-compressor, :math:`\delta = 1 - (1-c)^2` (``0 < c < 2``).

    Not a message format (it sends ``d`` floats); it is the direction oracle of the PEP worst case, where the
    whole inexactness :math:`\varepsilon\|v\|` lies along ``v``, and is built only by the experiments here.
    """

    c: float
    name: ClassVar[str] = "scaled"

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return self.c * np.asarray(x, dtype=np.float64)

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 * d

    def _message(self, x, rng, value_dtype):
        return Message("dense", x.size, value_dtype, values=(self.c * x).astype(np.float32))


def _delta_true(params) -> float:
    return params["delta"] * (1.0 - params["delta_shortfall"])


def _compressor(name: str, delta: float, d: int) -> Compressor:
    """A deterministic compressor whose guaranteed delta is ``delta`` (top-k: the largest k with k/d <= delta)."""
    eps = math.sqrt(max(1.0 - delta, 0.0))
    if name == "top_k":
        return TopK(max(1, math.floor(delta * d + 1e-9)))
    return _Scaled(1.0 - eps if name == "shrink" else 1.0 + eps)


def _quadratic(H: np.ndarray, x0: np.ndarray, L: float, mu: float) -> Problem:
    r"""One-worker quadratic :math:`f(x) = \frac12 x^\top H x`: :math:`x^\star = 0`, :math:`f^\star = 0` exactly.

    With the minimiser at the origin, :math:`f(x_k)` is computed without cancellation down to underflow, so a
    per-step factor can be measured over many decades (a generic :math:`x^\star` stalls near 1e-30).
    """
    d = H.shape[0]

    def grad(X, idx):
        return X @ H

    def value(X):
        X = np.atleast_2d(X)
        return 0.5 * np.einsum("bd,bd->b", X @ H, X)

    def full_grad(X):
        return np.atleast_2d(X) @ H

    return Problem("quadratic", 1, d, float(L), float(mu), np.zeros(d), 0.0, 0.0, x0, grad, value, full_grad)


def _factor(problem: Problem, comp: Compressor, lr: float, steps: int, rng) -> tuple[float, str]:
    r"""Measured per-step factor :math:`((f(x_k) - f^\star)/(f(x_0) - f^\star))^{1/k}` and the run's note.

    ``k`` is ``steps``, or the first step with :math:`f(x_k) \le 10^{-250} f(x_0)` (the run stops there: below,
    the values approach underflow).
    """
    f0 = float(problem.value(problem.x0)[0])
    tr = compressed_gd(problem, comp, lr=lr, steps=steps, mode="aggregate", record_every=1, stop_gap=1e-250 * f0,
                       rng=rng)
    k = int(tr.step[-1])
    fk = float(tr.f_gap[0, -1])
    if not math.isfinite(fk):
        return math.inf, tr.notes()[0]
    return (max(fk, 0.0) / f0) ** (1.0 / k), tr.notes()[0]


_CLASS = {
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothness (largest curvature)"),
    "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="strong convexity (smallest curvature)"),
    "delta": Param("float", default=0.25, low=0.0, low_open=True, high=1.0,
                   doc="declared delta of the compressor: ||C(v) - v||^2 <= (1 - delta) ||v||^2"),
    "lr": Param("float", default=1.0, low=0.0, low_open=True, doc="step size (problem units)"),
}


def _check_class(params):
    if params["mu"] > params["L"]:
        raise ValueError(f"mu = {params['mu']} > L = {params['L']}; use mu <= L")


def _check_compressed(params):
    _check_class(params)
    if params["compressor"] == "top_k" and math.floor(_delta_true(params) * params["d"] + 1e-9) < 1:
        raise ValueError(f"top_k keeps floor(delta d) = 0 coordinates at delta = {_delta_true(params):g}, "
                         f"d = {params['d']}; use delta >= 1/d")


@experiment(
    "pep_compressed_gd",
    params={**_CLASS,
            "compressor": Param("str", default="top_k", choices=PEP_COMPRESSORS,
                                doc="deterministic delta-compressor (top_k: k = floor(delta d))"),
            "d": Param("int", default=20, low=1, doc="dimension of the quadratic"),
            "delta_shortfall": Param("float", default=0.0, low=0.0, high=1.0, high_open=True,
                                     doc="build the compressor with delta (1 - shortfall), smaller than declared"),
            "steps": Param("int", default=3000, low=1, doc="iterations (fewer if f reaches 1e-250 f(x0))")},
    check=_check_compressed,
    cost=lambda p: (4e-5 * p["steps"], 64 * p["steps"] + 8 * p["d"] ** 2),
)
def pep_compressed_gd(params, rng, backend):
    r"""Per-step factor of compressed GD on a random quadratic with spectrum in ``[mu, L]``.

    The Hessian is :math:`V\,\mathrm{diag}(\lambda)V^\top` with ``d`` eigenvalues log-spaced from ``L`` to
    ``mu`` (both attained) and a random orthogonal ``V``; the start is a random unit vector; the minimiser is
    the origin (:func:`_quadratic`). The compressor is built with
    :math:`\delta_{\rm true} = \delta(1 - \text{delta\_shortfall})`: top-k keeps
    :math:`k = \lfloor\delta_{\rm true} d\rfloor` coordinates (:math:`\|v - \mathrm{top}_k(v)\|^2 \le (1-k/d)\|v\|^2`),
    "shrink"/"stretch" send :math:`(1 \mp \sqrt{1-\delta_{\rm true}})\,v`.

    Rows: ``rate`` = :math:`((f(x_k) - f^\star)/(f(x_0) - f^\star))^{1/k}` over the run (``k = steps``, or
    the step where the gap reaches 1e-250 of its start).
    """
    d, L, mu = params["d"], params["L"], params["mu"]
    lam = np.geomspace(L, mu, d) if d > 1 else np.array([L])
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    V = q * np.sign(np.diag(r))
    H = (V * lam) @ V.T
    H = (H + H.T) / 2
    u = rng.standard_normal(d)
    problem = _quadratic(H, u / np.linalg.norm(u), L, mu)
    comp = _compressor(params["compressor"], _delta_true(params), d)
    rate, note = _factor(problem, comp, params["lr"], params["steps"], rng)
    return [dict(metric="rate", value=rate, note=note)]


@experiment(
    "pep_worst_case",
    deterministic=True,  # deterministic directions on a fixed 1-D instance: the rng is never drawn from
    params={**_CLASS,
            "oracle": Param("str", default="worst", choices=("worst", "exact"),
                            doc="worst: d = (1 -/+ eps) grad f, the PEP worst case; exact: d = grad f"),
            "steps": Param("int", default=3, low=1, doc="iterations replayed")},
    check=_check_class,
    cost=lambda p: (1e-3 * p["steps"], 1e4),
)
def pep_worst_case(params, rng, backend):
    r"""The PEP worst case of compressed GD, replayed in the simulator.

    The SDP of ``theory.pep.solve_inexact_gd`` is attained (its Gram matrix has rank one, tests/test_pep.py)
    by a 1-D quadratic :math:`f = \frac h2 x^2` and a direction :math:`d = c f'(x)`, :math:`|c - 1| \le
    \varepsilon = \sqrt{1-\delta}`. Among 1-D quadratics the one-step factor :math:`(1 - \gamma c h)^2` is convex
    in ``c`` and in ``h``, so its largest value is at a corner: ``h`` in :math:`\{\mu, L\}`, ``c`` in
    :math:`\{1-\varepsilon, 1+\varepsilon\}`. The experiment runs :func:`simcomm.optim.compressed_gd` on the four
    corners from :math:`x_0 = 1` for ``steps`` iterations, with the direction oracle :math:`C(v) = c v`
    (``oracle = "exact"``: :math:`c = 1`, the same functions with exact gradients).

    Rows: ``factor`` = the largest :math:`((f(x_K) - f^\star)/(f(x_0) - f^\star))^{1/K}` over the corners.
    """
    eps = math.sqrt(max(1.0 - params["delta"], 0.0))
    cs = (1.0 - eps, 1.0 + eps) if params["oracle"] == "worst" else (1.0,)
    worst, notes = -math.inf, []
    for h in (params["mu"], params["L"]):
        problem = _quadratic(np.array([[h]]), np.array([1.0]), params["L"], params["mu"])
        for c in cs:
            f, note = _factor(problem, _Scaled(c), params["lr"], params["steps"], rng)
            worst = max(worst, f)
            notes.append(note)
    return [dict(metric="factor", value=worst, note="; ".join(n for n in notes if n))]
