"""The non-convex logistic problem of simcomm.experiments.khirirat and its experiment (urq.nonconvex_logistic_slope)."""

import numpy as np
import pytest

from simcomm._errors import SpecError
from simcomm.experiments import get_experiment
from simcomm.experiments.khirirat import FixedScaleSign, hessian_min_eig, nonconvex_logistic
from theory.urq import nonconvex_avg_slope


@pytest.mark.parametrize("dataset", ["breast_cancer", "digits"])
def test_gradient_matches_finite_differences(dataset):
    p = nonconvex_logistic(dataset, 1e-3)
    rng = np.random.default_rng(20260601)
    x = 2.0 * rng.standard_normal(p.d)
    g = p.full_grad(x)[0]
    h = 1e-6
    E = np.eye(p.d)
    fd = np.array([(p.value(x + h * e)[0] - p.value(x - h * e)[0]) / (2 * h) for e in E])
    # central differences: error O(h^2 f''') plus rounding O(eps |f| / h) ~ 1e-10
    np.testing.assert_allclose(g, fd, atol=1e-7)
    np.testing.assert_array_equal(p.grad(x[None], np.zeros(1, dtype=int)), p.full_grad(x))


@pytest.mark.parametrize("dataset", ["breast_cancer", "digits"])
def test_L_bounds_the_gradient_lipschitz_constant(dataset):
    p = nonconvex_logistic(dataset, 0.1)
    rng = np.random.default_rng(20260602)
    X, Y = 3.0 * rng.standard_normal((2, 200, p.d))
    ratio = np.linalg.norm(p.full_grad(X) - p.full_grad(Y), axis=1) / np.linalg.norm(X - Y, axis=1)
    assert ratio.max() <= p.L
    # and the Hessian's spectrum lies in [-lam/2, L] (|phi''| bounds: -1/2 <= phi'' <= 2)
    for x in X[:5]:
        assert -0.1 / 2 - 1e-12 <= hessian_min_eig(dataset, 0.1, x) <= p.L


@pytest.mark.parametrize("dataset", ["breast_cancer", "digits"])
def test_the_problem_is_not_convex(dataset):
    # at |x_j| = 1 the regulariser's curvature is -lam/2 per coordinate; the data's is smaller along the
    # direction of least variance (breast cancer: lambda_min(A^T A/m)/4 ~ 3e-5; digits has constant pixels)
    p = nonconvex_logistic(dataset, 1e-3)
    assert hessian_min_eig(dataset, 1e-3, np.ones(p.d)) < -1e-4


def test_slope_bound_is_minus_one():
    assert nonconvex_avg_slope() == -1.0


def test_shards_split_the_data_and_average_to_f():
    # label-sorted shards: f is the mean of the workers' f_i, and at x0 the local gradients differ (non-iid)
    p1, p4 = nonconvex_logistic("breast_cancer", 1e-3), nonconvex_logistic("breast_cancer", 1e-3, 4)
    x = np.linspace(-1.0, 1.0, p1.d)
    G = p4.grad(np.broadcast_to(x, (4, p1.d)), np.arange(4))
    np.testing.assert_allclose(G.mean(axis=0), p4.full_grad(x)[0], rtol=1e-12, atol=1e-15)
    assert p4.L >= p1.L
    assert np.linalg.norm(G - G.mean(axis=0), axis=1).min() > 0.1


def test_fixed_scale_sign_is_unbiased_with_a_variance_floor():
    # E Q(v) = v and E||Q(v) - v||^2 = d c^2 - ||v||^2 for |v_i| <= c; 20000 draws: the standard error of a
    # coordinate's mean is c/sqrt(20000) = 0.007 c, so 5 sigma is 0.035 c
    q = FixedScaleSign(0.5)
    v = np.array([0.0, 0.1, -0.3, 0.45])
    rng = np.random.default_rng(20260603)
    Q = np.array([q.apply(v, rng=rng) for _ in range(20000)])
    np.testing.assert_allclose(Q.mean(axis=0), v, atol=5 * 0.5 / np.sqrt(20000))
    np.testing.assert_allclose(((Q - v) ** 2).sum(axis=1).mean(), 4 * 0.25 - (v**2).sum(), rtol=0.02)


def test_frozen_scale_leaves_a_floor_and_the_norm_scale_does_not():
    # the control's mechanism on short runs: with the scale frozen the partial sum K x average keeps
    # growing (a floor), with the per-vector scale it saturates (slope near -1)
    exp = get_experiment("urq_nonconvex_logistic")
    base = exp.validate({"dataset": "digits", "lam": 1e-3, "compressors": "ternary"}, "test")
    out = {}
    for scale in ("norm", "frozen_sign"):
        for K in (100, 1000):
            row = exp.func({**base, "scale": scale, "K": K}, np.random.default_rng(7), None)[0]
            out[scale, K] = row["value"] * K
    assert out["norm", 1000] / out["norm", 100] < 1.5
    assert out["frozen_sign", 1000] / out["frozen_sign", 100] > 2.0


def test_bits_precision_rejects_bad_levels():
    exp = get_experiment("urq_bits_precision")
    for bad in ("1,2", "4,2,8", "a,b,c", "0,1,2"):
        with pytest.raises(SpecError):
            exp.validate({"levels": bad}, "test")


def test_bits_precision_finds_the_predicted_optimum_and_the_controls_move_it():
    # a short sweep (s = 1, 4, 16) on breast cancer at a loose target: the D1 product alpha_s b_s is smallest
    # at s = 16 (617, 373, 244 at d = 31); beta ignored predicts s = 1, dense counting erases the saving
    exp = get_experiment("urq_bits_precision")
    base = exp.validate({"levels": "1,4,16", "eps": 1e-2}, "test")
    rows = {r["metric"]: r for r in exp.func(base, np.random.default_rng(3), None)}
    assert rows["pred_over_best"]["s_pred"] == 16
    assert rows["none_over_best"]["value"] > 2.0
    ctl = {r["metric"]: r for r in exp.func({**base, "predictor": "bits_only", "count": "dense"},
                                            np.random.default_rng(3), None)}
    assert ctl["pred_over_best"]["s_pred"] == 1 and ctl["pred_over_best"]["value"] > 1.1
    assert ctl["none_over_best"]["value"] < 2.0
