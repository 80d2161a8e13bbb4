r"""Local-update training (local SGD, DiLoCo, SparseLoCo) on synthetic heterogeneous quadratics (theory/local.py).

Every run is a registered method of :mod:`simcomm.optim.methods` (a composition of
:func:`simcomm.optim.local_updates`) stepped by :func:`simcomm.optim.run`; nothing here is a driver.

* ``local_floor``: local SGD (``diloco`` with outer SGD of step 1: the average of the workers) on
  quadratics whose workers differ in curvature and optimum, run to its fixed point: the heterogeneity
  floor :math:`f(x_\infty) - f^\star` and the data's constants the bound reads (``L``, ``mu_min``, ``drift``).
* ``local_compare``: two arms of a comparison on the same heterogeneous quadratic (shared Hessian,
  :func:`simcomm.models.quadratic` with heterogeneity ``sigma2``), each the rounds to a target
  :math:`f - f^\star \le \varepsilon (f(x_0) - f^\star)` (``inf`` where it is missed) and its bytes.
* ``local_vs_dp``: DiLoCo against minibatch data-parallel SGD (one all-reduce of the workers' gradients per
  step) on the heterogeneous quadratics of ``local_floor`` with Gaussian gradient noise: the excess loss
  at equal inner steps and at equal bytes sent.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.experiments._registry import Param, experiment
from simcomm.models import Problem, quadratic
from simcomm.optim import aggregate, build_method, chain, descend, local_gradients, run, scale_by_lr

__all__ = ["diagonal_heterogeneous_quadratics", "COMPARISONS", "with_gradient_noise"]


def diagonal_heterogeneous_quadratics(n: int, d: int, *, L: float, mu: float, spread: float, zeta: float,
                                      rng) -> tuple[Problem, dict]:
    r"""Workers :math:`f_i(x) = \frac12\sum_j a_{ij}(x_j - c_{ij})^2` differing in curvature and optimum.

    :math:`\bar a_j` log-spaced from ``L`` to ``mu``; :math:`a_{ij} = \bar a_j(1 + \mathrm{spread}\,u_{ij})`
    with :math:`u_{ij}` uniform on :math:`[-1, 1]`, centred over the workers and scaled back into it (so
    :math:`\frac1n\sum_i a_{ij} = \bar a_j` exactly); centres :math:`c_{ij} = \mathrm{zeta}\,z_{ij}`,
    :math:`z` standard normal. Returns the problem and its constants: ``L`` (:math:`\max_j\bar a_j`),
    ``mu_min`` (:math:`\min_{ij} a_{ij}`), ``L_max`` (:math:`\max_{ij} a_{ij}`) and ``drift``
    (:math:`\frac1n\sum_i \max_j|a_{ij} - \bar a_j|\,\|\nabla f_i(x^\star)\|`).
    """
    if not 0.0 <= spread < 1.0:
        raise UserError(f"spread = {spread!r} is not allowed; use a number in [0, 1) (curvatures stay positive)")
    abar = np.geomspace(L, mu, d) if d > 1 else np.array([float(L)])
    u = rng.uniform(-1.0, 1.0, (n, d))
    u -= u.mean(axis=0)
    top = np.abs(u).max()
    u = u / top if top > 1.0 else u
    a = abar * (1.0 + spread * u)
    C = zeta * rng.standard_normal((n, d))
    b = a * C
    x_star = b.sum(axis=0) / a.sum(axis=0)

    def grad(X, idx):
        return a[idx] * X - b[idx]

    def value(X):
        X = np.atleast_2d(X)
        D = X[:, None, :] - C[None]
        return 0.5 * (a[None] * D * D).sum(axis=(1, 2)) / n

    def full_grad(X):
        return abar * (np.atleast_2d(X) - x_star)

    f_star = float(value(x_star[None])[0])
    g = a * x_star - b
    consts = dict(L=float(abar.max()), mu_min=float(a.min()), L_max=float(a.max()),
                  drift=float((np.abs(a - abar).max(axis=1) * np.linalg.norm(g, axis=1)).mean()),
                  sigma2=float((g * g).sum(axis=1).mean()))
    x0 = x_star + rng.standard_normal(d)
    problem = Problem("diagonal_heterogeneous_quadratics", n, d, float(abar.max()), float(abar.min()), x_star, f_star,
                      consts["sigma2"], x0, grad, value, full_grad)
    return problem, consts


def _check_floor(params):
    if params["lr"] * params["L"] * (1.0 + params["spread"]) > 1.0:
        raise UserError(f"lr = {params['lr']} is too large: the bound needs lr * max curvature <= 1, i.e. lr <= "
                        f"{1.0 / (params['L'] * (1.0 + params['spread'])):.4g} at L = {params['L']}, spread = "
                        f"{params['spread']}")


def _floor_cost(params):
    steps = math.ceil(params["decades"] * math.log(10.0) / (params["lr"] * params["mu"] * (1.0 - params["spread"])))
    return 2 * 4e-5 * steps * (1.0 + params["n"] * params["d"] / 2000.0), 8 * params["n"] * params["d"] * 64


@experiment("local_floor", cost=_floor_cost, check=_check_floor, params={
    "n": Param("int", default=8, low=2, doc="workers"),
    "d": Param("int", default=40, low=1, doc="dimension"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest mean curvature"),
    "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="smallest mean curvature"),
    "spread": Param("float", default=0.5, low=0.0, high=1.0, high_open=True,
                    doc="relative spread of the workers' curvatures around the mean"),
    "zeta": Param("float", default=1.0, low=0.0, doc="spread of the workers' optima"),
    "H": Param("int", default=4, low=1, doc="inner steps per round"),
    "lr": Param("float", default=0.2, low=0.0, low_open=True, doc="inner step size"),
    "decades": Param("float", default=12.0, low=1.0, high=15.0,
                     doc="the run lasts until (1 - lr mu_min)^steps <= 10^-decades (the start is forgotten)"),
    "alpha": Param("float", default=0.0, low=0.0, high=1.0, high_open=True, keyed_at_default=False,
                   doc="negative control only: the workers keep this share of their own model at the merge "
                       "(0: they restart from the average, as local SGD does)"),
})
def local_floor(params, rng, backend):
    r"""Local SGD run to its fixed point on heterogeneous quadratics, at ``H`` and at ``H = 2`` on the same problem.

    ``floor``: :math:`f(x) - f^\star` of the server's model at the end of a run with
    :math:`(1 - \eta\mu_{\min})^{steps} \le 10^{-decades}` (a whole number of rounds); ``floor_growth``:
    the floor at ``H`` over the floor at ``H = 2`` (one local step beyond the first) on the same problem;
    ``floor_change``: the floor's relative change over the last quarter of the run (near 0 at a fixed point).
    """
    problem, consts = diagonal_heterogeneous_quadratics(params["n"], params["d"], L=params["L"], mu=params["mu"],
                                                        spread=params["spread"], zeta=params["zeta"], rng=rng)
    lr = params["lr"]
    floors, changes, notes = {}, {}, []
    for H in dict.fromkeys((params["H"], 2)):
        rounds = math.ceil(params["decades"] * math.log(10.0) / (-math.log1p(-lr * consts["mu_min"])) / H)
        method = build_method("diloco", H=H, lr=lr, outer="sgd", outer_lr=1.0, alpha=params["alpha"])
        tr = run(problem, method, rounds * H, rng=rng, record_every=H * max(1, rounds // 4), backend=backend)
        gaps = tr.f_gap[0]
        floors[H] = max(float(gaps[-1]), 0.0)
        changes[H] = abs(floors[H] - float(gaps[-2])) / floors[H] if floors[H] > 0 else 0.0
        notes.append(tr.notes()[0])
    note = "; ".join(x for x in notes if x)
    extra = dict(L_bar=consts["L"], mu_min=consts["mu_min"], drift=consts["drift"], note=note)
    growth = floors[params["H"]] / floors[2] if floors[2] > 0 else math.inf
    return [dict(metric="floor", value=floors[params["H"]], **extra),
            dict(metric="floor_growth", value=growth, floor_ref=floors[2], **extra),
            dict(metric="floor_change", value=max(changes.values()), **extra)]


#: comparison -> its two arms
COMPARISONS = {
    "ef_2bit": ("compressed", "uncompressed"),
    "ef_momentum": ("sparseloco", "diloco_nesterov"),
    "overlap": ("overlap", "no_overlap"),
}


def _arm(params, arm):
    """The registered method of one arm of a comparison, from the cell's settings."""
    common = dict(H=params["H"], lr=params["lr"])
    label = params["compressor"]
    if arm in ("uncompressed", "diloco_nesterov"):
        return build_method("diloco", outer="nesterov", outer_lr=params["outer_lr"],
                            outer_momentum=params["outer_momentum"], **common)
    if arm == "compressed":
        return build_method("diloco", outer="nesterov", outer_lr=params["outer_lr"],
                            outer_momentum=params["outer_momentum"], compressor=label, feedback=params["feedback"],
                            **common)
    if arm in ("overlap", "no_overlap"):
        return build_method("streaming_diloco", outer_lr=params["outer_lr"], outer_momentum=params["outer_momentum"],
                            fragments=params["fragments"], alpha=params["alpha"],
                            overlap=params["overlap"] if arm == "overlap" else 0, **common)
    # sparseloco: the compressor with decayed error feedback and an outer SGD step, no outer momentum
    return build_method("sparseloco", outer_lr=params["sparse_outer_lr"], ef_beta=params["ef_beta"],
                        compressor=label, **common)


def _compare_cost(params):
    steps = params["max_rounds"] * params["H"]
    return 2 * 6e-5 * steps * (1.0 + params["n"] * params["d"] / 1000.0), 16 * params["n"] * params["d"] * 64


@experiment("local_compare", columns=("method",), cost=_compare_cost, params={
    "comparison": Param("str", default="ef_2bit", choices=tuple(COMPARISONS), doc="which two arms"),
    "n": Param("int", default=8, low=1, doc="workers"),
    "d": Param("int", default=64, low=1, doc="dimension"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
    "mu": Param("float", default=0.05, low=0.0, low_open=True, doc="smallest curvature"),
    "sigma2": Param("float", default=1.0, low=0.0, doc="heterogeneity: mean squared worker gradient at x*"),
    "H": Param("int", default=8, low=1, doc="inner steps per round"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="inner step size"),
    "outer_lr": Param("float", default=0.7, low=0.0, low_open=True, doc="outer step size"),
    "outer_momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="outer Nesterov momentum"),
    "compressor": Param("str", default="top_k_quant(k=0,bits_per_value=2)", doc="the pseudo-gradients' compressor"),
    "feedback": Param("str", default="ef21", choices=("ef", "ef21", "none"),
                      doc="error feedback of the compressed arm"),
    "ef_beta": Param("float", default=0.95, low=0.0, high=1.0, doc="decay of SparseLoCo's memory"),
    "sparse_outer_lr": Param("float", default=1.0, low=0.0, low_open=True, doc="SparseLoCo's outer step size"),
    # read by the comparison "overlap" only: left out of the stream key at their defaults, so the other
    # comparisons' streams do not depend on them
    "fragments": Param("int", default=4, low=1, keyed_at_default=False,
                       doc="Streaming DiLoCo's fragments (read by comparison overlap only: elsewhere its default "
                           "changes nothing)"),
    "alpha": Param("float", default=0.5, low=0.0, high=1.0, high_open=True, keyed_at_default=False,
                   doc="Streaming DiLoCo's local weight in the merge (read by comparison overlap only: elsewhere its "
                       "default changes nothing)"),
    "overlap": Param("int", default=1, low=0, keyed_at_default=False,
                     doc="inner steps the merge is overlapped by (read by comparison overlap only: elsewhere its "
                         "default changes nothing)"),
    "eps": Param("float", default=1e-6, low=0.0, low_open=True, high=1.0, doc="target, relative to the start"),
    "max_rounds": Param("int", default=400, low=1, doc="horizon in rounds (a target missed by then: inf)"),
})
def local_compare(params, rng, backend):
    r"""Two local-update methods on one heterogeneous quadratic: rounds to :math:`\varepsilon`, bytes sent.

    ``rounds_to_eps``: the first round after which :math:`f - f^\star \le \varepsilon (f(x_0) - f^\star)`
    (``inf`` when the target is missed within ``max_rounds``); ``final_gap``: :math:`f - f^\star` at the end,
    relative to the start; ``bytes``: what every worker sent until the target (or the horizon), per worker.
    Both arms start from the same point on the same problem; the compressors used here draw no randomness.
    """
    problem = quadratic(params["n"], params["d"], L=params["L"], mu=params["mu"], sigma2=params["sigma2"], rng=rng)
    H = params["H"]
    gap0 = float(problem.value(problem.x0[None])[0] - problem.f_star)
    target = params["eps"] * gap0
    rows = []
    for arm in COMPARISONS[params["comparison"]]:
        tr = run(problem, _arm(params, arm), params["max_rounds"] * H, rng=rng, record_every=H, stop_gap=target,
                 backend=backend)
        gaps = tr.f_gap[0]
        hit = np.flatnonzero(gaps <= target)
        note = tr.notes()[0]
        idx = int(hit[0]) if hit.size else gaps.size - 1
        # a missed target is a non-finite hitting time (the statement's own target missed), never a horizon
        rounds = float(int(tr.step[idx]) // H) if hit.size else math.inf
        sent = float(tr.bits[idx]) / 8.0 / problem.n
        rows.append(dict(metric="rounds_to_eps", value=rounds, method=arm,
                         note=note or ("" if hit.size else f"missed the target in {params['max_rounds']} rounds")))
        rows.append(dict(metric="final_gap", value=float(gaps[-1]) / gap0, method=arm, note=note))
        rows.append(dict(metric="bytes", value=sent, method=arm, note=note))
    return rows


def _demo_cost(params):
    seconds = 2 * 8e-5 * params["max_steps"] * (1.0 + params["n"] * params["d"] / 1000.0)
    return seconds, 16 * params["n"] * params["d"] * 64


@experiment("demo_bytes", columns=("method",), cost=_demo_cost, params={
    "n": Param("int", default=8, low=1, doc="workers"),
    "d": Param("int", default=256, low=1, doc="dimension"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
    "mu": Param("float", default=0.05, low=0.0, low_open=True, doc="smallest curvature"),
    "sigma2": Param("float", default=0.0, low=0.0, doc="heterogeneity: mean squared worker gradient at x*"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="step size of both methods"),
    "beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="momentum of both methods"),
    "k": Param("int", default=4, low=1, doc="DCT coefficients DeMo sends per chunk"),
    "chunk": Param("int", default=64, low=1, doc="coordinates per DCT chunk"),
    "eps": Param("float", default=1e-6, low=0.0, low_open=True, high=1.0, doc="target, relative to the start"),
    "max_steps": Param("int", default=4000, low=1, doc="horizon (a target missed by then: inf)"),
})
def demo_bytes(params, rng, backend):
    r"""DeMo against uncompressed momentum SGD on one quadratic: the bytes each worker sends to reach the target.

    ``momentum_sgd``: heavy ball :math:`m \leftarrow \beta m + \frac1n\sum_i\nabla f_i`, :math:`x \leftarrow x -
    \eta m` (float32 gradients, ``32 d`` bits a worker and step); ``demo``: the registered ``demo`` method
    (:class:`~simcomm.compress.DCTTopK` messages). ``bytes_to_eps`` and ``steps_to_eps``: until
    :math:`f - f^\star \le \varepsilon (f(x_0) - f^\star)` (``inf`` when missed within ``max_steps``);
    ``compression`` (a column): :math:`32 d` over DeMo's bits a message.
    """
    from simcomm.compress import DCTTopK
    from simcomm.optim import aggregate, chain, descend, local_gradients, momentum, scale_by_lr

    problem = quadratic(params["n"], params["d"], L=params["L"], mu=params["mu"], sigma2=params["sigma2"], rng=rng)
    gap0 = float(problem.value(problem.x0[None])[0] - problem.f_star)
    target = params["eps"] * gap0
    C = DCTTopK(k=params["k"], chunk=params["chunk"])
    ratio = 32.0 * problem.d / C.bits(problem.d)
    methods = {
        "demo": build_method("demo", lr=params["lr"], beta=params["beta"], k=params["k"], chunk=params["chunk"]),
        "momentum_sgd": descend(chain(local_gradients(), aggregate("mean"), momentum(params["beta"]),
                                      scale_by_lr(params["lr"])), bits=lambda t, p: t * p.n * 32.0 * p.d,
                                name="momentum_sgd"),
    }
    rows = []
    for name, method in methods.items():
        tr = run(problem, method, params["max_steps"], rng=rng, stop_gap=target, backend=backend)
        hit = np.flatnonzero(tr.f_gap[0] <= target)
        note = tr.notes()[0] or ("" if hit.size else f"missed the target in {params['max_steps']} steps")
        idx = int(hit[0]) if hit.size else -1
        steps = float(tr.step[idx]) if hit.size else math.inf
        sent = float(tr.bits[idx]) / 8.0 / problem.n if hit.size else math.inf
        rows.append(dict(metric="bytes_to_eps", value=sent, method=name, compression=ratio, note=note))
        rows.append(dict(metric="steps_to_eps", value=steps, method=name, compression=ratio, note=note))
        rows.append(dict(metric="final_gap", value=float(tr.f_gap[0, -1]) / gap0, method=name, compression=ratio,
                         note=note))
    return rows


def with_gradient_noise(problem: Problem, sigma: float, seed: int) -> Problem:
    r"""``problem`` whose worker gradients carry i.i.d. :math:`\mathcal N(0, \sigma^2)` noise per coordinate.

    The noise comes from one stream of ``seed``, drawn in the order the gradients are asked for: two
    methods that ask for ``n`` gradients per step from copies made with the same seed see the same noise
    at the same step and worker (common random numbers). ``sigma = 0``: the problem itself.

    >>> p = quadratic(2, 3, L=1.0, mu=1.0, rng=0)
    >>> a, b = with_gradient_noise(p, 0.5, 1), with_gradient_noise(p, 0.5, 1)
    >>> X = np.zeros((2, 3))
    >>> bool(np.array_equal(a.grad(X, np.arange(2)), b.grad(X, np.arange(2))))
    True
    """
    import dataclasses

    if sigma == 0.0:
        return problem
    gen = np.random.default_rng(seed)
    exact = problem.grad

    def grad(X, idx):
        G = exact(X, idx)
        return G + sigma * gen.standard_normal(G.shape)

    return dataclasses.replace(problem, grad=grad)


def _check_vs_dp(params):
    if params["steps"] % params["H"]:
        raise UserError(f"steps = {params['steps']} is not a whole number of rounds of H = {params['H']} inner steps; "
                        f"use a multiple of H, e.g. {params['H'] * max(1, round(params['steps'] / params['H']))}")
    if params["outer"] == "sgd" and params["outer_momentum"] != 0.9:
        raise UserError("outer_momentum applies to outer = 'nesterov' only; drop it or set outer = 'nesterov'")


def _vs_dp_cost(params):
    return 2 * 6e-5 * params["steps"] * (1.0 + params["n"] * params["d"] / 1000.0), 16 * params["n"] * params["d"] * 64


@experiment("local_vs_dp", columns=("method",), cost=_vs_dp_cost, check=_check_vs_dp, params={
    "n": Param("int", default=8, low=1, doc="workers"),
    "d": Param("int", default=40, low=1, doc="dimension"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest mean curvature"),
    "mu": Param("float", default=0.05, low=0.0, low_open=True, doc="smallest mean curvature"),
    "spread": Param("float", default=0.5, low=0.0, high=1.0, high_open=True,
                    doc="relative spread of the workers' curvatures around the mean"),
    "zeta": Param("float", default=1.0, low=0.0, doc="spread of the workers' optima"),
    "sigma": Param("float", default=0.1, low=0.0, doc="gradient noise per coordinate (minibatch noise)"),
    "H": Param("int", default=8, low=1, doc="DiLoCo's inner steps per round"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="inner step size (and data-parallel SGD's)"),
    "outer": Param("str", default="nesterov", choices=("nesterov", "sgd"), doc="DiLoCo's outer optimiser"),
    "outer_lr": Param("float", default=0.7, low=0.0, low_open=True, doc="outer step size"),
    "outer_momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="outer Nesterov momentum"),
    "steps": Param("int", default=1024, low=1, doc="inner steps of DiLoCo (a multiple of H): the horizon"),
})
def local_vs_dp(params, rng, backend):
    r"""DiLoCo against minibatch data-parallel SGD: excess loss at equal inner steps and at equal bytes.

    Both start from the same point of one problem (:func:`diagonal_heterogeneous_quadratics`) and see the
    same gradient noise (:func:`with_gradient_noise`, one seed for both). ``dp_sgd``: every step the
    workers' noisy gradients at the server's model are averaged (one all-reduce of ``32 d`` bits a
    worker) and :math:`x \leftarrow x - \eta\,\bar g`; ``diloco``: the registered method, ``H`` inner SGD
    steps of the same step size per round, one exchange of ``32 d`` bits a worker per round.
    ``gap_equal_steps``: :math:`(f - f^\star)/(f(x_0) - f^\star)` after ``steps`` inner steps of each;
    ``gap_equal_bytes``: DiLoCo's after ``steps`` inner steps against SGD's after ``steps / H`` steps (the
    same bytes sent); ``bytes``: what each worker sent by ``steps`` inner steps.
    """
    problem, _ = diagonal_heterogeneous_quadratics(params["n"], params["d"], L=params["L"], mu=params["mu"],
                                                   spread=params["spread"], zeta=params["zeta"], rng=rng)
    noise_seed = int(rng.integers(2**63))
    H, steps = params["H"], params["steps"]
    rounds = steps // H
    gap0 = float(problem.value(problem.x0[None])[0] - problem.f_star)
    outer = dict(outer_momentum=params["outer_momentum"]) if params["outer"] == "nesterov" else {}
    diloco = build_method("diloco", H=H, lr=params["lr"], outer=params["outer"], outer_lr=params["outer_lr"], **outer)
    dp_sgd = descend(chain(local_gradients(), aggregate("mean"), scale_by_lr(params["lr"])),
                     bits=lambda t, p: t * p.n * 32.0 * p.d, name="dp_sgd")
    tr_local = run(with_gradient_noise(problem, params["sigma"], noise_seed), diloco, steps, rng=rng,
                   record_every=steps, backend=backend)
    tr_dp = run(with_gradient_noise(problem, params["sigma"], noise_seed), dp_sgd, steps, rng=rng,
                record_every=rounds, backend=backend)
    at_bytes = int(np.flatnonzero(tr_dp.step == rounds)[0])
    if tr_dp.bits[at_bytes] != tr_local.bits[-1]:  # the byte counts of both methods say the same budget
        raise AssertionError(f"bytes differ: {tr_dp.bits[at_bytes]} against {tr_local.bits[-1]}")
    local_gap = float(tr_local.f_gap[0, -1]) / gap0
    notes = {"diloco": tr_local.notes()[0], "dp_sgd": tr_dp.notes()[0]}
    rows = []
    for metric, dp_gap in (("gap_equal_steps", float(tr_dp.f_gap[0, -1]) / gap0),
                           ("gap_equal_bytes", float(tr_dp.f_gap[0, at_bytes]) / gap0)):
        rows.append(dict(metric=metric, value=local_gap, method="diloco", rounds=rounds, note=notes["diloco"]))
        rows.append(dict(metric=metric, value=dp_gap, method="dp_sgd", rounds=rounds, note=notes["dp_sgd"]))
    for name, tr in (("diloco", tr_local), ("dp_sgd", tr_dp)):
        rows.append(dict(metric="bytes", value=float(tr.bits[-1]) / 8.0 / problem.n, method=name, rounds=rounds,
                         note=notes[name]))
    return rows
