"""simcomm.models._ops: the one softmax / cross-entropy / logistic / MLP pass that every model uses."""

import math

import numpy as np
import pytest

from simcomm.models._nn import init_params, mlp, unflatten
from simcomm.models._ops import (
    cross_entropy,
    cross_entropy_grad,
    log1p_exp,
    log_softmax,
    log_softmax_and_softmax,
    mlp_backward,
    mlp_forward,
    sigmoid,
    softmax,
)
from tests import naive_nn

EPS = np.finfo(np.float64).eps


def _logits(scale, shape=(40, 7), seed=0):
    return scale * np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("scale", [1.0, 20.0])
def test_softmax_and_log_softmax_match_the_textbook_formula(scale):
    # At these scales exp(z) neither overflows nor underflows, so the unshifted formula is a valid oracle.
    z = _logits(scale)
    p_ref = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax(z, axis=1), p_ref, rtol=1e-12, atol=0)
    np.testing.assert_allclose(log_softmax(z, axis=1), np.log(p_ref), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", [1e3, 1e300])
def test_softmax_is_stable_where_the_textbook_formula_overflows(scale):
    z = _logits(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)))  # the naive one fails
    p, logp = softmax(z, axis=1), log_softmax(z, axis=1)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(logp)) and np.all(logp <= 0)
    # the largest logit's probability is exp(0) / S with 1 <= S <= K, and the rows sum to one
    assert np.array_equal(p.argmax(axis=1), z.argmax(axis=1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=8 * EPS)


@pytest.mark.parametrize("axis,shape", [(1, (30, 5)), (2, (3, 11, 4)), (0, (6, 9))])
def test_the_pair_is_bit_for_bit_the_two_functions(axis, shape):
    # models._decentralized takes both from one exp pass; its recorded results rely on this equality
    z = _logits(3.0, shape, seed=1)
    logp, p = log_softmax_and_softmax(z, axis=axis)
    assert np.array_equal(logp, log_softmax(z, axis=axis))
    assert np.array_equal(p, softmax(z, axis=axis))


def test_cross_entropy_and_its_gradient():
    z, y = _logits(2.0), np.random.default_rng(2).integers(0, 7, 40)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(cross_entropy(z, y), -np.log(p[np.arange(40), y]), rtol=1e-12)
    onehot = np.eye(7)[y]
    for via_log in (False, True):
        g = cross_entropy_grad(z, y, via_log=via_log)
        np.testing.assert_allclose(g, p - onehot, rtol=0, atol=1e-14)
        np.testing.assert_allclose(g.sum(axis=1), 0.0, rtol=0, atol=1e-14)


def test_the_two_gradient_forms_agree_to_rounding_but_differ_in_bits():
    # exp(zs - log S) vs exp(zs) / S: each probability is a few correctly rounded operations away from the
    # exact value; the exp form's error is at most eps * (|zs| p + 2 + p log S) and |zs| e^{zs} <= 1/e,
    # so 4 (2 + log K) eps bounds the difference of the two forms.
    z, y = _logits(5.0, (2000, 10), seed=3), np.random.default_rng(3).integers(0, 10, 2000)
    a, b = cross_entropy_grad(z, y), cross_entropy_grad(z, y, via_log=True)
    assert np.abs(a - b).max() <= 4 * (2 + math.log(10)) * EPS
    assert not np.array_equal(a, b)  # why _nn keeps via_log=True: its recorded results use the exp form


def test_logistic_helpers_are_finite_and_match_the_textbook_formulas():
    z = np.linspace(-30, 30, 121)
    # the tanh form is accurate in absolute terms only (1 + tanh cancels for z << 0): |error| <= eps
    np.testing.assert_allclose(sigmoid(z), 1.0 / (1.0 + np.exp(-z)), rtol=1e-13, atol=EPS)
    np.testing.assert_allclose(log1p_exp(z), np.log1p(np.exp(z)), rtol=1e-13, atol=0)
    big = np.array([-1e300, -800.0, 800.0, 1e300])
    assert sigmoid(big).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert np.all(np.isfinite(log1p_exp(big))) and log1p_exp(big)[-1] == 1e300


@pytest.mark.parametrize("sizes", [(5, 3), (5, 7, 3), (4, 6, 5, 3)])
def test_forward_and_backward_walk_give_the_oracle_gradient(sizes):
    # the walk consumed as its docstring says (hs[l].T @ delta_l, delta_l.sum(0)) is the loop oracle's gradient
    rng = np.random.default_rng(4)
    model = mlp(sizes)
    theta = init_params(model, rng=rng) + 0.1 * rng.standard_normal(model.n_params)
    X, y = rng.standard_normal((6, sizes[0])), rng.integers(0, sizes[-1], 6)
    layers = unflatten(model, theta)
    hs, pre = mlp_forward(layers, X)
    seen, blocks = [], {}
    for li, delta in mlp_backward(layers, pre, cross_entropy_grad(pre[-1], y)):
        seen.append(li)
        blocks[li] = np.concatenate([(hs[li].T @ delta).ravel(), delta.sum(axis=0)])
    assert seen == list(range(len(layers) - 1, -1, -1))
    got = np.concatenate([blocks[li] for li in range(len(layers))])
    ref = naive_nn.per_example_gradients_loop(sizes, 0.0, theta, X, y).sum(axis=0)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
