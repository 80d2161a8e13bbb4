"""Delayed and incremental compressed GD on logistic regression (simcomm/experiments/urq_logistic.py)."""

import math

import numpy as np
import pytest

import theory.urq as th
from simcomm.experiments import get_experiment
from simcomm.experiments.urq_logistic import seed_condition


def _run(name, rng=7, **params):
    from simcomm.backends import get_backend

    exp = get_experiment(name)
    p = exp.validate(params, "test")
    return exp.func(p, np.random.default_rng(rng), get_backend("numpy"))


@pytest.mark.parametrize("tau", [0, 1, 5, 16])
def test_seed_condition_is_the_theory_bound(tau):
    # the experiments' step duplicates theory.urq.delay_stepsize (simcomm never imports theory)
    assert seed_condition(tau, 3.0) == pytest.approx(th.delay_stepsize(tau, 3.0), rel=1e-15)


def test_linear_tail_drop_is_ten_x_over_the_experiments_half_horizon():
    # the horizon K = 2 ceil(ln 10/(mu lr)) makes the witness drop about 0.1 over its second half
    mu, lr = 0.1, 0.05
    tail = math.ceil(math.log(10) / (mu * lr))
    assert 0.09 < th.linear_tail_drop(mu, lr, tail) <= 0.1


def test_delayed_ternary_converges_linearly_and_heterogeneous_shards_stall():
    row = _run("delay_logistic_rate", quantizer="ternary", tau=2, delay="uniform")[0]
    bound = th.linear_tail_drop(row["mu"], row["lr"], row["tail_steps"])
    assert row["value"] < 0.5 * bound  # the claim's side
    floor = _run("delay_logistic_rate", quantizer="ternary", tau=2, delay="uniform", heterogeneous=True)[0]
    assert floor["value"] > 2.0 * bound  # the control's side: a floor from heterogeneous shards


def test_iag_converges_linearly_with_exact_gradients():
    row = _run("iag_logistic_rate", quantizer="none", n=4, order="random")[0]
    assert row["value"] < 0.5 * th.linear_tail_drop(row["mu"], row["lr"], row["tail_steps"])


def test_threshold_on_logistic_is_above_the_seed_condition():
    row = _run("delay_logistic_threshold", tau=1, steps=500, steps_per_tau=100, iters=4)[0]
    assert row["value"] > th.delay_stepsize(1, row["L"])
    assert row["mu"] == 0.1


@pytest.mark.parametrize("name", ["delay_logistic_linear", "delay_logistic_threshold", "delay_logistic_pep_certified",
                                  "iag_logistic_linear", "urq_logistic_beta_iters", "iag_logistic_iters"])
def test_logistic_specs_load_with_a_substantive_control(name):
    from simcomm.spec import find_specs, load, sims_dir

    # delay_logistic_threshold waits in sims/extra until its substantive control decides (see its header)
    path = next(p for p in (*find_specs(), *find_specs(sims_dir() / "extra")) if p.stem == name)
    for quick in (True, False):
        spec = load(path, quick=quick)
        assert any(c.set for c in spec.claim.controls), f"{name} has no control that changes the experiment"


def test_iterations_bounds_are_the_step_formula():
    # tau = 0, c = 1: the IAG prediction is the (1 + beta) form; large N: about sqrt(2) alpha N K0
    assert th.iterations_iag(52.0, 3.0, 0) == th.iterations_beta(3.0, 52.0) == 156.0
    assert th.iterations_iag(10.0, 2.0, 3, c=0.5) == pytest.approx(10.0 / (0.5 * seed_condition(3, 2.0)), rel=1e-14)
    assert th.iterations_iag(1.0, 1.0, 999) / 1000 == pytest.approx(math.sqrt(2), rel=1e-3)


def test_iterations_grow_with_beta_and_miss_is_a_failure():
    rows = _run("urq_logistic_beta_iters", compressors="natural,qsgd:s=1,rand_k:k=4", eps=1e-3)
    by = {r["quantizer"]: r for r in rows}
    assert [by[q]["alpha"] for q in ("natural", "qsgd:s=1", "rand_k:k=4")] == sorted(r["alpha"] for r in rows)
    K = [by[q]["value"] for q in ("natural", "qsgd:s=1", "rand_k:k=4")]
    assert K[0] < K[1] < K[2]  # a larger beta needs more iterations at the step 1/((1 + beta) L)
    for r in rows:  # inside the claim's factor-2 band around (1 + beta) K0
        assert 0.5 < r["value"] / th.iterations_beta(r["alpha"], r["K0"]) < 2.0
    # the control's side: at the unscaled step 1/L, rand-k's iterations fall below half of (1 + beta) K0
    fast = _run("urq_logistic_beta_iters", compressors="rand_k:k=4", eps=1e-3, step="uncompressed")[0]
    assert fast["value"] < 0.5 * th.iterations_beta(fast["alpha"], fast["K0"])


def test_a_run_that_misses_eps_is_infinite_not_dropped():
    from simcomm.compress import Identity
    from simcomm.experiments.urq_logistic import _iterations_to_eps
    from simcomm.models import make_problem
    from simcomm.optim import compressed_gd

    p = make_problem("logistic_breast_cancer", n=1, heterogeneous=False, l2=0.1)
    tr = compressed_gd(p, Identity(), lr=1.0 / p.L, steps=3, mode="aggregate", rng=0)
    it, note = _iterations_to_eps(tr, 1e-12, 3)
    assert math.isinf(it) and "did not reach eps in 3 steps" in note


def test_iag_iterations_scale_with_the_step_and_frozen_memory_fails():
    row = _run("iag_logistic_iters", quantizer="none", n=4, heterogeneous=False, eps=1e-3)[0]
    pred = th.iterations_iag(row["K0"], row["alpha"], row["tau"])
    assert 0.9 < row["value"] / pred < 1.1  # exact IAG: iterations track 1/step
    fast = _run("iag_logistic_iters", quantizer="none", n=4, heterogeneous=False, eps=1e-3, step="no_delay")[0]
    assert fast["value"] < 0.5 * pred  # the staleness-blind step: iterations no longer grow with N
    frozen = _run("iag_logistic_iters", quantizer="none", n=4, heterogeneous=False, eps=1e-3, memory="frozen")[0]
    assert math.isinf(frozen["value"])
