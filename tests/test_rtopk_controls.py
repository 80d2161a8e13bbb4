"""The negative-control switches of the rTop-k experiments: off by default, and each a mistake in its direction.

``rtopk_rescale`` of sparsifier_error (rtopk.contraction), ``sampler`` of rtopk_limits
(rtopk.limit_uniform) and ``subset_scale`` of mean_estimation (rtopk.beats_randk): at the default the rows
are the old ones bit for bit; switched on, the value moves the way the spec's control says, by the
amount its closed form gives.
"""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import get_backend
from simcomm.experiments import get_experiment
from simcomm.experiments.rtopk import _biased_kept_mask, _dimension_scaled_errors, _profile
from simcomm.models import sparse_heavy_tailed
from tests.conftest import N_SIGMA

BE = get_backend("numpy")


def _run(name, seed=12345, **params):
    e = get_experiment(name)
    return e.func(e.validate(params, "test"), np.random.default_rng(seed), BE)


@pytest.mark.parametrize("name, switch, params", [
    ("sparsifier_error", {"rtopk_rescale": False}, {"d": 200, "k": 5, "r": 40, "nnz": 100, "draws": 50}),
    ("rtopk_limits", {"sampler": "uniform"}, {"d": 100, "k": 10, "draws": 300, "profile": "powerlaw"}),
    ("mean_estimation", {"subset_scale": "size"}, {"n": 5, "s": 10.0, "k": 40, "draws": 30}),
])
def test_switch_at_its_default_is_the_old_experiment(name, switch, params):
    assert _run(name, **params, **switch) == _run(name, **params)


def test_rtopk_rescale_makes_rtopk_exceed_the_contraction_bound():
    # E||x - (r/k) rTop_k(x)||^2 = ||x||^2 + (r/k - 2)||Top_r(x)||^2; powerlaw magnitudes make both norms fixed
    d, k, r, draws = 200, 5, 40, 4000
    kw = dict(d=d, k=k, r=r, nnz=100, alpha=1.0, profile="powerlaw", draws=draws)
    base = _run("sparsifier_error", **kw)[0]
    bad = _run("sparsifier_error", **kw, rtopk_rescale=True)[0]
    want = bad["norm2"] + (r / k - 2) * bad["topr_norm2"]
    # per-vector error: x_j^2 ((r/k - 1)^2 or 1) over the top r, a sum of k-of-r draws; sd well under 2 x want
    assert bad["value"] == pytest.approx(want, rel=N_SIGMA * 2.0 / np.sqrt(draws))
    assert base["value"] <= (1 - k / d) * base["norm2"] < bad["value"]
    # r = k: the scale is 1 and rTop-k is top-k, with or without the switch
    same = dict(kw, r=k, draws=50)
    assert _run("sparsifier_error", **same, rtopk_rescale=True) == _run("sparsifier_error", **same)
    with pytest.raises(UserError, match="rtopk_rescale"):
        get_experiment("sparsifier_error").validate({"method": "top_k", "rtopk_rescale": True}, "test")


def test_magnitude_sampler_keeps_coordinates_in_proportion_to_their_size():
    # k = 1: one successive weighted draw, P(j kept) = |x_j| / ||x||_1 exactly
    rng = np.random.default_rng(7)
    x = sparse_heavy_tailed(20, 20, alpha=1.0, profile="powerlaw", rng=rng)
    T = 20000
    counts = _biased_kept_mask(np.broadcast_to(x, (T, 20)), 1, 20, "magnitude", rng).sum(axis=0)
    p = np.abs(x) / np.abs(x).sum()
    assert counts.sum() == T
    assert np.all(np.abs(counts - T * p) <= N_SIGMA * np.sqrt(T * p * (1 - p)))
    # k of r: exactly k distinct kept per row, all inside the top r
    mask = _biased_kept_mask(np.broadcast_to(x, (50, 20)), 4, 8, "magnitude", rng)
    assert np.all(mask.sum(axis=1) == 4)
    top8 = np.argsort(-np.abs(x), kind="stable")[:8]
    assert not mask[:, np.setdiff1d(np.arange(20), top8)].any()


def test_biased_samplers_move_the_discrepancy_as_the_spec_says():
    d, k, T = 200, 20, 2000
    kw = dict(d=d, k=k, draws=T, profile="powerlaw")
    # equal magnitudes (alpha = 0): the magnitude sampler is uniform again; alpha = 1 piles the counts up
    flat = _run("rtopk_limits", **kw, alpha=0.0, sampler="magnitude")[0]["value"]
    skew = _run("rtopk_limits", **kw, alpha=1.0, sampler="magnitude")[0]["value"]
    assert abs(flat) < N_SIGMA * np.sqrt(2 / d) < 10 < skew
    # with replacement: counts Binomial(T, p') with p' = 1 - (1 - 1/d)^k, E Z = (p'(1-p') + T (p-p')^2)/(p(1-p))
    p, q = k / d, 1 - (1 - 1 / d) ** k
    want = (q * (1 - q) + T * (p - q) ** 2) / (p * (1 - p)) - 1
    reps = [_run("rtopk_limits", seed=s, **kw, alpha=1.0, sampler="with_replacement")[0]["value"] for s in range(8)]
    uni = [_run("rtopk_limits", seed=s, **kw, alpha=1.0)[0]["value"] for s in range(8)]
    assert np.mean(reps) == pytest.approx(want, abs=N_SIGMA * np.std(reps, ddof=1) / np.sqrt(8))
    assert np.mean(uni) < want / 2 < np.mean(reps)


def test_subset_scaled_by_d_over_kprime_is_the_biased_estimator_it_claims():
    # support of 2 coordinates <= k' = 4: every node sends its whole support, so the estimate is (d/k') X-bar
    # and E||c X-bar - theta||^2 = c^2 sum theta (1 - theta) / n + (c - 1)^2 ||theta||^2 with c = d/k'
    d, k, n, draws = 64, 24, 5, 4000  # 6-bit indices: k' = 4
    theta = _profile(d, 1.0, 1.0, 2.0)
    err = _dimension_scaled_errors(theta, n, k, d, draws, np.random.default_rng(3))
    c = d / 4
    want = c**2 * np.sum(theta * (1 - theta)) / n + (c - 1) ** 2 * np.sum(theta**2)
    assert err["rtop_k"].mean() == pytest.approx(want, abs=N_SIGMA * err["rtop_k"].std(ddof=1) / np.sqrt(draws))
    # the experiment's rows: the random subset now loses to rand-k' by far (the claim's order reversed),
    # while top-k and rand-k' keep their laws
    kw = dict(n=10, s=20.0, k=40, alpha=1.0, draws=100)
    good = {r["method"]: r["value"] for r in _run("mean_estimation", **kw) if r["metric"] == "mse"}
    bad = {r["method"]: r["value"] for r in _run("mean_estimation", **kw, subset_scale="dimension")
           if r["metric"] == "mse"}
    assert good["rtop_k"] < good["rand_k"] / 10 and bad["rtop_k"] > 10 * bad["rand_k"]
    assert bad["top_k"] == pytest.approx(good["top_k"], rel=0.2)
    assert bad["rand_k"] == pytest.approx(good["rand_k"], rel=0.5)
    with pytest.raises(UserError, match="two controls"):
        get_experiment("mean_estimation").validate({"subset_scale": "dimension", "rescale": False}, "test")
