"""Asynchrony in wall clock, the bits trade-off beyond QSGD and the local delay threshold (urq_delay.md)."""

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from simcomm.experiments import get_experiment
from simcomm.experiments.khirirat_async import async_step, clock_schedule_of_run
from simcomm.network import Clock, Straggler
from simcomm.optim import clock_schedules
from theory import urq

ROOT = Path(__file__).resolve().parents[1]


def _defaults(name):
    return {k: v.default for k, v in get_experiment(name).params.items()}


def test_clock_schedule_of_run_is_the_runs_schedule():
    clock = Clock(Straggler("shifted_exp", 1e-3, 1e-3), up=1e-4, down=1e-4)
    W, T = clock_schedules(clock, 4, 200, 1, 123)
    w, tau, t = clock_schedule_of_run(clock, 4, 200, 123)
    assert np.array_equal(W[0], w) and np.array_equal(T[0], tau)
    assert np.all(np.diff(t) >= 0)


def test_async_step_is_n_times_the_seed_condition():
    assert async_step(4, 0, 2.0) == pytest.approx(4 * urq.delay_stepsize(0, 2.0))
    assert async_step(8, 40, 1.0) < async_step(8, 7, 1.0)


@pytest.mark.parametrize("straggler", ["shifted_exp", "constant"])
def test_async_wall_clock_rows(straggler):
    e = get_experiment("async_wall_clock")
    params = {**_defaults("async_wall_clock"), "n": 2, "eps": 1e-2, "straggler": straggler}
    (row,) = e.func(params, np.random.default_rng(0), None)
    assert row["metric"] == "time_ratio" and math.isfinite(row["value"]) and row["value"] > 0
    assert row["async_time"] == pytest.approx(row["value"] * row["sync_time"])
    if straggler == "constant":  # no stragglers: a round costs what a synchronous step costs
        assert row["pred_round_ratio"] == pytest.approx(1.0, abs=0.01)


def test_async_condition_step_shrinks_with_the_largest_delay():
    e = get_experiment("async_wall_clock")
    params = {**_defaults("async_wall_clock"), "n": 2, "eps": 1e-2, "step_rule": "condition"}
    (row,) = e.func(params, np.random.default_rng(0), None)
    # lr_sync = 1/(alpha L), so the certified async step is async_step(n, tau_max, alpha L)
    assert row["lr_async"] == pytest.approx(async_step(2, row["tau_max"], 1.0 / row["lr_sync"]))
    assert row["lr_async"] < row["lr_sync"]


def test_bits_family_rows_and_default_unchanged():
    e = get_experiment("urq_bits_precision")
    base = {**_defaults("urq_bits_precision"), "problem": "ridge", "levels": "4,16,64"}
    plain = e.func(base, np.random.default_rng(1), None)
    rows = e.func({**base, "family": "all"}, np.random.default_rng(1), None)
    assert [r["metric"] for r in plain] == ["pred_over_best", "none_over_best"]
    assert rows[:2] == plain  # the family adds rows after the QSGD ones, from the same stream
    fam = {r["metric"]: r for r in rows[2:]}
    assert set(fam) == {"family_pred_over_best", "sign_ef_over_best"}
    assert fam["family_pred_over_best"]["value"] >= 1.0
    assert fam["sign_ef_over_best"]["value"] < 1.0  # sign with error feedback needs the fewest bits on ridge


def test_local_threshold_constant_is_the_hessian_at_the_minimiser():
    from simcomm.models import binary_features, make_problem, sigmoid

    spec = tomllib.loads((ROOT / "sims" / "delay_logistic_local_threshold.toml").read_text())
    l2 = spec["params"]["l2"]
    p = make_problem("logistic_breast_cancer", n=1, heterogeneous=False, l2=l2)
    A, y = binary_features("breast_cancer")
    z = y * (A @ p.x_star)
    H = (A * (sigmoid(z) * sigmoid(-z) / len(y))[:, None]).T @ A + l2 * np.eye(p.d)
    assert spec["claim"]["bound_args"]["L_local"] == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=1e-9)


def test_new_bounds():
    assert urq.delay_threshold_local(1, 1.0) == pytest.approx(1.0)
    assert urq.async_time_ratio(0.8) == 0.8 and urq.async_condition_slowdown(2.0) == 2.0
    assert urq.sign_ef_bits_ratio(0.6) == 0.6
