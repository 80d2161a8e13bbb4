"""Mixing beyond doubly stochastic: declared stochasticity, directed and random graphs, push-sum, tracking.

Every vectorised kernel is checked against a per-node Python loop in tests/naive_decentralized.py.
"""

import math

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import available_backends, get_backend, use
from simcomm.models import diagonal_quadratic, heterogeneous_least_squares
from simcomm.optim import (
    ed_init,
    ed_update,
    gt_init,
    gt_update,
    pushsum_init,
    pushsum_update,
    run_dsgd,
    run_pushsum,
    run_tracking,
)
from simcomm.topology import (
    build,
    describe,
    directed_exponential,
    directed_ring,
    exponential,
    from_matrix,
    is_doubly_stochastic,
    mix,
    mixing_matrix,
    random_matching,
    ring,
    s_out,
    time_varying,
    torus,
)
from tests.conftest import N_SIGMA
from tests.naive_decentralized import (
    exact_diffusion_naive,
    gradient_tracking_naive,
    node_shift_W,
    pushsum_naive,
)
from theory.decentralized import matching_contraction, s_out_contraction


def _uneven(n, seed=12345):
    return np.random.default_rng(seed).uniform(0.1, 0.9, n)


# --------------------------------------------------------------------------- stochasticity


@pytest.mark.parametrize("make", [directed_ring, directed_exponential])
@pytest.mark.parametrize("n", [2, 5, 8, 13])
def test_directed_patterns_declare_and_have_their_stochasticity(make, n):
    a = _uneven(n)
    push, pull = make(n, self_weights=a, weighting="push"), make(n, self_weights=a, weighting="pull")
    W, V = mixing_matrix(push), mixing_matrix(pull)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-14)  # column stochastic
    np.testing.assert_allclose(V.sum(axis=1), 1.0, atol=1e-14)  # row stochastic
    assert (push.stochasticity, pull.stochasticity) == ("column", "row")
    assert not is_doubly_stochastic(push) and not is_doubly_stochastic(pull)
    np.testing.assert_array_equal(W, node_shift_W(push.node_shifts, push.node_weights))
    # equal self-weights: the circulant, doubly stochastic
    assert make(n).stochasticity == "doubly" and is_doubly_stochastic(make(n))


def test_directed_exponential_with_equal_weights_is_the_exponential_graph():
    for n in (3, 8, 12):
        np.testing.assert_allclose(mixing_matrix(directed_exponential(n)), mixing_matrix(exponential(n)), atol=1e-15)


def test_from_matrix_declared_stochasticity_is_checked_not_weakened():
    col = np.array([[0.5, 0.0, 1.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.0]])
    assert from_matrix(col, stochastic="column").stochasticity == "column"
    with pytest.raises(UserError, match="not doubly stochastic: row .* declare stochastic='column'"):
        from_matrix(col)
    with pytest.raises(UserError, match="not row stochastic"):
        from_matrix(col, stochastic="row")
    with pytest.raises(UserError, match="unknown stochasticity 'colum'.*did you mean 'column'"):
        from_matrix(col, stochastic="colum")
    assert from_matrix(col.T, stochastic="row").stochasticity == "row"


def test_describe_and_build_report_stochasticity():
    assert describe(directed_ring(6, self_weights=_uneven(6)))["stochasticity"] == "column"
    assert describe(ring(6))["stochasticity"] == "doubly"
    assert build("directed_exponential", 8).stochasticity == "doubly"
    assert build("random_matching", 8, rng=1).stochasticity == "doubly"
    with pytest.raises(UserError, match="rng="):
        random_matching(8, rng=None)


def test_time_varying_keeps_or_refuses_stochasticity():
    a = _uneven(6)
    col = directed_ring(6, self_weights=a)
    assert time_varying([col, ring(6)]).stochasticity == "column"
    with pytest.raises(UserError, match="mixes row- and column-stochastic"):
        time_varying([col, directed_ring(6, self_weights=a, weighting="pull")])


@pytest.mark.parametrize("bad, match", [
    (dict(self_weights=[0.5, 1.0, 0.2, 0.3]), r"\[0, 1\)"),
    (dict(self_weights=[0.5, 0.2]), "shape"),
    (dict(weighting="pushy"), "weighting"),
])
def test_directed_bad_input(bad, match):
    with pytest.raises(UserError, match=match):
        directed_ring(4, **bad)


def test_dsgd_and_tracking_refuse_non_doubly_stochastic_mixing():
    prob = heterogeneous_least_squares(6, 2, rng=np.random.default_rng(12345))
    col = directed_exponential(6, self_weights=_uneven(6))
    with pytest.raises(UserError, match="DSGD needs a doubly stochastic .* column stochastic; use push-sum"):
        run_dsgd(prob, col, steps=2, lr=0.1)
    with pytest.raises(UserError, match="gradient tracking needs a doubly"):
        run_tracking(prob, col, steps=2, lr=0.1)
    with pytest.raises(UserError, match="push-sum needs a column or doubly .* row stochastic"):
        pull = directed_ring(6, self_weights=_uneven(6), weighting="pull")
        pushsum_update(pushsum_init(np.zeros((6, 2))), None, pull)
    with pytest.raises(UserError, match="exact diffusion needs a symmetric W"):
        run_tracking(prob, exponential(6), method="exact_diffusion", steps=2, lr=0.1)


# --------------------------------------------------------------------------- kernels vs naive


@pytest.mark.parametrize("n, d", [(5, 3), (16, 1), (64, 700)])  # the last one runs the threaded kernels
def test_node_shift_mix_matches_dense_and_numpy_bit_for_bit(n, d):
    rng = np.random.default_rng(12345)
    t = directed_exponential(n, self_weights=rng.uniform(0.05, 0.95, n))
    X = rng.standard_normal((n, d))
    ref = node_shift_W(t.node_shifts, t.node_weights) @ X
    outs = {}
    for name in ("numpy", "numba"):
        with use(name):
            outs[name] = mix(t, X)
    np.testing.assert_allclose(outs["numpy"], ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(outs["numba"], outs["numpy"])  # same terms, same order


@pytest.mark.parametrize("n, d", [(6, 2), (64, 700)])
def test_pushsum_step_numba_equals_numpy_and_naive(n, d):
    rng = np.random.default_rng(12345)
    t = directed_exponential(n, self_weights=rng.uniform(0.05, 0.95, n))
    X, G, w = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.uniform(0.5, 2.0, n)
    outs = []
    for name in ("numpy", "numba"):
        out, wout = np.empty_like(X), np.empty_like(w)
        get_backend(name).pushsum_shift_step(X, w, G, 0.3, t.node_shifts, t.node_weights, out, wout)
        outs.append((out, wout))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    W = mixing_matrix(t)
    np.testing.assert_allclose(outs[0][0], W @ (X - 0.3 * G), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(outs[0][1], W @ w, rtol=1e-13)


@pytest.mark.parametrize("topo_name", ["directed_ring", "directed_exponential", "s_out_static"])
def test_pushsum_sgd_matches_naive_per_node_loop(topo_name, backend):
    n, d, steps, lr = 7, 3, 12, 0.05
    prob = heterogeneous_least_squares(n, d, b=1.0, rng=np.random.default_rng(12345))
    if topo_name == "s_out_static":
        topo = s_out(n, 2, rng=3, weighting="push")
    else:
        topo = (directed_ring if topo_name == "directed_ring" else directed_exponential)(n, self_weights=_uneven(n))

    def grad(i, x):
        return prob.A[i].T @ (prob.A[i] @ x - prob.y[i]) / prob.A.shape[1]

    X0 = np.random.default_rng(7).standard_normal((n, d))
    s = pushsum_init(X0)
    for _ in range(steps):
        G = np.stack([grad(i, s.z[i]) for i in range(n)])
        s = pushsum_update(s, G, topo, lr=lr, backend=backend)
    x_ref, w_ref = pushsum_naive(X0, lambda k: mixing_matrix(topo), steps, lr=lr, grad=grad)
    np.testing.assert_allclose(s.x, x_ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(s.w, w_ref, rtol=1e-12)


def test_pushsum_consensus_is_exact_and_plain_gossip_is_biased():
    n = 12
    t = directed_exponential(n, self_weights=_uneven(n))
    X0 = 1.0 + np.random.default_rng(5).standard_normal((n, 2))
    tr = run_pushsum(X0, t, steps=400)
    assert tr.max_error[-1] < 1e-12
    # plain gossip ends at n v_i xbar: v the Perron vector of W, v_i proportional to 1/(1 - a_i) here
    a = _uneven(n)
    v = (1 / (1 - a)) / np.sum(1 / (1 - a))
    plain = run_pushsum(X0, t, steps=400, debias=False)
    np.testing.assert_allclose(plain.x, n * v[:, None] * X0.mean(axis=0), rtol=1e-10)
    assert plain.max_error[-1] > 0.1


def test_pushsum_on_random_s_out_push_draws_reaches_the_average():
    X0 = np.random.default_rng(5).standard_normal((10, 2))
    tr = run_pushsum(X0, lambda r: s_out(10, 1, rng=r, weighting="push"), steps=600, rng=1)
    assert tr.max_error[-1] < 1e-12 and tr.weight_spread[-1] > 1.0
    with pytest.raises(UserError, match="rng="):
        run_pushsum(X0, lambda r: s_out(10, 1, rng=r, weighting="push"), steps=2)


@pytest.mark.parametrize("topo", [ring(6), torus(2, 3), exponential(6)], ids=["ring", "torus", "exponential"])
def test_gradient_tracking_matches_naive(topo, backend):
    n, d, steps, lr = 6, 3, 9, 0.07
    prob = heterogeneous_least_squares(n, d, b=1.0, rng=np.random.default_rng(12345))

    def grad(i, x):
        return prob.A[i].T @ (prob.A[i] @ x - prob.y[i]) / prob.A.shape[1]

    s = gt_init(prob.x0, n)
    from simcomm.models._decentralized import node_gradients

    for _ in range(steps):
        s = gt_update(s, node_gradients(prob, s.x), topo, lr=lr, backend=backend)
    ref = gradient_tracking_naive(grad, prob.x0, mixing_matrix(topo), steps, lr, n)
    np.testing.assert_allclose(s.x, ref, rtol=1e-11, atol=1e-13)
    if not topo.directed:
        e = ed_init(prob.x0, n)
        for _ in range(steps):
            e = ed_update(e, node_gradients(prob, e.x), topo, lr=lr, backend=backend)
        ref = exact_diffusion_naive(grad, prob.x0, mixing_matrix(topo), steps, lr, n)
        np.testing.assert_allclose(e.x, ref, rtol=1e-11, atol=1e-13)


def test_tracking_mean_invariant_and_floor():
    # doubly stochastic W: ybar_k = gbar_k at every step (the tracking invariant)
    n, d = 8, 4
    with use("numpy"):
        prob = diagonal_quadratic(n, d, b=1.0, rng=np.random.default_rng(12345))
    from simcomm.models._decentralized import node_gradients

    s = gt_init(prob.x0, n)
    for _ in range(20):
        G = node_gradients(prob, s.x)
        s = gt_update(s, G, ring(n), lr=0.1)
        np.testing.assert_allclose(s.y.mean(axis=0), G.mean(axis=0), atol=1e-13)
    # constant step: DSGD keeps a floor, tracking and exact diffusion do not
    dsgd = run_dsgd(prob, ring(n), steps=2500, lr=0.1, seed=0).x
    dist = float(np.mean(np.sum((dsgd - prob.x_star) ** 2, axis=1)))
    gt = run_tracking(prob, ring(n), steps=2500, lr=0.1).node_dist_sq[-1]
    ed = run_tracking(prob, ring(n), method="exact_diffusion", steps=2500, lr=0.1).node_dist_sq[-1]
    assert dist > 1e-3 and gt < 1e-12 * dist and ed < 1e-12 * dist


# --------------------------------------------------------------------------- random topologies


def test_random_matching_is_a_matching():
    for n in (2, 7, 16):
        t = random_matching(n, rng=n)
        W = mixing_matrix(t)
        assert is_doubly_stochastic(W) and np.allclose(W, W.T)
        off = (W > 0) & ~np.eye(n, dtype=bool)
        assert off.sum(axis=1).max() <= 1 and off.sum() == 2 * (n // 2)


def test_s_out_targets_are_distinct_others_and_uniform():
    n, s, draws = 9, 3, 3000
    counts = np.zeros((n, n))
    rng = np.random.default_rng(12345)
    for _ in range(draws):
        W = mixing_matrix(s_out(n, s, rng=rng, weighting="push"))
        np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-14)
        sent = (W > 0) & ~np.eye(n, dtype=bool)  # sent[i, j]: j sent to i
        assert np.all(sent.sum(axis=0) == s) and not np.any(np.diag(sent))
        counts += sent
    # each ordered pair (j -> i, i != j) with probability s/(n-1): a binomial count per pair
    p = s / (n - 1)
    off = counts[~np.eye(n, dtype=bool)]
    assert np.abs(off - draws * p).max() < N_SIGMA * math.sqrt(draws * p * (1 - p)) + 1


@pytest.mark.parametrize("sampling, n, s", [("matching", 10, 1), ("matching", 9, 1), ("s_out", 12, 2)])
def test_random_contraction_closed_forms(sampling, n, s):
    # Monte Carlo mean of the one-round ratio against the [N] closed forms, within N_SIGMA standard errors
    rng = np.random.default_rng(12345)
    r = []
    for _ in range(4000):
        x = rng.standard_normal((n, 2))
        topo = random_matching(n, rng=rng) if sampling == "matching" else s_out(n, s, rng=rng)
        with use("numpy"):
            y = mix(topo, x)
        r.append(np.sum((y - x.mean(axis=0)) ** 2) / np.sum((x - x.mean(axis=0)) ** 2))
    pred = matching_contraction(n) if sampling == "matching" else s_out_contraction(n, s)
    assert abs(np.mean(r) - pred) < N_SIGMA * np.std(r) / math.sqrt(len(r))


def test_s_out_bad_input():
    with pytest.raises(UserError, match="1 <= s <= n - 1 = 4"):
        s_out(5, 5, rng=0)


@pytest.mark.parametrize("backend", available_backends())
def test_gt_shift_kernel_matches_numpy_and_the_unfused_step(backend):
    """The fused gradient-tracking step: the same bits as the numpy reference, and as two mixes of simcomm.topology."""
    from simcomm.topology import exponential

    rng = np.random.default_rng(8)
    n, d = 16, 70001 if backend == "numba" else 40  # numba: past the threaded-kernel threshold too
    X, Y, G, Gp = (rng.standard_normal((n, d)) for _ in range(4))
    layer = exponential(n)
    sh, w = layer.offsets[:, 0], layer.weights
    xr, yr = np.empty((n, d)), np.empty((n, d))
    get_backend("numpy").gt_shift_step(X, Y, G, Gp, 0.3, sh, w, xr, yr)
    x, y = np.empty((n, d)), np.empty((n, d))
    get_backend(backend).gt_shift_step(X, Y, G, Gp, 0.3, sh, w, x, y)
    np.testing.assert_array_equal(y, yr)
    np.testing.assert_array_equal(x, xr)
    x2, y2, g2 = np.empty((n, d)), np.empty((n, d)), np.full((n, d), np.nan)
    get_backend(backend).gt_shift_step(X, Y, G, Gp, 0.3, sh, w, x2, y2, g2)  # the copy of G in the same pass
    np.testing.assert_array_equal(g2, G)
    np.testing.assert_array_equal(y2, yr)
    np.testing.assert_array_equal(x2, xr)
    with use("numpy"):
        y2 = mix(layer, Y + G - Gp)
        np.testing.assert_array_equal(yr, y2)
        np.testing.assert_array_equal(xr, mix(layer, X - 0.3 * y2))
