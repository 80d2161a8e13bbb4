"""The gossip methods (choco_gossip, choco_sgd, unreliable_gossip): built by name, run by run(), equal to the wrappers.

Each row builds a named method from spec-style settings (strings and numbers), runs it with
:func:`simcomm.optim.run` under its family's watch, and compares the trace with the public function's,
bit for bit. The fused CHOCO kernel (``choco_shift_step`` on shift-mixed circulants) is checked against
the CSR composition of the same ``W``.
"""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.compress import QSGD, RandK, TopK
from simcomm.models import heterogeneous_least_squares
from simcomm.optim import (
    METHODS,
    Ctx,
    build_method,
    choco_init,
    choco_update,
    run,
    run_choco_gossip,
    run_choco_sgd,
    run_unreliable_gossip,
)
from simcomm.optim._blocks_gossip import LinkState
from simcomm.optim._watch_nodes import choco_sgd_watch, consensus_watch, link_watch
from simcomm.topology import LinkFailures, build, edge_list, from_matrix, mixing_matrix

N = 8
X0 = np.random.default_rng(1).standard_normal((N, 5))


def assert_same_trace(a, b):
    assert a.step.dtype == b.step.dtype and np.array_equal(a.step, b.step)
    assert a.records.keys() == b.records.keys()
    for key in a.records:
        np.testing.assert_array_equal(a.records[key], b.records[key], err_msg=key)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)


# (settings of the named method, the same run through the public function)
CHOCO_GOSSIP = [
    (dict(compressor="top_k(k=2)", gamma=0.3, topology="ring"), dict(topology="ring", compressor=TopK(2), gamma=0.3)),
    (dict(compressor="qsgd(s=2)", gamma=0.2, topology="torus"), dict(topology="torus", compressor=QSGD(2), gamma=0.2)),
    (dict(compressor="rand_k(k=2)", gamma=0.25, topology="hypercube"),
     dict(topology="hypercube", compressor=RandK(2), gamma=0.25)),
    (dict(compressor="top_k(k=2)", gamma=3.0), dict(topology="ring", compressor=TopK(2), gamma=3.0)),  # diverges
]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("settings, public", CHOCO_GOSSIP)
def test_choco_gossip_by_name_equals_run_choco_gossip(settings, public, backend):
    steps, every = 60, 7
    m = build_method("choco_gossip", **settings)
    got = run(None, m, steps, rng=5, x0=choco_init(X0), watch=consensus_watch(X0, steps, every), backend=backend)
    ref = run_choco_gossip(X0, public["topology"], public["compressor"], gamma=public["gamma"], steps=steps, rng=5,
                           record_every=every, backend=backend)
    assert_same_trace(got, ref)


CHOCO_SGD = [
    (dict(compressor="top_k(k=2)", lr=0.05, gamma=0.3, topology="ring"),
     dict(topology="ring", compressor=TopK(2), lr=0.05, gamma=0.3)),
    (dict(compressor="qsgd(s=2)", lr=0.05, gamma=0.2, topology="torus", sigma=0.3, seed=3),
     dict(topology="torus", compressor=QSGD(2), lr=0.05, gamma=0.2, sigma=0.3, seed=3)),
    (dict(compressor="top_k(k=2)", lr=2.0, gamma=0.4), dict(topology="ring", compressor=TopK(2), lr=2.0, gamma=0.4)),
]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("settings, public", CHOCO_SGD)
def test_choco_sgd_by_name_equals_run_choco_sgd(settings, public, backend):
    prob = heterogeneous_least_squares(N, 5, b=1.0, rng=0)
    steps, every = 50, 3
    seed = settings.get("seed", 0)
    m = build_method("choco_sgd", **settings)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(5,)))  # run_choco_sgd's default stream
    start = choco_init(np.tile(prob.x0, (N, 1)))
    got = run(prob, m, steps, rng=rng, x0=start, watch=choco_sgd_watch(prob, steps, every), backend=backend)
    kw = dict(public)
    ref = run_choco_sgd(prob, kw.pop("topology"), kw.pop("compressor"), steps=steps, record_every=every,
                        backend=backend, **kw)
    assert_same_trace(got, ref)


UNRELIABLE = [
    (dict(topology="ring", q=0.3), LinkFailures(q=0.3), True),
    (dict(topology="torus", q=0.1, activation=0.7, compensate=False), LinkFailures(q=0.1, activation=0.7), False),
    (dict(topology="hypercube", kind="gilbert_elliott", p_gb=0.1, p_bg=0.3, q_good=0.05, q_bad=0.9),
     LinkFailures(kind="gilbert_elliott", p_gb=0.1, p_bg=0.3, q_good=0.05, q_bad=0.9), True),
]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("settings, failures, compensate", UNRELIABLE)
def test_unreliable_gossip_by_name_equals_run_unreliable_gossip(settings, failures, compensate, backend):
    X = 1.0 + np.random.default_rng(4).standard_normal((16, 3))
    steps, every = 50, 6
    m = build_method("unreliable_gossip", **settings)
    n_edges = edge_list(build(settings["topology"], 16)).n_edges
    got = run(None, m, steps, rng=5, x0=LinkState(X, 0), watch=link_watch(X, n_edges, steps, every), backend=backend)
    ref = run_unreliable_gossip(X, settings["topology"], failures, steps=steps, rng=5, compensate=compensate,
                                record_every=every, backend=backend)
    assert_same_trace(got, ref)


@pytest.mark.parametrize("topology", ["ring", "torus", "parallel"])
def test_choco_update_is_the_named_method_s_step(topology):
    """The public pure step and the method's step are one implementation: the same state from the same draws."""
    m = build_method("choco_gossip", compressor="rand_k(k=2)", gamma=0.4, topology=topology)
    state = choco_init(X0)
    ctx = Ctx(None, 0, 5, np.random.default_rng(3))
    plan = m.init(state, ctx)
    ref = state
    rng = np.random.default_rng(3)
    for k in range(5):
        state, plan = m.step(state, plan, ctx._replace(k=k))
        ref = choco_update(ref, None, topology, RandK(2), gamma=0.4, rng=rng)
        np.testing.assert_array_equal(state.x, ref.x)
        np.testing.assert_array_equal(state.x_hat, ref.x_hat)
        assert state.k == ref.k == k + 1


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_fused_choco_kernel_equals_the_csr_composition(backend):
    """A ring mixes with the fused shift kernel; the same W given as a matrix goes through the CSR mix."""
    prob = heterogeneous_least_squares(N, 5, b=1.0, rng=0)
    ring = build("ring", N)
    as_matrix = from_matrix(mixing_matrix(ring))
    assert ring.layer(0).kind == "circulant" and as_matrix.layer(0).kind != "circulant"
    kw = dict(steps=40, lr=0.05, gamma=0.3, sigma=0.1, seed=2, backend=backend)
    fused = run_choco_sgd(prob, ring, TopK(2), **kw)
    csr = run_choco_sgd(prob, as_matrix, TopK(2), **kw)
    np.testing.assert_allclose(fused.x, csr.x, rtol=1e-12, atol=1e-14)  # other summation order
    np.testing.assert_allclose(fused.node_dist_sq, csr.node_dist_sq, rtol=1e-10)


def test_observer_sees_every_step_and_changes_nothing():
    steps = 12
    m = build_method("choco_gossip", compressor="top_k(k=1)", gamma=0.2)
    seen = []
    got = run(None, m, steps, rng=1, x0=choco_init(X0), watch=consensus_watch(X0, steps, 5), on_step=seen.append)
    assert seen == list(range(steps))
    assert_same_trace(got, run_choco_gossip(X0, "ring", TopK(1), gamma=0.2, steps=steps, rng=1, record_every=5))


def test_registered_with_family_and_settings():
    assert METHODS["choco_gossip"].family == METHODS["unreliable_gossip"].family == "consensus"
    assert METHODS["choco_sgd"].family == "nodes"
    assert {"compressor", "gamma", "topology"} <= set(METHODS["choco_sgd"].params)
    with pytest.raises(UserError, match="'gamma' = 0 is not allowed") as err:
        build_method("choco_gossip", compressor="top_k(k=1)", gamma=0)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="setting 'gamma' is required"):
        build_method("choco_sgd", compressor="top_k(k=1)", lr=0.1)
    with pytest.raises(UserError, match="Bernoulli drop rate"):
        build_method("unreliable_gossip", kind="gilbert_elliott", q=0.2)
