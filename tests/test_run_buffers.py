"""A run of a decentralized method writes its states into two buffers it alternates: the same values as the pure steps.

Each runner (gradient tracking, CHOCO-Gossip and CHOCO-SGD, push-sum and push-sum SGD, gossip over
unreliable links) equals, bit for bit, the loop of its public pure step (fresh arrays every step),
over enough steps that every buffer is written more than once; the start the caller passes is
never written; the pure steps with ``out=`` equal them without.
"""

import numpy as np
import pytest

from simcomm.compress import TopK
from simcomm.models import heterogeneous_least_squares
from simcomm.models._decentralized import node_gradients
from simcomm.optim import (
    ChocoState,
    PushSumState,
    build_method,
    choco_init,
    choco_update,
    ed_init,
    ed_update,
    gt_init,
    gt_update,
    pushsum_init,
    pushsum_update,
    run,
    run_choco_gossip,
    run_choco_sgd,
    run_pushsum,
    run_pushsum_sgd,
    run_tracking,
    run_unreliable_gossip,
    uneven_digraph,
)
from simcomm.optim._watch_nodes import consensus_watch
from simcomm.topology import LinkFailures, directed_exponential, edge_list, ring, unreliable_mix

N, D, STEPS = 8, 40, 7
PROB = heterogeneous_least_squares(N, D, b=1.0, rng=0)
X0 = np.random.default_rng(3).standard_normal((N, D))
BACKENDS = ["numpy", "numba"]


def _same(a, b):
    assert a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("topo", ["ring", "exponential", "torus"])  # fused shifts (ring, exponential), CSR (torus)
def test_run_tracking_equals_pure_steps(backend, topo):
    lr = 0.1 / PROB.L
    tr = run_tracking(PROB, topo, steps=STEPS, lr=lr, backend=backend)
    s = gt_init(PROB.x0, N)
    for _ in range(STEPS):
        s = gt_update(s, node_gradients(PROB, s.x), topo, lr=lr, backend=backend)
    _same(tr.x, s.x)


@pytest.mark.parametrize("correction", [True, False])
@pytest.mark.parametrize("topo", ["ring", "torus"])
def test_run_exact_diffusion_equals_pure_steps(topo, correction):
    lr = 0.1 / PROB.L
    tr = run_tracking(PROB, topo, method="exact_diffusion", steps=STEPS, lr=lr, sigma=0.2, seed=3,
                      correction=correction)
    tr0 = run_tracking(PROB, topo, method="exact_diffusion", steps=0, lr=lr)
    s = ed_init(PROB.x0, N)
    _same(tr0.x, s.x)
    from simcomm.optim import Ctx
    from simcomm.optim._blocks_dsgd import gradient_at_nodes

    oracle = gradient_at_nodes(0.2, 3, at="x")
    g = oracle.init(s, Ctx(PROB, 0, STEPS, None))
    for k in range(STEPS):
        G, g = oracle.update(None, g, s, Ctx(PROB, k, STEPS, None))
        s = ed_update(s, G.copy(), topo, lr=lr, correction=correction)
    _same(tr.x, s.x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [3, D])  # top-k sent sparsely; k = d: the compressor's own (dense) path
def test_run_choco_equals_pure_steps(backend, k):
    comp = TopK(k)
    tr = run_choco_gossip(X0, "ring", comp, gamma=0.3, steps=STEPS, rng=1, backend=backend)
    s, rng = choco_init(X0), np.random.default_rng(1)
    for _ in range(STEPS):
        s = choco_update(s, None, "ring", comp, gamma=0.3, rng=rng, backend=backend)
    _same(tr.x, s.x)
    lr = 0.1 / PROB.L
    tr = run_choco_sgd(PROB, "ring", comp, steps=STEPS, lr=lr, gamma=0.3, rng=2, backend=backend)
    s, rng = choco_init(np.tile(PROB.x0, (N, 1))), np.random.default_rng(2)
    for _ in range(STEPS):
        s = choco_update(s, node_gradients(PROB, s.x), "ring", comp, lr=lr, gamma=0.3, rng=rng, backend=backend)
    _same(tr.x, s.x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_pushsum_equals_pure_steps(backend):
    t = directed_exponential(N, self_weights=np.linspace(0.1, 0.8, N))
    tr = run_pushsum(X0, t, steps=STEPS, backend=backend)
    s = pushsum_init(X0)
    for _ in range(STEPS):
        s = pushsum_update(s, None, t, backend=backend)
    _same(tr.x, s.z)
    lr = 0.1 / PROB.L
    t = uneven_digraph("directed_exponential", N, seed=0)
    tr = run_pushsum_sgd(PROB, t, steps=STEPS, lr=lr, backend=backend)
    s = pushsum_init(np.tile(PROB.x0, (N, 1)))
    for _ in range(STEPS):
        s = pushsum_update(s, node_gradients(PROB, s.z), t, lr=lr, backend=backend)
    _same(tr.x, s.z)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("compensate", [True, False])
def test_run_unreliable_gossip_equals_pure_steps(backend, compensate):
    fail = LinkFailures(q=0.3)
    tr = run_unreliable_gossip(X0, "torus", fail, steps=STEPS, rng=5, compensate=compensate, backend=backend)
    edges, rng = edge_list(_torus()), np.random.default_rng(5)
    channel, X = fail.init(edges, rng), X0.copy()
    from simcomm.backends import use

    with use(backend):
        for _ in range(STEPS):
            kept, channel = fail.draw(edges, channel, rng)
            X = unreliable_mix(edges, X, kept, compensate=compensate)
    _same(tr.x, X)


def _torus():
    from simcomm.optim._blocks_dsgd import resolve_topology

    return resolve_topology("torus", N)


def test_run_never_writes_the_callers_start():
    start = choco_init(X0)
    keep = start.x.copy(), start.x_hat.copy()
    m = build_method("choco_gossip", compressor=TopK(3), gamma=0.3, topology=ring(N))
    run(None, m, STEPS, rng=0, x0=start, watch=consensus_watch(start.x, STEPS))
    _same(start.x, keep[0])
    _same(start.x_hat, keep[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_pure_steps_with_out_equal_allocating(backend):
    rng = np.random.default_rng(0)
    G = rng.standard_normal((N, D))
    t = directed_exponential(N, self_weights=np.linspace(0.1, 0.8, N))
    s = PushSumState(X0, rng.uniform(0.5, 2.0, N), 0)
    out = PushSumState(np.empty((N, D)), np.empty(N), 0)
    got = pushsum_update(s, G, t, lr=0.1, out=out, backend=backend)
    ref = pushsum_update(s, G, t, lr=0.1, backend=backend)
    assert got.x is out.x and got.w is out.w
    _same(got.x, ref.x)
    _same(got.w, ref.w)
    c = ChocoState(X0, rng.standard_normal((N, D)), 0)
    outc = ChocoState(np.empty((N, D)), np.empty((N, D)), 0)
    for comp in (TopK(3), TopK(D)):
        for topo in ("ring", "torus"):
            got = choco_update(c, G, topo, comp, lr=0.1, gamma=0.3, rng=0, out=outc, backend=backend)
            ref = choco_update(c, G, topo, comp, lr=0.1, gamma=0.3, rng=0, backend=backend)
            assert got.x is outc.x and got.x_hat is outc.x_hat
            _same(got.x, ref.x)
            _same(got.x_hat, ref.x_hat)
    edges, kept = edge_list(_torus()), rng.random(16) >= 0.3
    from simcomm.backends import use

    with use(backend):
        for compensate in (True, False):
            buf = np.empty((N, D))
            got = unreliable_mix(edges, X0, kept[: edges.n_edges], compensate=compensate, out=buf)
            assert got is buf
            _same(got, unreliable_mix(edges, X0, kept[: edges.n_edges], compensate=compensate))


def test_out_must_be_apart():
    from simcomm import UserError

    s = pushsum_init(X0)
    with pytest.raises(UserError, match="overlaps"):
        pushsum_update(s, None, directed_exponential(N), out=PushSumState(s.x, np.empty(N), 0))
    with pytest.raises(UserError, match="overlaps X"):
        unreliable_mix(edge_list(ring(N)), X0, np.ones(N, dtype=bool), out=X0)


@pytest.mark.parametrize("terms", [1, 2, 3, 4, 5, 9])
def test_fused_kernels_numba_equal_numpy(terms):
    """The fused decentralized kernels (four shift terms per pass in numba) give the numpy reference's bits."""
    from simcomm.backends import get_backend

    nb, ref = get_backend("numba"), get_backend("numpy")
    rng = np.random.default_rng(terms)
    n, d = 11, 37
    X, Y, G, Gp, Xh, Q = (rng.standard_normal((n, d)) for _ in range(6))
    shifts, w = rng.choice(n, terms, replace=False), rng.uniform(0.0, 1.0, terms)
    got, want = ([np.empty((n, d)) for _ in range(3)] for _ in range(2))
    nb.gt_shift_step(X, Y, G, Gp, 0.03, shifts, w, *got)
    ref.gt_shift_step(X, Y, G, Gp, 0.03, shifts, w, *want)
    for a, b in zip(got, want):
        _same(a, b)
    W2, wt = rng.uniform(0.0, 1.0, (terms, n)), rng.uniform(0.5, 2.0, n)
    a, b = (be.pushsum_shift_step(X, wt, G, 0.03, shifts, W2, np.empty((n, d)), np.empty(n)) for be in (nb, ref))
    _same(a[0], b[0])
    _same(a[1], b[1])
    idx = np.sort(np.argsort(-np.abs(X), axis=1)[:, :4], axis=1)
    vals = np.take_along_axis(X, idx, axis=1)
    for g in (G, None):
        a, b = (be.choco_sparse_step(X, g, 0.03, Xh, idx, vals, 0.2, shifts, w, np.empty((n, d)), np.empty((n, d)))
                for be in (nb, ref))
        _same(a[0], b[0])
        _same(a[1], b[1])
    h1, h2 = Xh.copy(), Xh.copy()
    _same(nb.choco_shift_step(X, h1, Q, 0.2, shifts, w, np.empty((n, d))),
          ref.choco_shift_step(X, h2, Q, 0.2, shifts, w, np.empty((n, d))))
    _same(h1, h2)
