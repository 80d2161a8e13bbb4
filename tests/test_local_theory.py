"""theory/local.py against the simulator, and the local-update experiments (simcomm/experiments/local.py).

Tolerances: fixed points are compared after runs long enough that the start is forgotten to 1e-10 relative
(the floors here are 1e-6 .. 1e-2, so rounding and the remaining transient are below 1e-9 relative of them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simcomm.compress import ErrorFeedback, TopK
from simcomm.experiments import get_experiment
from simcomm.experiments.local import diagonal_heterogeneous_quadratics
from simcomm.models import quadratic
from simcomm.optim import build_method, run
from theory.local import (
    ef_residual_bound,
    local_sgd_floor,
    local_sgd_floor_growth,
    outer_step_delayed,
    round_curvature,
)


def _fixed_point(a, C, lr, H):
    """Local SGD's fixed point on diagonal quadratics, per coordinate: sum_i P_i (c_i - x) = 0."""
    P = 1.0 - (1.0 - lr * a) ** H
    return (P * C).sum(axis=0) / P.sum(axis=0)


@pytest.mark.parametrize("H, lr", [(2, 0.1), (4, 0.2), (8, 0.05), (16, 0.1)])
def test_local_sgd_floor_bounds_the_fixed_point(H, lr):
    problem, c = diagonal_heterogeneous_quadratics(6, 20, L=1.0, mu=0.2, spread=0.6, zeta=1.0,
                                                   rng=np.random.default_rng(H))
    steps = H * math.ceil(30.0 / (lr * c["mu_min"]) / H)  # (1 - lr mu_min)^steps < 1e-13
    tr = run(problem, build_method("local_sgd", H=H, lr=lr), steps, rng=0, record_every=steps)
    floor = float(tr.f_gap[0, -1])
    assert 0 < floor <= local_sgd_floor(lr, H, c["L"], c["mu_min"], c["drift"])
    # the run is at the fixed point written out per coordinate (the curvatures and centres recovered
    # from the gradients: grad_i(x) = a_i x - a_i c_i)
    n, d = problem.n, problem.d
    idx = np.arange(n)
    g0 = problem.grad(np.zeros((n, d)), idx)
    a = problem.grad(np.ones((n, d)), idx) - g0
    x_inf = _fixed_point(a, -g0 / a, lr, H)
    np.testing.assert_allclose(tr.x[0], x_inf, rtol=0, atol=1e-9)


def test_floor_growth_is_first_order_h_minus_one_squared():
    exp = get_experiment("local_floor")
    p = {k: v.default for k, v in exp.params.items()}
    p.update(lr=0.02, mu=0.2, decades=10.0, H=5)
    rows = {r["metric"]: r for r in exp.func(p, np.random.default_rng(3), None)}
    assert rows["floor_change"]["value"] < 1e-8
    ratio = rows["floor_growth"]["value"] / local_sgd_floor_growth(5)
    assert 0.95 < ratio < 1.0  # the second order lowers it by O(lr L H) ~ 0.1
    # workers that keep their own model at the merge (alpha) break the law
    p.update(alpha=0.9)
    rows = {r["metric"]: r for r in exp.func(p, np.random.default_rng(3), None)}
    assert rows["floor_growth"]["value"] < 0.5 * local_sgd_floor_growth(5)


@pytest.mark.parametrize("H, lr", [(1, 1.0), (4, 0.5)])
def test_outer_step_threshold_of_an_undelayed_outer_sgd(H, lr):
    # identical workers (no floor): outer SGD on pseudo-gradients is GD on the round's curvature
    problem = quadratic(4, 10, L=1.0, mu=0.5, sigma2=0.0, rng=0)
    gamma = outer_step_delayed(lr, H, 1.0, 0)
    assert gamma == pytest.approx(2.0 / round_curvature(lr, H, 1.0))
    steps = 400 * H
    below = run(problem, build_method("diloco", H=H, lr=lr, outer="sgd", outer_lr=0.95 * gamma), steps, rng=0)
    above = run(problem, build_method("diloco", H=H, lr=lr, outer="sgd", outer_lr=1.05 * gamma), steps, rng=0)
    assert below.f_gap[0, -1] < 1e-6 * below.f_gap[0, 0]
    assert not (above.f_gap[0, -1] < above.f_gap[0, 0])  # diverged (inf) or growing
    assert outer_step_delayed(lr, H, 1.0, 1) == pytest.approx(gamma / 2)


def test_ef_residual_stays_below_its_bound():
    g = np.random.default_rng(0)
    d, k, G = 30, 6, 2.0
    ef = ErrorFeedback(TopK(k))
    state = ef.init((1, d))
    q = TopK(k).error_factor(d)
    worst = 0.0
    for _ in range(500):
        v = g.standard_normal((1, d))
        v *= G / np.linalg.norm(v)  # pseudo-gradients of norm G
        _, state = ef.apply(v, state, rng=0)
        worst = max(worst, float((state.residual ** 2).sum()))
    assert 0 < worst <= ef_residual_bound(q, G)


def test_local_compare_rows_and_a_missed_target_is_infinite():
    exp = get_experiment("local_compare")
    p = {k: v.default for k, v in exp.params.items()}
    p.update(d=16, sigma2=1.0, max_rounds=150, feedback="none")
    rows = exp.func(p, np.random.default_rng(0), None)
    got = {(r["metric"], r["method"]): r for r in rows}
    assert math.isfinite(got["rounds_to_eps", "uncompressed"]["value"])
    assert got["rounds_to_eps", "compressed"]["value"] == math.inf  # 2-bit without feedback: a floor
    assert "missed the target" in got["rounds_to_eps", "compressed"]["note"]
    # 2 bits a coordinate plus a float32 maximum per round, against 32 bits a coordinate
    r = got["rounds_to_eps", "uncompressed"]["value"]
    assert got["bytes", "uncompressed"]["value"] == r * 16 * 32 / 8
    p.update(feedback="ef21")
    rows = {(r["metric"], r["method"]): r["value"] for r in exp.func(p, np.random.default_rng(0), None)}
    assert rows["rounds_to_eps", "compressed"] <= 1.25 * rows["rounds_to_eps", "uncompressed"]


def test_demo_bytes_counts_each_method_s_messages():
    exp = get_experiment("demo_bytes")
    p = {k: v.default for k, v in exp.params.items()}
    p.update(d=64, chunk=16, k=4, max_steps=1500)
    rows = {(r["metric"], r["method"]): r for r in exp.func(p, np.random.default_rng(0), None)}
    steps = rows["steps_to_eps", "momentum_sgd"]["value"]
    assert math.isfinite(steps) and rows["bytes_to_eps", "momentum_sgd"]["value"] == steps * 64 * 32 / 8
    demo_steps = rows["steps_to_eps", "demo"]["value"]
    # 4 chunks of 16, 4 coefficients each: float32 value + 4-bit index
    assert rows["bytes_to_eps", "demo"]["value"] == demo_steps * 4 * 4 * (32 + 4) / 8
    assert rows["bytes_to_eps", "demo"]["compression"] == pytest.approx(64 * 32 / (16 * 36))
