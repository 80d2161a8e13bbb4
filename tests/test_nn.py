"""Numpy MLP / logistic regression: gradients, per-example gradients and the per-example norm trick."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcomm import UserError
from simcomm.models import (
    accuracy,
    gradient,
    init_params,
    logistic_regression,
    loss,
    mlp,
    per_example_gradients,
)
from simcomm.models._nn import (
    minibatch_gradient,
    per_example_grad_norms,
    per_example_losses,
    unflatten,
    weighted_gradient,
)
from tests import naive_nn

ARCHS = [((6, 3), 0.0), ((6, 3), 0.05), ((6, 8, 3), 0.0), ((6, 8, 3), 0.01), ((5, 7, 4, 3), 0.1),
         ((4, 5, 5, 5, 2), 0.0)]


def _problem(sizes, l2, b=9, seed=12345):
    rng = np.random.default_rng(seed)
    model = mlp(sizes, l2=l2)
    theta = init_params(model, rng=rng) + 0.1 * rng.standard_normal(model.n_params)  # nonzero biases too
    X = 2.0 * rng.standard_normal((b, sizes[0]))
    y = rng.integers(0, sizes[-1], size=b)
    return model, theta, X, y


@pytest.mark.parametrize("sizes,l2", ARCHS)
def test_per_example_gradients_match_loop_oracle(sizes, l2):
    model, theta, X, y = _problem(sizes, l2)
    ref = naive_nn.per_example_gradients_loop(sizes, l2, theta, X, y)
    np.testing.assert_allclose(per_example_gradients(model, theta, X, y), ref, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("sizes,l2", ARCHS)
def test_norm_trick_equals_explicit_norms(sizes, l2):
    model, theta, X, y = _problem(sizes, l2)
    ref = np.linalg.norm(naive_nn.per_example_gradients_loop(sizes, l2, theta, X, y), axis=1)
    np.testing.assert_allclose(per_example_grad_norms(model, theta, X, y), ref, rtol=0, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(
    widths=st.lists(st.integers(1, 9), min_size=0, max_size=3),
    d=st.integers(1, 8),
    k=st.integers(2, 5),
    l2=st.sampled_from([0.0, 1e-3, 0.3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_norm_trick_property(widths, d, k, l2, seed):
    sizes = (d, *widths, k)
    model, theta, X, y = _problem(sizes, l2, b=5, seed=seed)
    ref = np.linalg.norm(per_example_gradients(model, theta, X, y), axis=1)
    np.testing.assert_allclose(per_example_grad_norms(model, theta, X, y), ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("sizes,l2", ARCHS[:4])
def test_gradient_matches_finite_differences(sizes, l2):
    model, theta, X, y = _problem(sizes, l2, b=6)
    fd = naive_nn.finite_difference_gradient(lambda th: loss(model, th, X, y), theta)
    # central differences: truncation O(h^2 * f''') ~ 1e-12 and rounding O(eps/h) ~ 1e-10 (ReLU kinks are
    # measure-zero and the random inputs keep pre-activations away from 0 by much more than h)
    np.testing.assert_allclose(gradient(model, theta, X, y), fd, rtol=1e-6, atol=1e-8)


def test_per_example_loss_matches_oracle():
    sizes, l2 = (6, 8, 3), 0.01
    model, theta, X, y = _problem(sizes, l2)
    ref = [naive_nn.example_loss(sizes, l2, theta, X[n], y[n]) for n in range(X.shape[0])]
    np.testing.assert_allclose(per_example_losses(model, theta, X, y), ref, rtol=1e-12)


def test_gradient_is_mean_of_per_example_gradients_and_weighted_is_linear():
    model, theta, X, y = _problem((6, 8, 3), 0.05)
    G = per_example_gradients(model, theta, X, y)
    np.testing.assert_allclose(gradient(model, theta, X, y), G.mean(axis=0), rtol=1e-12, atol=1e-14)
    w = np.random.default_rng(12345).random(X.shape[0])
    np.testing.assert_allclose(weighted_gradient(model, theta, X, y, w), w @ G, rtol=1e-12, atol=1e-13)
    idx = np.array([0, 0, 3])
    np.testing.assert_allclose(minibatch_gradient(model, theta, X, y, idx), G[idx].mean(axis=0), rtol=1e-12, atol=1e-14)


def test_shapes_closed_forms_and_training_signal():
    m = logistic_regression(4, 3)
    assert m.n_params == 15 and len(unflatten(m, np.zeros(15))) == 1
    X = np.ones((5, 4))
    y = np.array([0, 1, 2, 0, 1])
    assert loss(m, np.zeros(15), X, y) == pytest.approx(np.log(3), rel=1e-14)  # zero logits: uniform softmax
    rng = np.random.default_rng(12345)
    Xs = rng.standard_normal((60, 4))
    ys = (Xs[:, 0] > 0).astype(int)
    model = mlp((4, 8, 2))
    th = init_params(model, rng=rng)
    l0 = loss(model, th, Xs, ys)
    for _ in range(100):
        th = th - 0.3 * gradient(model, th, Xs, ys)
    assert loss(model, th, Xs, ys) < 0.5 * l0 and accuracy(model, th, Xs, ys) > 0.9


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: mlp((5,)), "at least two"),
        (lambda: mlp((5, 1)), "number of classes"),
        (lambda: mlp((5, 3), l2=-1.0), "l2"),
        (lambda: loss(mlp((5, 3)), np.zeros(18), np.ones((2, 4)), np.zeros(2, int)), "expects"),
        (lambda: loss(mlp((5, 3)), np.zeros(18), np.ones((2, 5)), np.array([0, 3])), "labels"),
        (lambda: loss(mlp((5, 3)), np.zeros(17), np.ones((2, 5)), np.array([0, 1])), "flat vector"),
        (lambda: loss(mlp((5, 3)), np.zeros(18), np.ones((2, 5)), np.array([0, 1, 2])), "labels"),
    ],
)
def test_bad_input_is_one_line_user_error(call, match):
    with pytest.raises(UserError, match=match) as exc:
        call()
    assert "\n" not in str(exc.value)
