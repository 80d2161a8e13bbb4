"""Mean estimation under a bit budget (model F1 [N]): exact formulas, unbiasedness, oracle, bad input."""

import itertools

import numpy as np
import pytest

from simcomm import UserError
from simcomm.estimate import SCHEMES, estimate_mean, index_budget, mean_estimation_mse
from simcomm.experiments import get_experiment
from simcomm.models import skewed_profile, sparse_heavy_tailed, sparse_skewed_model
from simcomm.models._sparse_skewed import sample_bernoulli
from tests.conftest import N_SIGMA
from tests.naive_sparsify import naive_mean_estimation_sq_errors
from theory import rtopk as th


def test_index_budget():
    assert index_budget(100, 1024) == 10
    with pytest.raises(UserError, match="smaller than one index"):
        index_budget(10, 1025)
    with pytest.raises(UserError, match="d >= 2"):
        index_budget(10, 1)
    assert th.index_budget(100, 1024) == 10


@pytest.mark.parametrize("m,s,alpha", [(40, 10.0, 1.0), (8, 8.0, 2.0), (100, 3.5, 0.0), (64, 16.0, 3.0)])
def test_profile_sums_to_s_capped_sorted_and_theory_agrees(m, s, alpha):
    p = skewed_profile(m, s, alpha)
    assert p.shape == (m,)
    assert abs(p.sum() - s) <= 1e-12 * s
    assert np.all(p <= 1.0) and np.all(p > 0) and np.all(np.diff(p) <= 1e-15)
    np.testing.assert_array_equal(p, th.skewed_profile(m, s, alpha))


def test_poisson_binomial_matches_enumeration():
    p = np.array([0.9, 0.3, 0.5, 0.05, 1.0])
    pmf = np.zeros(p.size + 1)
    for bits in itertools.product([0, 1], repeat=p.size):
        b = np.array(bits)
        pmf[b.sum()] += np.prod(np.where(b == 1, p, 1 - p))
    np.testing.assert_allclose(th.poisson_binomial_pmf(p), pmf, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n,d,s,k,alpha", [(20, 1024, 5.0, 10, 1.0), (50, 1000, 10.0, 40, 0.5), (5, 64, 12.0, 18, 1.5)])
def test_monte_carlo_matches_exact_mse(n, d, s, k, alpha):
    # The squared errors are i.i.d. over replicates: the mean is within N_SIGMA standard errors.
    theta = skewed_profile(th.support_size(d, s, 4.0), s, alpha)
    err = mean_estimation_mse(theta, n, k, d=d, replicates=4000, rng=12345, schemes=["rtop_k"])["rtop_k"]
    exact = th.mse_random_subset_exact(n, d, s, k, alpha, 4.0)
    assert abs(err.mean() - exact) <= N_SIGMA * err.std(ddof=1) / np.sqrt(err.size)
    assert exact <= th.mse_random_subset_bound(n, d, s, k)


@pytest.mark.parametrize("n,d,s,k,alpha", [(5, 1024, 5.0, 40, 0.5), (7, 1024, 2.0, 30, 0.3), (3, 64, 12.0, 18, 1.5)])
def test_monte_carlo_matches_exact_top_and_rand_mse_and_gap(n, d, s, k, alpha):
    # top-k' (squared bias + variance/n, truncated Poisson-binomial) and rand-k' ((s d/k' - ||theta||^2)/n)
    # and the paired gap top - subset: each Monte Carlo mean within N_SIGMA standard errors.
    theta = skewed_profile(th.support_size(d, s, 4.0), s, alpha)
    err = mean_estimation_mse(theta, n, k, d=d, replicates=6000, rng=12345)
    want = {"top_k": th.mse_top_subset_exact(n, d, s, k, alpha, 4.0),
            "rand_k": th.mse_rand_coords_exact(n, d, s, k, alpha, 4.0)}
    for scheme, exact in want.items():
        e = err[scheme]
        assert abs(e.mean() - exact) <= N_SIGMA * e.std(ddof=1) / np.sqrt(e.size) + 1e-12, scheme
    gap = err["top_k"] - err["rtop_k"]
    assert abs(gap.mean() - th.mse_gap_top_minus_subset(n, d, s, k, alpha, 4.0)) <= N_SIGMA * gap.std(ddof=1) / np.sqrt(
        gap.size)


def test_crossover_is_where_the_gap_changes_sign():
    for s, k, alpha in [(5.0, 10, 0.5), (20.0, 40, 1.0), (20.0, 10, 1.5)]:
        ns = th.crossover_nodes(1024, s, k, alpha, 4.0)
        assert 1 < ns < 1e4
        assert th.mse_gap_top_minus_subset(ns / 2, 1024, s, k, alpha, 4.0) < 0 < th.mse_gap_top_minus_subset(
            2 * ns, 1024, s, k, alpha, 4.0)
        assert th.mse_gap_top_minus_subset(ns, 1024, s, k, alpha, 4.0) == pytest.approx(0.0, abs=1e-9)
    # k' >= support: top-k' sends every observed coordinate, so it is unbiased: no crossover
    b, _ = th.topk_mse_terms(1024, 2.0, 100, 1.0, 4.0)
    assert b == 0.0 and th.crossover_nodes(1024, 2.0, 100, 1.0, 4.0) in (0.0, np.inf)


@pytest.mark.parametrize("scheme", ["rtop_k", "rand_k"])
def test_unbiased_schemes(scheme):
    # Mean of R independent estimates per coordinate, within N_SIGMA of its standard error.
    model = sparse_skewed_model(200, 6.0, alpha=1.0, rng=12345)
    rng = np.random.default_rng(12345)
    X = sample_bernoulli(model, 10, rng=rng, size=(3000,))
    est = estimate_mean(X, 16, scheme=scheme, rng=rng)  # k' = 2
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    dev = np.abs(est.mean(axis=0) - model.theta)
    assert np.all(dev <= N_SIGMA * se + 1e-12)


def test_top_k_scheme_is_the_skew_prefix():
    X = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool)
    est = estimate_mean(X, 4, scheme="top_k", rng=0, order=[2, 0, 1, 3])  # k' = 2
    np.testing.assert_array_equal(est, [0.5, 0.5, 1.0, 0.0])


def test_dense_and_support_only_simulations_agree():
    # mean_estimation_mse simulates only the support; estimate_mean on dense draws of the same model
    # must have the same MSE (two independent Monte Carlo means: N_SIGMA combined standard errors).
    model = sparse_skewed_model(500, 5.0, alpha=1.0, rng=12345)
    rng = np.random.default_rng(12345)
    X = sample_bernoulli(model, 20, rng=rng, size=(1500,))
    for scheme in SCHEMES:
        dense = ((estimate_mean(X, 27, scheme=scheme, rng=rng, order=model.order) - model.theta) ** 2).sum(-1)
        sup = mean_estimation_mse(model.theta, 20, 27, replicates=1500, rng=rng, schemes=[scheme])[scheme]
        se = np.hypot(dense.std(ddof=1), sup.std(ddof=1)) / np.sqrt(1500)
        assert abs(dense.mean() - sup.mean()) <= N_SIGMA * se, scheme


def test_vectorised_matches_per_node_loop_oracle():
    theta = np.zeros(300)
    theta[:20] = skewed_profile(20, 5.0, 1.0)
    rng = np.random.default_rng(12345)
    loop = naive_mean_estimation_sq_errors(theta, 10, 2, 300, rng)
    fast = mean_estimation_mse(theta, 10, 18, replicates=3000, rng=rng, schemes=["rtop_k"])["rtop_k"]  # k' = 2
    se = np.hypot(loop.std(ddof=1) / np.sqrt(loop.size), fast.std(ddof=1) / np.sqrt(fast.size))
    assert abs(loop.mean() - fast.mean()) <= N_SIGMA * se


def test_sparse_heavy_tailed_vectors():
    x = sparse_heavy_tailed(50, 7, alpha=2.0, rng=12345, size=(3, 4))
    assert x.shape == (3, 4, 50)
    assert np.all((x != 0).sum(-1) == 7)
    y = sparse_heavy_tailed(50, 7, alpha=1.0, profile="powerlaw", rng=1)
    np.testing.assert_allclose(np.sort(np.abs(y[y != 0]))[::-1], 1.0 / np.arange(1, 8))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sparse_skewed_model(10, 11.0, rng=0), "s = 11.0 is out of range"),
        (lambda: sparse_skewed_model(10, 2.0, support=0.5, rng=0), "support"),
        (lambda: estimate_mean(np.ones((2, 8), bool), 2, scheme="rtop_k", rng=0), "smaller than one index"),
        (lambda: estimate_mean(np.ones((2, 8), bool), 6, scheme="bogus", rng=0), "unknown scheme"),
        (lambda: estimate_mean(np.ones((2, 8), bool), 6, scheme="top_k", rng=0), "order="),
        (lambda: mean_estimation_mse([0.5, 1.5], 2, 4, replicates=2, rng=0), r"\[0, 1\]"),
        (lambda: mean_estimation_mse([0.5], 2, 40, d=64, replicates=0, rng=0), "replicates"),
        (lambda: sparse_heavy_tailed(5, 6, rng=0), "nnz"),
    ],
)
def test_bad_input_raises_one_line(call, match):
    with pytest.raises(UserError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "name, params",
    [
        ("sparsifier_error", {"d": 10, "k": 11, "nnz": 5}),
        ("sparsifier_error", {"d": 100, "k": 10, "r": 5}),
        ("mean_estimation", {"d": 100, "s": 200.0}),
        ("mean_estimation", {"d": 1024, "k": 9}),
        ("mean_estimation_scaling", {"axis": "log2d", "x": 8, "d": 1024, "k": 640}),
    ],
)
def test_experiment_checks_reject_bad_cells(name, params):
    with pytest.raises(UserError):
        get_experiment(name).validate(params, "test")


def test_experiments_run_small():
    from simcomm.backends import get_backend

    be = get_backend("numpy")
    rows = get_experiment("mean_estimation").func(
        get_experiment("mean_estimation").validate({"draws": 20, "n": 5}, "t"), np.random.default_rng(12345), be)
    assert sorted(r["method"] for r in rows if r["metric"] == "mse") == sorted(SCHEMES)
    gap = [r for r in rows if r["metric"] == "topk_minus_subset"]
    mse = {r["method"]: r["value"] for r in rows if r["metric"] == "mse"}
    assert len(gap) == 1 and gap[0]["value"] == pytest.approx(mse["top_k"] - mse["rtop_k"], rel=1e-12, abs=1e-15)
    exp = get_experiment("rtopk_limits")
    # r = d: uniform k-subsets, Z - 1 is O(sqrt(2/d)); r = d/2: only the top half is ever kept, Z - 1 ~ T p/(1-p)
    uni = exp.func(exp.validate({"d": 50, "k": 5, "draws": 400}, "t"), np.random.default_rng(1), be)[0]["value"]
    half = exp.func(exp.validate({"d": 50, "k": 5, "draws": 400, "r": 25}, "t"), np.random.default_rng(1),
                    be)[0]["value"]
    assert abs(uni) < 1.0 < 40.0 < half
