"""Importance-sampled SGD and the registered 'is_*' experiments (small, fast settings)."""

import numpy as np
import pytest
import sklearn  # noqa: F401,E402  (a core dependency: missing fails, never skips)

from simcomm import UserError
from simcomm.experiments import get_experiment
from simcomm.models import mlp
from simcomm.optim import bytes_per_example, importance_sgd
from simcomm.sampling import staleness


def _toy(seed=12345):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((80, 5))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def test_uniform_weights_are_one_and_period_one_is_ideal():
    X, y = _toy()
    m = mlp((5, 6, 2))
    tu = importance_sgd(m, X, y, steps=20, lr=0.2, batch_size=8, proposal="uniform", record_every=5, rng=1)
    assert np.all(tu.max_weight[1:] == 1.0) and np.all(tu.score_bytes == 0)
    ts = importance_sgd(m, X, y, steps=20, lr=0.2, batch_size=8, proposal="stale", n=3,
                        staleness=staleness("period", period=1), record_every=5, rng=1)
    np.testing.assert_allclose(ts.trace_cov_actual, ts.trace_cov_ideal, rtol=1e-9)
    assert np.all(ts.mean_staleness == 0) and ts.train_loss[-1] < ts.train_loss[0]
    assert ts.score_bytes[-1] == 8 * 80 * (1 + 21)  # initial pass + one refresh per step (t = 0..20)


def test_stale_run_lies_between_ideal_and_uniform_for_small_lag():
    X, y = _toy()
    tr = importance_sgd(mlp((5, 6, 2)), X, y, steps=30, lr=0.2, batch_size=8, proposal="stale", n=2,
                        staleness=staleness("period", period=3), record_every=1, rng=2)
    assert np.all(tr.trace_cov_ideal <= tr.trace_cov_actual * (1 + 1e-12))  # C3: ideal is the minimum
    assert np.all(tr.mean_staleness <= 2)


def test_unweighted_changes_only_importance_sampled_runs():
    # the negative-control switch of is.training_smoothed_ties: uniform draws weigh 1 anyway (same run bit
    # for bit); dropping the weights of a non-uniform proposal changes the descent direction
    X, y = _toy()
    m = mlp((5, 6, 2))
    kw = dict(steps=20, lr=0.2, batch_size=8, record_every=5, rng=3)
    u0 = importance_sgd(m, X, y, proposal="uniform", **kw)
    u1 = importance_sgd(m, X, y, proposal="uniform", unweighted=True, **kw)
    np.testing.assert_array_equal(u0.x, u1.x)
    s0 = importance_sgd(m, X, y, proposal="stale", n=2, **kw)
    s1 = importance_sgd(m, X, y, proposal="stale", n=2, unweighted=True, **kw)
    assert not np.allclose(s0.x, s1.x)


def test_score_offset_control_moves_only_the_stale_proposal():
    # is.stale_between's negative control: scores stored under ids off by s. At s = 0 the run is the
    # default one bit for bit; with s = 1 the proposal is the stale one rolled by one example, so at
    # period 1 (fresh scores) it is no longer the ideal proposal and its Tr Cov is above the minimum
    X, y = _toy()
    m = mlp((5, 6, 2))
    kw = dict(steps=10, lr=0.2, batch_size=8, proposal="stale", n=2, staleness=staleness("period", period=1),
              record_every=1, rng=4)
    base = importance_sgd(m, X, y, **kw)
    np.testing.assert_array_equal(base.x, importance_sgd(m, X, y, score_offset=0, **kw).x)
    off = importance_sgd(m, X, y, score_offset=1, **kw)
    np.testing.assert_allclose(base.trace_cov_actual, base.trace_cov_ideal, rtol=1e-9)
    assert np.all(off.trace_cov_actual > off.trace_cov_ideal * (1 + 1e-6))
    unif = importance_sgd(m, X, y, score_offset=1, **{**kw, "proposal": "uniform"})
    np.testing.assert_array_equal(unif.x, importance_sgd(m, X, y, **{**kw, "proposal": "uniform"}).x)


def test_bytes_per_example():
    assert bytes_per_example(mlp((784, 256, 10))) == {"score": 8, "gradient": 8 * 203530}


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(proposal="idael"), "did you mean 'ideal'"),
        (dict(batch_size=81), r"batch_size must be an integer in \[1, 80\]"),
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
    "is_smoothing": dict(n_samples=200, warmup_steps=5, n_c=5, draws=20),
    "is_staleness": dict(n_samples=200, steps=12, period=4),
    "is_training": dict(n_samples=200, steps=12, record_every=4),
    "is_communication": dict(n_samples=200, steps=6, period=3),
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
        "is_estimator": {"bias_along_grad", "trace_cov_empirical", "trace_cov_sampled"},
        "is_smoothing": {"trace_cov_sampled", "trace_cov_increment"},
        "is_staleness": {"stale_position_max"},
        "is_training": {"final_train_loss"},
        "is_communication": {"bytes_per_example", "bytes_ratio"},
    }[name]
    assert expected <= metrics
    if name == "is_norm_trick":
        assert max(r["value"] for r in rows if r["metric"] == "norm_abs_err") < 1e-10
    if name == "is_smoothing":
        assert min(r["value"] for r in rows if r["metric"] == "trace_cov_increment_exact") >= -1e-12


def _exp(name, **kw):
    exp = get_experiment(name)
    params = exp.validate({"dataset": "digits", **kw}, "test")
    return exp.func(params, np.random.default_rng(12345), None)


def test_communication_counts_the_bytes_of_both_runs():
    # digits, 200 rows: 150 train after the split; D = 64*8 + 8 + 8*10 + 10 = 610 parameters
    rows = _exp("is_communication", n_samples=200, hidden=8, steps=6, period=3, batch_size=8, n=4)
    got = {r["method"]: r["value"] for r in rows if r["metric"] == "bytes_per_example"}
    up = {r["method"]: r["value"] for r in rows if r["metric"] == "uplink_bytes_per_example"}
    ratio = next(r for r in rows if r["metric"] == "bytes_ratio")
    n_train, D = ratio["n_train"], ratio["n_params"]
    assert D == 610
    # 4 workers with 2 examples each send one float64 gradient per step, after fetching the parameters
    assert up["gradient"] == 6 * 4 * 8 * D / (6 * 8)
    assert got["gradient"] == 2 * up["gradient"]
    # scores: the initial pass, then a full refresh at steps 0, 3 and 6 (the final monitor included);
    # each of the 4 rounds also broadcasts the parameters to the 4 workers
    assert up["score"] == 8 * n_train * (1 + 3) / (6 * 8)
    assert got["score"] == pytest.approx(up["score"] + 4 * 4 * 8 * D / (6 * 8), rel=1e-12)
    assert ratio["value"] == pytest.approx(got["score"] / got["gradient"], rel=1e-12)


def test_communication_ratio_matches_the_theory_model():
    # theory.importance.comm_bytes_ratio against the simulated counts (is.communication_crossover in miniature)
    import theory.importance as ti

    for period in (1, 4):
        rows = _exp("is_communication", n_samples=200, hidden=0, steps=8, period=period, batch_size=8, n=4)
        r = next(x for x in rows if x["metric"] == "bytes_ratio")
        pred = ti.comm_bytes_ratio(r["n_train"], r["n_params"], 4, period, 8)
        assert r["value"] == pytest.approx(pred, rel=1e-12)
        assert abs(ti.comm_bytes_ratio_uplink(r["n_train"], r["n_params"], 4, period, 8) / pred - 1) > 0.05


def test_smoothing_exact_trace_cov_is_monotone_in_c():
    # C5 (Chebyshev sum inequality), formerly the claim is.smoothing_monotone: the exact Tr Cov of
    # q proportional to |g_n| + c is non-decreasing in c, on real norms (identity, so a test, not a claim)
    rows = _exp("is_smoothing", n_samples=300, hidden=8, warmup_steps=30, n_c=9, c_min_rel=1e-3, c_max_rel=1e3,
                draws=2)
    inc = [r["value"] for r in rows if r["metric"] == "trace_cov_increment_exact"]
    assert len(inc) == 8 and min(inc) >= -1e-12 and max(inc) > 0


def test_smoothing_sampled_trace_cov_uses_theory_inputs():
    # the columns the claim is.smoothing_sampled passes to theory reproduce simcomm's exact Tr Cov
    import theory.importance as ti

    rows = _exp("is_smoothing", n_samples=300, hidden=8, warmup_steps=30, n_c=4, c_min_rel=0.1, c_max_rel=10.0,
                draws=400, batch_size=4)
    sampled = [r for r in rows if r["metric"] == "trace_cov_sampled"]
    pos_x = [r["value"] for r in rows if r["metric"] == "trace_cov_position_exact"]
    exact = np.array([ti.trace_cov_from_moment(r["weighted_sq"], r["gbar_sq"], 4) for r in sampled])
    # position 0 at c = 0 (the ideal proposal): theory's B4 at q* equals its C3 minimum
    assert pos_x[0] == pytest.approx(0.0, abs=1e-9)
    emp = np.array([r["value"] for r in sampled])
    np.testing.assert_allclose(emp, exact, rtol=0.25)  # K = 400 draws: a few % Monte Carlo error


def test_estimator_columns_feed_the_closed_forms():
    # ideal proposal: B4 from weighted_sq equals the C3 minimum from norm_mean (Cauchy-Schwarz equality);
    # uniform proposal: B4 equals theory's uniform Tr Cov; both against simcomm.sampling's exact value
    import theory.importance as ti

    rows = _exp("is_estimator", n_samples=200, hidden=8, draws=20, warmup_steps=5, batch_size=4)
    samp = {r["proposal"]: r for r in rows if r["metric"] == "trace_cov_sampled"}
    exact = {r["proposal"]: r["value"] for r in rows if r["metric"] == "trace_cov_exact"}
    i = next(r for r in rows if r["metric"] == "trace_cov_ideal_sampled")
    u = next(r for r in rows if r["metric"] == "trace_cov_uniform_sampled")
    assert ti.trace_cov_minimum(i["norm_mean"], i["gbar_sq"], 4) == pytest.approx(exact["ideal"], rel=1e-9)
    assert ti.trace_cov_from_moment(samp["ideal"]["weighted_sq"], i["gbar_sq"], 4) == pytest.approx(exact["ideal"],
                                                                                                     rel=1e-9)
    assert ti.trace_cov_uniform(u["norm_sq_mean"], u["gbar_sq"], 4) == pytest.approx(exact["uniform"], rel=1e-9)
    for name, r in samp.items():  # B4 from the row's columns, every proposal
        assert ti.trace_cov_from_moment(r["weighted_sq"], r["gbar_sq"], 4) == pytest.approx(exact[name], rel=1e-9)
    # the sampled values carry only their own closed form's inputs (the judge groups by the others)
    assert set(i) - {"metric", "value", "proposal"} == {"norm_mean", "gbar_sq"}


def test_unweighted_control_is_biased():
    # the negative control of is.unbiased: without the 1/(N q_I) weights the ideal proposal is biased
    rows = _exp("is_estimator", n_samples=300, hidden=8, draws=200, warmup_steps=30, reweight="none")
    bias = {r["proposal"]: r["value"] for r in rows if r["metric"] == "bias_along_grad"}
    assert abs(bias["uniform"]) < 0.1 < abs(bias["ideal"])


def test_smoothing_empirical_increments_track_the_exact_ones():
    # common random numbers across c: the sampled increments follow the exact ones; K = 400 draws give
    # a Monte Carlo error of a few % of T_uniform - T_ideal, so 0.15 is > 3 standard errors
    rows = _exp("is_smoothing", n_samples=300, hidden=8, warmup_steps=30, n_c=4, c_min_rel=0.1, c_max_rel=10.0,
                draws=400)
    emp = [r["value"] for r in rows if r["metric"] == "trace_cov_increment"]
    exact = [r["value"] for r in rows if r["metric"] == "trace_cov_increment_exact"]
    assert len(emp) == 3 and min(exact) > 0
    np.testing.assert_allclose(emp, exact, atol=0.15)


def test_estimator_uses_common_random_numbers():
    # same uniforms for every proposal: with the uniform proposal twice (smoothing huge), the draws agree
    rows = _exp("is_estimator", n_samples=200, hidden=8, draws=30, warmup_steps=5, smoothing_rel=1e12)
    emp = {r["proposal"]: r["value"] for r in rows if r["metric"] == "trace_cov_empirical"}
    assert emp["smoothed"] == pytest.approx(emp["uniform"], rel=1e-6)
