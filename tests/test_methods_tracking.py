"""The named decentralized methods of the tracking family, run from their spec settings by ``run``.

One row per named method: ``build_method(name, **settings)`` (spec values: strings and numbers) run by
:func:`simcomm.optim.run` with the family's watch equals the public driver bit for bit; the public pure
step is the method's step.
"""

import numpy as np
import pytest

from simcomm.backends import use
from simcomm.models import diagonal_quadratic, heterogeneous_least_squares
from simcomm.models._decentralized import node_gradients
from simcomm.optim import (
    ACCELERATIONS,
    METHODS,
    Ctx,
    build_method,
    ed_init,
    ed_update,
    gt_init,
    gt_update,
    pushsum_init,
    pushsum_update,
    run,
    run_pushsum,
    run_pushsum_sgd,
    run_tracking,
)
from simcomm.optim._watch_nodes import pushsum_sgd_watch, pushsum_watch, tracking_watch
from simcomm.topology import build, s_out

N, D, STEPS = 8, 4, 30
PROB = heterogeneous_least_squares(N, D, b=1.0, rng=0)
X0 = np.arange(N * 3, dtype=float).reshape(N, 3) ** 1.5


def _tracking_start(name, p):
    return gt_init(p.x0, p.n) if name == "gradient_tracking" else ed_init(p.x0, p.n)


def _pushsum_sgd_start(p):
    return pushsum_init(np.tile(p.x0, (p.n, 1)))


# name, spec settings, the public driver's call, the run of the named method
ROWS = [
    ("gradient_tracking", dict(topology="exponential", lr=0.05, sigma=0.3, seed=4),
     lambda: run_tracking(PROB, "exponential", steps=STEPS, lr=0.05, sigma=0.3, seed=4, record_every=4),
     lambda m: run(PROB, m, STEPS, x0=_tracking_start("gradient_tracking", PROB),
                   watch=tracking_watch(PROB, STEPS, 4))),
    ("gradient_tracking", dict(topology="ring", lr=0.05, tracker_start="zero"),
     lambda: run_tracking(PROB, "ring", steps=STEPS, lr=0.05, tracker_start="zero", backend="numba"),
     lambda m: run(PROB, m, STEPS, x0=_tracking_start("gradient_tracking", PROB), backend="numba",
                   watch=tracking_watch(PROB, STEPS))),
    ("exact_diffusion", dict(topology="ring", lr=0.05, correction=False, sigma=0.5, seed=2),
     lambda: run_tracking(PROB, "ring", method="exact_diffusion", steps=STEPS, lr=0.05, correction=False, sigma=0.5,
                          seed=2, record_every=3),
     lambda m: run(PROB, m, STEPS, x0=_tracking_start("exact_diffusion", PROB), watch=tracking_watch(PROB, STEPS, 3))),
    ("pushsum", dict(topology="directed_exponential"),
     lambda: run_pushsum(X0, "directed_exponential", steps=STEPS, debias=False, backend="numba"),
     lambda m: run(None, m, STEPS, x0=pushsum_init(X0), backend="numba",
                   watch=pushsum_watch(pushsum_init(X0), STEPS, debias=False))),
    ("pushsum_sgd", dict(topology="torus", lr=0.05, sigma=0.2, seed=1),
     lambda: run_pushsum_sgd(PROB, "torus", steps=STEPS, lr=0.05, sigma=0.2, seed=1, record_every=5),
     lambda m: run(PROB, m, STEPS, x0=_pushsum_sgd_start(PROB), watch=pushsum_sgd_watch(PROB, STEPS, 5))),
    ("pushsum_sgd", dict(topology="ring", lr=0.05, debias=False),
     lambda: run_pushsum_sgd(PROB, "ring", steps=STEPS, lr=0.05, debias=False),
     lambda m: run(PROB, m, STEPS, x0=_pushsum_sgd_start(PROB), watch=pushsum_sgd_watch(PROB, STEPS, debias=False))),
]


def _same(a, b):
    assert a.records.keys() == b.records.keys()
    np.testing.assert_array_equal(a.step, b.step)
    for key in a.records:
        np.testing.assert_array_equal(a.records[key], b.records[key])
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)


@pytest.mark.parametrize("name, settings, public, composed", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_named_method_equals_its_public_driver(name, settings, public, composed):
    m = build_method(name, **settings)
    assert m.name == name and METHODS[name].family == ("consensus" if name == "pushsum" else "nodes")
    _same(composed(m), public())


@pytest.mark.parametrize("name", ["gradient_tracking", "exact_diffusion", "pushsum", "pushsum_sgd"])
def test_no_compiled_whole_run_path(name):
    # the fused per-step kernels (gt_shift_step, pushsum_shift_step) are chosen inside the blocks
    assert name in METHODS and not ACCELERATIONS.get(name)


def test_drawn_topology_from_the_run_stream():
    draw = lambda r: s_out(N, 1, rng=r, weighting="push")  # noqa: E731
    m = build_method("pushsum", topology=draw)
    _same(run(None, m, STEPS, rng=3, x0=pushsum_init(X0), watch=pushsum_watch(pushsum_init(X0), STEPS)),
          run_pushsum(X0, draw, steps=STEPS, rng=3))


def test_divergence_stops_the_run_and_keeps_the_schedule():
    p = diagonal_quadratic(N, 5, rng=2)
    seen = []
    m = build_method("gradient_tracking", topology="exponential", lr=50.0 / p.L)
    tr = run(p, m, 60, x0=gt_init(p.x0, N), watch=tracking_watch(p, 60, 4), on_step=seen.append)
    _same(tr, run_tracking(p, "exponential", steps=60, lr=50.0 / p.L, record_every=4))
    k = int(tr.diverged_at[0])
    assert k > 0 and seen == list(range(k)) and tr.step[-1] == 60
    assert np.isnan(tr.node_dist_sq[tr.step >= k]).all() and np.isfinite(tr.node_dist_sq[tr.step < k]).all()


def test_zero_steps_record_the_start():
    tr = run_tracking(PROB, "ring", steps=0, lr=0.1)
    assert tr.step.tolist() == [0] and tr.diverged_at.tolist() == [-1]
    np.testing.assert_array_equal(tr.x, np.tile(PROB.x0, (N, 1)))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_public_pure_steps_are_the_methods_steps(backend):
    grads = lambda s: node_gradients(PROB, s.x)  # noqa: E731
    topo = build("ring", N)
    cases = [
        ("gradient_tracking", dict(topology="ring", lr=0.05), gt_init(PROB.x0, N),
         lambda s, G: gt_update(s, G, topo, lr=0.05, backend=backend)),
        ("exact_diffusion", dict(topology="ring", lr=0.05), ed_init(PROB.x0, N),
         lambda s, G: ed_update(s, G, topo, lr=0.05, backend=backend)),
        ("pushsum_sgd", dict(topology="ring", lr=0.05, debias=False), _pushsum_sgd_start(PROB),
         lambda s, G: pushsum_update(s, G, topo, lr=0.05, backend=backend)),
    ]
    for name, settings, s, pure in cases:
        m = build_method(name, **settings)
        ctx = Ctx(PROB, 0, 5, np.random.default_rng(0))
        with use(backend):
            state, ref = m.init(s, ctx), s
            for k in range(5):
                s, state = m.step(s, state, ctx._replace(k=k))
                ref = pure(ref, grads(ref))
            for a, b in zip(s, ref):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("topology", ["ring", "torus"])  # the fused shift kernel, and the mix of a 2-D torus
def test_gt_update_out_equals_the_pure_step_and_refuses_bad_buffers(topology):
    from simcomm import UserError
    from simcomm.optim import GTState, gt_update

    rng = np.random.default_rng(11)
    n, d = 16, 300
    s = GTState(*(rng.standard_normal((n, d)) for _ in range(3)), 2)
    G = rng.standard_normal((n, d))
    ref = gt_update(s, G, topology, lr=0.1, backend="numba")
    out = GTState(*(np.full((n, d), np.nan) for _ in range(3)), 0)
    got = gt_update(s, G, topology, lr=0.1, out=out, backend="numba")
    assert got.x is out.x and got.y is out.y and got.g is out.g and got.k == 3
    for a, b in zip(got[:3], ref[:3]):
        np.testing.assert_array_equal(a, b)
    bad = {
        "shape": GTState(np.empty((n, d + 1)), out.y, out.g, 0),
        "dtype": GTState(out.x.astype(np.float32), out.y, out.g, 0),
        "state": GTState(s.x, out.y, out.g, 0),
        "grads": GTState(out.x, out.y, G, 0),
        "itself": GTState(out.x, out.x, out.g, 0),
    }
    for name, o in bad.items():
        with pytest.raises(UserError) as err:
            gt_update(s, G, topology, lr=0.1, out=o)
        assert "\n" not in str(err.value) and "out" in str(err.value), name
