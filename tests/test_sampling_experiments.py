"""Importance-sampled SGD and the registered 'is_*' experiments (small, fast settings)."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.experiments import get_experiment
from simcomm.models import mlp
from simcomm.optim import bytes_per_example, importance_sgd
from simcomm.sampling import staleness

pytest.importorskip("sklearn", reason="the data extra is missing: pip install 'simcomm[data]'")


def _toy(seed=12345):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((80, 5))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def test_uniform_weights_are_one_and_period_one_is_ideal():
    X, y = _toy()
    m = mlp((5, 6, 2))
    tu = importance_sgd(m, X, y, steps=20, lr=0.2, batch_size=8, proposal="uniform", eval_every=5, rng=1)
    assert np.all(tu.max_weight[1:] == 1.0) and np.all(tu.score_bytes == 0)
    ts = importance_sgd(m, X, y, steps=20, lr=0.2, batch_size=8, proposal="stale", n_workers=3,
                        schedule=staleness("period", period=1), eval_every=5, rng=1)
    np.testing.assert_allclose(ts.trace_cov["actual"], ts.trace_cov["ideal"], rtol=1e-9)
    assert np.all(ts.mean_staleness == 0) and ts.train_loss[-1] < ts.train_loss[0]
    assert ts.score_bytes[-1] == 8 * 80 * (1 + 21)  # initial pass + one refresh per step (t = 0..20)


def test_stale_run_lies_between_ideal_and_uniform_for_small_lag():
    X, y = _toy()
    tr = importance_sgd(mlp((5, 6, 2)), X, y, steps=30, lr=0.2, batch_size=8, proposal="stale", n_workers=2,
                        schedule=staleness("period", period=3), eval_every=1, rng=2)
    assert np.all(tr.trace_cov["ideal"] <= tr.trace_cov["actual"] * (1 + 1e-12))  # C3: ideal is the minimum
    assert np.all(tr.mean_staleness <= 2)


def test_bytes_per_example():
    assert bytes_per_example(mlp((784, 256, 10))) == {"score": 8, "gradient": 8 * 203530}


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(proposal="idael"), "did you mean 'ideal'"),
        (dict(batch_size=81), "between 1 and 80"),
        (dict(smoothing=-1.0), "smoothing"),
        (dict(lr=0.0), "lr"),
    ],
)
def test_bad_input(kw, match):
    X, y = _toy()
    args = dict(steps=2, lr=0.1, batch_size=4) | kw
    with pytest.raises(UserError, match=match):
        importance_sgd(mlp((5, 2)), X, y, **args)


SMALL = {
    "is_norm_trick": dict(batch=16),
    "is_estimator": dict(n_samples=200, draws=20, warmup_steps=5),
    "is_smoothing": dict(n_samples=200, warmup_steps=5, n_c=5),
    "is_staleness": dict(n_samples=200, steps=12, period=4),
    "is_training": dict(n_samples=200, steps=12, eval_every=4),
    "is_communication": dict(),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_experiment_rows(name):
    exp = get_experiment(name)
    params = exp.validate({"dataset": "digits", "hidden": 8, **SMALL[name]}, "test")
    rows = exp.func(params, np.random.default_rng(12345), None)
    assert rows and all({"metric", "value"} <= set(r) for r in rows)
    assert all(isinstance(r["value"], float) for r in rows)
    metrics = {r["metric"] for r in rows}
    expected = {
        "is_norm_trick": {"norm_abs_err"},
        "is_estimator": {"bias_along_grad", "ideal_vs_closed_form", "trace_cov_over_ideal"},
        "is_smoothing": {"trace_cov_increment"},
        "is_staleness": {"stale_position_max"},
        "is_training": {"final_train_loss"},
        "is_communication": {"bytes_per_example"},
    }[name]
    assert expected <= metrics
    if name == "is_norm_trick":
        assert max(r["value"] for r in rows if r["metric"] == "norm_abs_err") < 1e-10
    if name == "is_smoothing":
        assert min(r["value"] for r in rows if r["metric"] == "trace_cov_increment") >= -1e-12
