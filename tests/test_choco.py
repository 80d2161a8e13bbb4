"""CHOCO-SGD / CHOCO-Gossip (issue 30): the vectorised run against a per-node reference, kernels, bad input."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import available_backends, get_backend
from simcomm.compress import QSGD, Identity, RandK, TopK
from simcomm.models import heterogeneous_least_squares
from simcomm.optim import (
    ChocoState,
    choco_delta,
    choco_gamma,
    choco_init,
    choco_update,
    run_choco_gossip,
    run_choco_sgd,
)
from simcomm.topology import build
from tests.naive_decentralized import choco_naive, dense_W, top_k_naive


@pytest.mark.parametrize("topology", ["ring", "torus", "hypercube", "erdos_renyi"])
def test_choco_sgd_top_k_equals_per_node_reference(topology):
    """Top-k is deterministic: the reference uses its own sort-based top-k and a dense W, node by node."""
    n, d, k = 8, 6, 2
    topo = build(topology, n, p=0.6, rng=3) if topology == "erdos_renyi" else build(topology, n)
    prob = heterogeneous_least_squares(n, d, b=1.0, rng=0)
    steps, lr, gamma = 25, 0.1 / prob.L, 0.4
    tr = run_choco_sgd(prob, topo, TopK(k), steps=steps, lr=lr, gamma=gamma, record_every=steps)
    W = dense_W(topo)

    def grad(i, x):
        return prob.node_gradients(np.tile(x, (n, 1)))[i]

    ref, _ = choco_naive(grad, np.tile(prob.x0, (n, 1)), W, steps, lr, gamma, lambda j, s, v: top_k_naive(v, k))
    np.testing.assert_allclose(tr.x, ref, rtol=1e-12, atol=1e-12)


def test_choco_gossip_rand_k_equals_reference_on_shared_draws():
    """Random compressor: both sides take the same per-step draws (the library's rand_k on all rows at once)."""
    n, d = 8, 5
    X0 = np.random.default_rng(1).standard_normal((n, d))
    comp = RandK(2, scale=False)
    topo = build("ring", n)
    state = choco_init(X0)
    rng = np.random.default_rng(9)
    for _ in range(30):
        state = choco_update(state, None, topo, comp, gamma=0.5, rng=rng)
    # rand-k's kept sets do not depend on the values: the same generator gives the same sets, which the
    # reference applies node by node (select_rows draws exactly the uniforms apply draws)
    q_rng = np.random.default_rng(9)
    kept = [np.asarray(comp.select_rows(np.zeros((n, d)), rng=q_rng)) for _ in range(30)]
    assert all(len(set(row.tolist())) == 2 for step in kept for row in step)

    def compress(j, step, v):
        out = np.zeros_like(v)
        out[kept[step][j]] = v[kept[step][j]]
        return out

    ref_x, ref_hat = choco_naive(None, X0, dense_W(topo), 30, 0.0, 0.5, compress)
    np.testing.assert_allclose(state.x, ref_x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state.x_hat, ref_hat, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", available_backends())
def test_choco_shift_kernel_matches_numpy(backend):
    rng = np.random.default_rng(4)
    n, d = 16, 70001 if backend == "numba" else 33  # numba: above the threaded-kernel threshold too
    Xh, Xhat, Q = (rng.standard_normal((n, d)) for _ in range(3))
    shifts, weights = np.array([0, 1, -1, 3]), np.array([0.4, 0.2, 0.2, 0.2])
    ref_hat, out_ref = Xhat.copy(), np.empty((n, d))
    get_backend("numpy").choco_shift_step(Xh, ref_hat, Q, 0.3, shifts, weights, out_ref)
    hat, out = Xhat.copy(), np.empty((n, d))
    get_backend(backend).choco_shift_step(Xh, hat, Q, 0.3, shifts, weights, out)
    np.testing.assert_array_equal(hat, ref_hat)  # an elementwise add: the same bits
    np.testing.assert_array_equal(out, out_ref)  # same terms, same order, no FMA


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("with_grads", [True, False])
def test_choco_sparse_kernel_matches_dense_reference(backend, with_grads):
    # the sparse-message kernel against a straightforward dense numpy step (dense Q, dense W): same values
    rng = np.random.default_rng(5)
    n, d, k = 16, 70001 if backend == "numba" else 33, 7  # numba: above the threaded-kernel threshold too
    X, G, Xhat = (rng.standard_normal((n, d)) for _ in range(3))
    Xhat[0, :5] = -0.0  # signed zeros off the message become +0.0, as xhat + a dense Q's +0.0 does
    idx = np.sort(np.stack([rng.choice(d, k, replace=False) for _ in range(n)]), axis=1)
    vals = rng.standard_normal((n, k))
    shifts, weights = np.array([0, 1, -1, 3]), np.array([0.4, 0.2, 0.2, 0.2])
    Q = np.zeros((n, d))
    for i in range(n):
        Q[i, idx[i]] = vals[i]
    hat_ref = Xhat + Q
    W = np.zeros((n, n))
    for h, w in zip(shifts, weights):
        W[np.arange(n), (np.arange(n) + h) % n] += w
    Xh = X - 0.1 * G if with_grads else X
    x_ref = Xh + 0.3 * (W @ hat_ref - hat_ref)
    hat, out = np.empty((n, d)), np.empty((n, d))
    got = get_backend(backend).choco_sparse_step(X, G if with_grads else None, 0.1, Xhat, idx, vals, 0.3, shifts,
                                                 weights, hat, out)
    assert got[0] is out and got[1] is hat
    np.testing.assert_array_equal(hat, hat_ref)
    np.testing.assert_array_equal(np.signbit(hat), np.signbit(hat_ref))
    np.testing.assert_allclose(out, x_ref, rtol=1e-12, atol=1e-13)  # W @ sums in another order
    dense_hat, dense_out = Xhat.copy(), np.empty((n, d))  # the dense kernel: the same bits
    get_backend("numpy").choco_shift_step(Xh, dense_hat, Q, 0.3, shifts, weights, dense_out)
    np.testing.assert_array_equal(out, dense_out)


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("grads", [True, False])
def test_choco_update_top_k_sparse_path_equals_dense_step(backend, grads):
    # choco_update sends top-k sparsely on a shift-mixed ring; the dense step (top_k, then choco_shift_step)
    rng = np.random.default_rng(6)
    n, d, k = 12, 30001, 40  # numba: past the threaded-kernel thresholds
    X, Xhat, G = (rng.standard_normal((n, d)) for _ in range(3))
    X0, Xhat0 = X.copy(), Xhat.copy()
    s = choco_update(ChocoState(X, Xhat, 3), G if grads else None, "ring", TopK(k), lr=0.05, gamma=0.4, rng=0,
                     backend=backend)
    from simcomm.compress import top_k
    from simcomm.topology import ring

    Xh = X - 0.05 * G if grads else X
    Q = top_k(Xh - Xhat, k)
    layer = ring(n).layer(0)
    hat, out = Xhat.copy(), np.empty((n, d))
    get_backend("numpy").choco_shift_step(Xh, hat, Q, 0.4, layer.offsets[:, 0], layer.weights, out)
    np.testing.assert_array_equal(s.x_hat, hat)
    np.testing.assert_array_equal(s.x, out)
    assert s.k == 4
    np.testing.assert_array_equal(X, X0)  # a pure step: the state's arrays are not modified
    np.testing.assert_array_equal(Xhat, Xhat0)


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("with_grads", [True, False])
def test_choco_diff_rows_equal_the_dense_difference(backend, with_grads):
    rng = np.random.default_rng(9)
    X, G, Xhat = rng.standard_normal((3, 12, 30001))
    ref = (X - 0.05 * G if with_grads else X) - Xhat
    out = np.full((5, 30001), np.nan)
    got = get_backend(backend).choco_diff(X, G if with_grads else None, 0.05, Xhat, 6, out)
    assert got is out
    np.testing.assert_array_equal(out, ref[6:11])


@pytest.mark.parametrize("backend", available_backends())
def test_choco_update_sparse_path_non_finite_is_top_k_error(backend):
    X, G = np.random.default_rng(7).standard_normal((2, 8, 5000))
    G[3, 17] = np.inf  # a gradient blew up: the difference the selection reads is not finite
    with pytest.raises(UserError) as dense:
        TopK(5).apply(X - 0.1 * G, rng=0)
    with pytest.raises(UserError) as fused:
        choco_update(choco_init(X), G, "ring", TopK(5), lr=0.1, gamma=0.2, rng=0, backend=backend)
    assert str(fused.value) == str(dense.value)
    assert "\n" not in str(fused.value)


def test_choco_lossless_full_step_is_plain_gossip():
    """Q = identity and gamma = 1: the copies equal the iterates after one step and x <- W x exactly."""
    X0 = np.random.default_rng(2).standard_normal((6, 3))
    topo = build("ring", 6)
    s = choco_update(choco_init(X0), None, topo, Identity(), gamma=1.0, rng=0)
    np.testing.assert_allclose(s.x, dense_W(topo) @ X0, rtol=1e-13, atol=1e-14)


def test_choco_gossip_keeps_mean_and_contracts_at_paper_step():
    n, d = 16, 8
    X0 = np.random.default_rng(5).standard_normal((n, d))
    topo = build("hypercube", n)
    gamma = choco_gamma(0.4, 1.6, 0.25)  # hypercube n = 16: gap 0.4, ||I - W|| = 1.6; top-2 of 8: delta 1/4
    tr = run_choco_gossip(X0, topo, TopK(2), gamma=gamma, steps=1000, rng=0, record_every=250)
    assert np.all(np.diff(tr.consensus_ratio) < 0) and tr.consensus_ratio[-1] < 0.3
    assert tr.mean_drift.max() < 1e-12
    high = run_choco_gossip(X0, topo, TopK(2), gamma=2.5 / 1.6, steps=1000, rng=0, record_every=250)
    assert high.diverged_at[0] > 0 and high.consensus_ratio[1] > 1e6  # the control's mechanism


def test_choco_bad_input_is_one_line():
    topo = build("ring", 4)
    from simcomm.compress import Sign

    with pytest.raises(UserError, match="CHOCO needs a delta-contraction") as err:
        choco_delta(Sign(), 100)  # biased, no stated contraction factor
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="consensus step gamma must be a finite number > 0"):
        choco_update(choco_init(np.ones((4, 2))), None, topo, TopK(1), gamma=0.0, rng=0)
    with pytest.raises(UserError, match="needs a symmetric W"):
        choco_update(choco_init(np.ones((4, 2))), None, build("exponential", 4), TopK(1), gamma=0.1, rng=0)
    with pytest.raises(UserError, match="already at consensus"):
        run_choco_gossip(np.ones((4, 2)), topo, TopK(1), gamma=0.1, steps=3, rng=0)


def test_unbiased_compressor_is_scaled_into_a_contraction():
    """QSGD (beta >= 1, no contraction) is sent as Q/(1 + beta): the copies move by exactly that, and it converges."""
    comp = QSGD(1)
    d = 16
    beta = comp.beta(d)
    assert beta >= 1 and choco_delta(comp, d) == pytest.approx(1 / (1 + beta))
    X0 = np.random.default_rng(6).standard_normal((8, d))
    s = choco_update(choco_init(X0), None, "ring", comp, gamma=0.1, rng=np.random.default_rng(1))
    raw = comp.apply(X0, rng=np.random.default_rng(1))
    np.testing.assert_allclose(s.x_hat, raw / (1 + beta), rtol=1e-15, atol=0)
    tr = run_choco_gossip(X0, "ring", comp, gamma=0.1, steps=3000, rng=2, record_every=3000)
    assert tr.consensus_ratio[-1] < 1e-3


@pytest.mark.parametrize("compressor", [TopK(30), RandK(30, scale=False)])  # the sparse path, the dense one
def test_choco_update_out_equals_the_pure_step_and_refuses_bad_buffers(compressor):
    rng = np.random.default_rng(12)
    n, d = 12, 3000
    s = ChocoState(rng.standard_normal((n, d)), rng.standard_normal((n, d)), 1)
    G = rng.standard_normal((n, d))
    kw = dict(lr=0.05, gamma=0.3, backend="numba")
    ref = choco_update(s, G, "ring", compressor, rng=5, **kw)
    out = ChocoState(np.full((n, d), np.nan), np.full((n, d), np.nan), 0)
    got = choco_update(s, G, "ring", compressor, rng=5, out=out, **kw)
    assert got.x is out.x and got.x_hat is out.x_hat and got.k == 2
    np.testing.assert_array_equal(got.x, ref.x)
    np.testing.assert_array_equal(got.x_hat, ref.x_hat)
    bad = {
        "shape": ChocoState(np.empty((n, d - 1)), out.x_hat, 0),
        "dtype": ChocoState(out.x.astype(np.float32), out.x_hat, 0),
        "state": ChocoState(out.x, s.x_hat, 0),
        "grads": ChocoState(G, out.x_hat, 0),
        "itself": ChocoState(out.x, out.x, 0),
    }
    for name, o in bad.items():
        with pytest.raises(UserError) as err:
            choco_update(s, G, "ring", compressor, rng=5, out=o, **kw)
        assert "\n" not in str(err.value) and "out" in str(err.value), name
