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
                                  "iag_logistic_linear"])
def test_logistic_specs_load_with_a_substantive_control(name):
    from simcomm.spec import find_specs, load, sims_dir

    # delay_logistic_threshold waits in sims/extra until its substantive control decides (see its header)
    path = next(p for p in (*find_specs(), *find_specs(sims_dir() / "extra")) if p.stem == name)
    for quick in (True, False):
        spec = load(path, quick=quick)
        assert any(c.set for c in spec.claim.controls), f"{name} has no control that changes the experiment"
