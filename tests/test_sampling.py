"""Proposals, importance-sampled minibatches, Tr Cov identities and stale worker scores."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcomm import UserError
from simcomm.models import gradient, init_params, mlp, per_example_gradients
from simcomm.models._nn import per_example_grad_norms, weighted_gradient
from simcomm.sampling import (
    empirical_trace_cov,
    ideal_proposal,
    norm_proposal,
    sample_minibatch,
    stale_init,
    stale_update,
    staleness,
    trace_cov,
    trace_cov_ideal,
    uniform_proposal,
)

N_SIGMA = 5  # a true hypothesis fails a single comparison with probability < 1e-6


def _grads(n=40, d=3, seed=12345):
    """Per-example vectors with heavy-tailed norms (so proposals differ a lot)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * rng.pareto(1.5, size=(n, 1)) + 0.3


def _proposals(G, seed=12345):
    rng = np.random.default_rng(seed)
    a = np.linalg.norm(G, axis=1)
    stale = a * np.exp(rng.standard_normal(a.size))  # deliberately wrong scores
    return {
        "uniform": uniform_proposal(a.size),
        "ideal": ideal_proposal(a),
        "smoothed": norm_proposal(a, smoothing=1.0),
        "stale": norm_proposal(stale),
        "stale_smoothed": norm_proposal(stale, smoothing=0.5),
    }


def _direct_trace(G, q):
    """E||g_I/(N q_I) - g_bar||^2 summed over the N outcomes (the definition, B4)."""
    n = G.shape[0]
    dev = G / (n * q[:, None]) - G.mean(axis=0)
    return float(np.sum(q * np.sum(dev**2, axis=1)))


@pytest.mark.parametrize("name", ["uniform", "ideal", "smoothed", "stale", "stale_smoothed"])
def test_estimator_is_unbiased(name):
    G = _grads()
    q = _proposals(G)[name]
    n, K = G.shape[0], 200_000
    mb = sample_minibatch(q, K, max_batch=K, rng=np.random.default_rng(12345))
    est = G[mb.idx] * mb.weights[:, None]  # g_I / (N q_I)
    gbar = G.mean(axis=0)
    # per-coordinate standard error of the mean of K i.i.d. draws: sqrt((E[x^2] - gbar^2)/K)
    second = np.sum(q[:, None] * (G / (n * q[:, None])) ** 2, axis=0)
    se = np.sqrt((second - gbar**2) / K)
    assert np.all(np.abs(est.mean(axis=0) - gbar) <= N_SIGMA * se)


def test_mlp_minibatch_estimator_is_unbiased_for_stale_proposal():
    rng = np.random.default_rng(12345)
    model = mlp((5, 6, 3), l2=0.01)
    X, y = rng.standard_normal((30, 5)), rng.integers(0, 3, 30)
    th_old = init_params(model, rng=rng)
    th = th_old + 0.3 * rng.standard_normal(model.n_params)
    q = norm_proposal(per_example_grad_norms(model, th_old, X, y))  # stale: scores at older parameters
    G = per_example_gradients(model, th, X, y)
    gbar, n, M, K = G.mean(axis=0), 30, 8, 4000
    total = np.zeros(model.n_params)
    for _ in range(K):
        mb = sample_minibatch(q, M, rng=rng)
        total += weighted_gradient(model, th, X[mb.idx], y[mb.idx], mb.weights / M)
    second = np.sum(q[:, None] * (G / (n * q[:, None])) ** 2, axis=0)
    se = np.sqrt((second - gbar**2) / (M * K))
    np.testing.assert_allclose(gbar, gradient(model, th, X, y), rtol=1e-12, atol=1e-14)
    assert np.all(np.abs(total / K - gbar) <= N_SIGMA * se + 1e-12)


@pytest.mark.parametrize("name", ["uniform", "ideal", "smoothed", "stale", "stale_smoothed"])
def test_exact_trace_cov_matches_definition_and_sampling(name):
    G = _grads()
    q = _proposals(G)[name]
    a, gbar = np.linalg.norm(G, axis=1), G.mean(axis=0)
    t = trace_cov(a, q, gbar)
    assert t == pytest.approx(_direct_trace(G, q), rel=1e-12)
    assert trace_cov(a, q, gbar, batch_size=4) == pytest.approx(t / 4, rel=1e-14)  # C4
    n, K = G.shape[0], 200_000
    mb = sample_minibatch(q, K, max_batch=K, rng=np.random.default_rng(12345))
    est = G[mb.idx] * mb.weights[:, None]  # g_I / (N q_I)
    # SE of the mean of X = ||g_hat - g_bar||^2: Var X = E[X^2] - T^2, exact over the N outcomes
    x = np.sum((G / (n * q[:, None]) - gbar) ** 2, axis=1)
    se = np.sqrt((np.sum(q * x**2) - t**2) / K)
    assert abs(empirical_trace_cov(est, gbar) - t) <= N_SIGMA * se


def test_ideal_closed_form_and_gain_is_variance_of_norms():
    G = _grads()
    a, gbar = np.linalg.norm(G, axis=1), G.mean(axis=0)
    t_star = trace_cov_ideal(a, gbar)
    assert trace_cov(a, ideal_proposal(a), gbar) == pytest.approx(t_star, rel=1e-12)
    assert trace_cov(a, uniform_proposal(a.size), gbar) - t_star == pytest.approx(a.var(), rel=1e-10)  # C3


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 30))
def test_ideal_is_minimal_and_smoothing_is_monotone(seed, n):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, 4)) * rng.pareto(1.0, size=(n, 1))
    a, gbar = np.linalg.norm(G, axis=1), G.mean(axis=0)
    t_star = trace_cov_ideal(a, gbar)
    scale = np.sum(a**2) / n**2  # size of the terms; rounding is a few ulps of it
    q = rng.dirichlet(np.ones(n))
    assert trace_cov(a, q, gbar) >= t_star - 1e-12 * scale
    if np.all(a > 0):
        cs = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 12) * a.mean()])
        ts = [trace_cov(a, norm_proposal(a, smoothing=c), gbar) for c in cs]
        assert np.all(np.diff(ts) >= -1e-12 * scale)  # C5
        assert ts[0] == pytest.approx(t_star, rel=1e-9, abs=1e-12 * scale)


def test_sample_minibatch_frequencies_and_weights():
    q = np.array([0.1, 0.2, 0.3, 0.4])
    K = 100_000
    mb = sample_minibatch(q, K, max_batch=K, rng=np.random.default_rng(12345))
    counts = np.bincount(mb.idx, minlength=4)
    assert np.all(np.abs(counts - K * q) <= N_SIGMA * np.sqrt(K * q * (1 - q)))  # binomial SE
    np.testing.assert_allclose(mb.weights, 1.0 / (4 * q[mb.idx]))
    assert mb.max_weight == pytest.approx(2.5)
    assert sample_minibatch(uniform_proposal(10), 10, rng=np.random.default_rng(12345)).max_weight == 1.0


def test_smoothing_bounds_max_weight():
    a = np.array([0.0, 1.0, 10.0, 100.0])
    c = 2.0
    w = 1.0 / (a.size * norm_proposal(a, smoothing=c))
    assert w.max() == pytest.approx((a.sum() + a.size * c) / (a.size * c))  # (S + N c)/(N c), notes (f) 6


def test_period_schedule_refreshes_every_p_steps():
    n, P = 12, 3
    shards = [np.arange(0, 6), np.arange(6, 12)]
    st_ = stale_init(np.zeros(n), shards)
    sched = staleness("period", period=P)
    for t in range(10):
        prev = st_
        st_ = stale_update(st_, t, lambda idx, t=t: np.full(idx.size, float(t)), sched)
        assert np.all(st_.scores == P * (t // P)) and np.all(st_.computed_at == P * (t // P))
        assert prev.scores is not st_.scores  # pure update: the old state is not modified
    assert st_.n_sent == n * (1 + 4)  # initial pass + refreshes at t = 0, 3, 6, 9


def test_period_one_is_fresh_and_delay_schedule_lags():
    n = 20
    shards = [np.arange(i, n, 4) for i in range(4)]
    st_ = stale_init(np.zeros(n), shards)
    rng = np.random.default_rng(12345)
    sched = staleness("delay", mean_delay=5.0)
    lags = []
    for t in range(300):
        st_ = stale_update(st_, t, lambda idx, t=t: np.full(idx.size, float(t)), sched, rng=rng)
        assert np.all(st_.scores == st_.computed_at)  # every score is the one computed at its step
        assert np.all(st_.computed_at <= t)
        lags.append(np.mean(t - st_.computed_at))
    # a job started at s delivers at s + D and the next starts then: lag in [D, 2D); mean D = 5
    assert 3.0 < np.mean(lags[50:]) < 12.0
    st1 = stale_init(np.zeros(n), shards)
    st1 = stale_update(st1, 7, lambda idx: np.full(idx.size, 7.0), staleness("period", period=1))
    assert np.all(st1.scores == 7.0)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: norm_proposal([1.0, 2.0], smoothing=-0.1), "smoothing"),
        (lambda: norm_proposal([0.0, 2.0]), "q_i = 0 would bias"),
        (lambda: norm_proposal([np.nan, 2.0], smoothing=1.0), "finite"),
        (lambda: staleness("period", period=0), "refresh period"),
        (lambda: staleness("period", period=-3), "refresh period"),
        (lambda: staleness("delay", mean_delay=0.5), "mean_delay"),
        (lambda: staleness("perod"), "did you mean 'period'"),
        (lambda: sample_minibatch([0.5, 0.5], 3), "largest allowed minibatch"),
        (lambda: sample_minibatch([0.5, 0.5], 0), "between 1"),
        (lambda: sample_minibatch([1.0, 0.0], 1), "positive probabilities"),
        (lambda: uniform_proposal(0), "positive"),
        (lambda: stale_init(np.zeros(3), [np.array([0, 1])]), "covering every example"),
    ],
)
def test_bad_input_is_one_line_user_error(call, match):
    with pytest.raises(UserError, match=match) as exc:
        call()
    assert "\n" not in str(exc.value)
