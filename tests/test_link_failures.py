"""Link failures and node sleep (issue 30): the step against a dense per-step W_t, the draws' statistics, bad input."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import available_backends, get_backend
from simcomm.optim import run_unreliable_gossip
from simcomm.topology import LinkFailures, build, edge_list, erdos_renyi, s_out, unreliable_mix
from tests.naive_decentralized import dense_W


def _dense_step(W, kept_pairs, X, compensate=True):
    """W_t built entry by entry: a failed edge's weight goes to both self-weights (or is lost)."""
    Wt = W.copy()
    n = len(W)
    for i in range(n):
        for j in range(n):
            if i != j and W[i, j] != 0.0 and (min(i, j), max(i, j)) not in kept_pairs:
                Wt[i, j] = 0.0
                if compensate:
                    Wt[i, i] += W[i, j]
    return Wt @ X


@pytest.mark.parametrize("compensate", [True, False])
@pytest.mark.parametrize("name", ["ring", "torus", "hypercube", "erdos_renyi"])
def test_unreliable_mix_equals_dense_realised_matrix(name, compensate):
    n = 16
    topo = erdos_renyi(n, 0.3, rng=2) if name == "erdos_renyi" else build(name, n)
    edges = edge_list(topo)
    W = dense_W(topo)
    assert edges.n_edges == int((np.triu(W, 1) > 0).sum())
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    for _ in range(5):
        kept = rng.random(edges.n_edges) >= 0.4
        pairs = {(int(a), int(b)) for a, b, k in zip(edges.u, edges.v, kept) if k}
        got = unreliable_mix(edges, X, kept, compensate=compensate)
        np.testing.assert_allclose(got, _dense_step(W, pairs, X, compensate), rtol=1e-13, atol=1e-14)
        if compensate:  # doubly stochastic realisation: the average is kept
            np.testing.assert_allclose(got.mean(axis=0), X.mean(axis=0), rtol=0, atol=1e-14)


@pytest.mark.parametrize("backend", available_backends())
def test_edge_mix_backends_agree(backend):
    topo = build("torus", 64)
    e = edge_list(topo)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((64, 1000))  # above the numba threaded-kernel threshold
    kept = rng.random(e.n_edges) >= 0.3
    ref = get_backend("numpy").edge_mix(e.indptr, e.indices, e.eid, e.data, kept, X)
    got = get_backend(backend).edge_mix(e.indptr, e.indices, e.eid, e.data, kept, X)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-14, atol=1e-15)


def test_bernoulli_drop_rate_and_node_activation_frequencies():
    e = edge_list(build("ring", 20))
    f = LinkFailures(q=0.25, activation=0.8)
    rng = np.random.default_rng(1)
    state = f.init(e, rng)
    kept = np.array([f.draw(e, state, rng)[0] for _ in range(4000)])
    # an edge works if it does not fail (0.75) and both ends are awake (0.8^2): 0.48; sd of the mean
    # over 80,000 edge-steps (neighbouring edges share a node, so somewhat correlated) is ~0.003
    assert abs(kept.mean() - 0.75 * 0.64) < 0.01


def test_gilbert_elliott_bursts_have_the_chain_s_lengths():
    e = edge_list(build("ring", 10))
    f = LinkFailures(kind="gilbert_elliott", p_gb=0.05, p_bg=0.25, q_good=0.0, q_bad=1.0)
    rng = np.random.default_rng(2)
    state = f.init(e, rng)
    kept = []
    for _ in range(20000):
        k, state = f.draw(e, state, rng)
        kept.append(k)
    failed = ~np.array(kept)
    # stationary bad fraction p_gb / (p_gb + p_bg) = 1/6; with q_bad = 1, q_good = 0 a failure run is a
    # bad-state sojourn, geometric with mean 1/p_bg = 4 steps (sd of the estimates ~1%)
    assert abs(failed.mean() - 1 / 6) < 0.01 and f.mean_drop == pytest.approx(1 / 6)
    runs = []
    for col in failed.T:
        edges_ = np.flatnonzero(np.diff(np.concatenate([[0], col.astype(int), [0]])))
        runs += (edges_[1::2] - edges_[::2]).tolist()
    assert abs(np.mean(runs) - 4.0) < 0.15
    # the same mean drop rate without bursts: runs of mean 1/(1 - q) = 1.2 (the chain is what makes bursts)
    b = LinkFailures(q=1 / 6)
    failed_b = ~np.array([b.draw(e, None, rng)[0] for _ in range(5000)])
    runs_b = []
    for col in failed_b.T:
        edges_ = np.flatnonzero(np.diff(np.concatenate([[0], col.astype(int), [0]])))
        runs_b += (edges_[1::2] - edges_[::2]).tolist()
    assert np.mean(runs_b) < 1.3


def test_unreliable_gossip_reaches_the_average_and_lost_weight_does_not():
    X0 = 1.0 + np.random.default_rng(4).standard_normal((12, 2))
    ok = run_unreliable_gossip(X0, "ring", LinkFailures(q=0.3), steps=600, rng=5)
    assert ok.mean_sq_ratio[-1] < 1e-8
    bad = run_unreliable_gossip(X0, "ring", LinkFailures(q=0.3), steps=600, rng=5, compensate=False)
    assert bad.mean_sq_ratio[-1] > 1.0  # the models leak towards 0, away from the start's average ~1


@pytest.mark.parametrize("call, needle", [
    (lambda: LinkFailures(q=1.0), "drop rate q must be a finite number in [0, 1), got 1.0"),
    (lambda: LinkFailures(q=-0.1), "drop rate q must be a finite number in [0, 1), got -0.1"),
    (lambda: LinkFailures(activation=0.0), "node activation probability must be a finite number in (0, 1]"),
    (lambda: LinkFailures(kind="gilbert_elliott", p_bg=0.0), "Gilbert-Elliott p_bg (bad -> good)"),
    (lambda: LinkFailures(kind="burst"), "link failure kind"),
    (lambda: s_out(5, 5, rng=0), "s-out needs 1 <= s <= n - 1 = 4 targets per node, got s=5"),
    (lambda: edge_list(build("exponential", 8)), "link failures need a symmetric W"),
])
def test_bad_input_is_one_line_naming_the_argument(call, needle):
    with pytest.raises(UserError) as err:
        call()
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert isinstance(err.value, ValueError)
