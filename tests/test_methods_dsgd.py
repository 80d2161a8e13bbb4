"""The named method "dsgd" (family nodes): from spec-style settings through run(), against run_dsgd bit for bit;
its acceleration (the numba whole run) against the step-by-step composition; dsgd_update as its step."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import use
from simcomm.models import heterogeneous_least_squares
from simcomm.models._decentralized import diagonal_quadratic, node_gradients
from simcomm.optim import ACCELERATIONS, METHODS, build_method, dsgd_init, dsgd_update, run, run_dsgd
from simcomm.optim._decentralized import _run_fused, dsgd_watch
from simcomm.optim._watch_nodes import NodeWatch


def _same(a, b):
    assert np.array_equal(a.step, b.step) and np.array_equal(a.diverged_at, b.diverged_at)
    assert a.records.keys() == b.records.keys()
    for name in a.records:
        assert np.array_equal(a.records[name], b.records[name], equal_nan=True), name
    assert np.array_equal(a.x, b.x, equal_nan=True)


def _run_named(prob, settings, steps, backend, record_every=1, blowup=1e12, on_step=None):
    x = dsgd_init(prob.x0, prob.n).x
    m = build_method("dsgd", **settings)
    watch = dsgd_watch(prob, settings["topology"], steps, record_every, blowup)
    with np.errstate(all="ignore"):
        return run(prob, m, steps, x0=x, backend=backend, record_every=record_every, on_step=on_step, watch=watch)


# one row per configuration: spec-style settings (strings and numbers), the backend, the run's options
ROWS = [
    ("ring", dict(lr=0.05), "numpy", 1),
    ("exponential", dict(lr=0.05, beta=0.9, sigma=0.5, seed=3, noise="stream", schedule="inv_sqrt", k0=5), "numpy", 7),
    ("one_peer_exponential", dict(lr=0.1, beta=0.5, sigma=1.0, seed=1, schedule="cosine"), "numba", 3),
    ("parallel", dict(lr=0.05, beta=0.9, sigma=0.5, seed=2, noise="counter"), "numpy", 4),
    ("torus", dict(lr=0.05, beta=0.9, sigma=0.5, seed=2), "numba", 5),
    ("ring", dict(lr=50.0, sigma=1.0, seed=2), "numpy", 1),  # diverges: stopped at a recorded step
]


@pytest.mark.parametrize("topology,settings,backend,every", ROWS)
@pytest.mark.parametrize("problem", ["least_squares", "diagonal"])
def test_named_dsgd_through_run_is_run_dsgd(topology, settings, backend, every, problem):
    prob = (heterogeneous_least_squares(8, 4, b=1.0, rng=0) if problem == "least_squares"
            else diagonal_quadratic(8, 30, b=1.0, rng=3))
    got = _run_named(prob, {"topology": topology, **settings}, 120, backend, every)
    want = run_dsgd(prob, topology, steps=120, record_every=every, backend=backend, **settings)
    _same(got, want)
    assert METHODS["dsgd"].family == "nodes"


def test_the_acceleration_equals_the_composition():
    # numba on least squares: run() takes the registered whole-run loop unless an observer is attached
    prob = heterogeneous_least_squares(12, 5, b=1.0, rng=3)
    settings = dict(topology="torus", lr=0.05, beta=0.9, sigma=0.5, seed=4, schedule="inv_sqrt", k0=5.0)
    assert _run_fused in ACCELERATIONS["dsgd"]
    x = dsgd_init(prob.x0, prob.n).x
    with use("numba"):
        fast = _run_fused(prob, build_method("dsgd", **settings), 300, x0=x.copy(),
                          watch=dsgd_watch(prob, "torus", 300, 7))
    assert fast is not None
    _same(fast, _run_named(prob, settings, 300, "numba", 7))
    seen = []
    slow = _run_named(prob, settings, 300, "numba", 7, on_step=seen.append)  # step by step
    assert seen == list(range(300))
    # the compiled loop sums the gradient's dot products in another order than BLAS: equal to rounding
    assert np.array_equal(slow.step, fast.step) and np.array_equal(slow.diverged_at, fast.diverged_at)
    for name in slow.records:
        np.testing.assert_allclose(fast.records[name], slow.records[name], rtol=1e-11, atol=1e-13, err_msg=name)
    np.testing.assert_allclose(fast.x, slow.x, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_acceleration_stands_aside_where_it_does_not_apply(backend):
    prob = heterogeneous_least_squares(8, 4, b=1.0, rng=0)
    m = build_method("dsgd", topology="ring", lr=0.05, sigma=0.5, noise="counter" if backend == "numba" else "auto")
    x = dsgd_init(prob.x0, prob.n).x
    with use(backend):
        assert _run_fused(prob, m, 10, x0=x, watch=dsgd_watch(prob, "ring", 10)) is None


@pytest.mark.parametrize("topology", ["exponential", "one_peer_exponential", "parallel", "torus"])
def test_dsgd_update_is_the_methods_step(topology):
    # without noise the method's step is dsgd_update of the nodes' gradients: the same iterates bit for bit
    prob = heterogeneous_least_squares(8, 4, b=1.0, rng=1)
    steps, lr, beta = 9, 0.07, 0.8
    tr = _run_named(prob, dict(topology=topology, lr=lr, beta=beta), steps, "numpy")
    s = dsgd_init(prob.x0, prob.n)
    for _ in range(steps):
        s = dsgd_update(s, node_gradients(prob, s.x), topology, lr=lr, beta=beta, backend="numpy")
    assert np.array_equal(tr.x, s.x)


def test_dsgd_settings_are_checked_like_a_spec():
    with pytest.raises(UserError, match="'noise' = 'countr' is not allowed.*counter"):
        build_method("dsgd", topology="ring", lr=0.1, noise="countr")
    with pytest.raises(UserError, match="setting 'lr' is required"):
        build_method("dsgd", topology="ring")
    with pytest.raises(UserError, match="'beta' = 1.0 is not allowed"):
        build_method("dsgd", topology="ring", lr=0.1, beta=1.0)
    m = build_method("dsgd", topology="ring", lr=1)
    assert m.name == "dsgd" and m.settings["lr"] == 1.0 and m.settings["noise"] == "auto"
    # given a watch but a server's (R, d) iterate, the nodes' step says so in one line
    prob = heterogeneous_least_squares(8, 4, rng=0)
    with pytest.raises(UserError, match=r"one \(n, d\) array with n = 8.*x0 of shape \(d,\)") as err:
        run(prob, m, 5, x0=prob.x0[None], backend="numpy", watch=dsgd_watch(prob, "ring", 5))
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="one trajectory"):
        run(prob, m, 5, replicates=2)


def test_node_watch_records_by_name_and_stops_at_a_blowup():
    # a watch of another measure (as gradient tracking's): NaN fill, one watched record, a counter
    prob = heterogeneous_least_squares(8, 4, b=1.0, rng=0)

    def measure(p, X, k):
        E = X - p.x_star
        return float(np.sum(E * E) / X.shape[0]), float(np.abs(X).max())

    watch = NodeWatch(prob, measure, ("node_dist_sq", "peak"), 200, 10, blowup=100.0, watched=("node_dist_sq",),
                      counters=lambda steps: {"updates": steps.astype(float)}, error_like=False)
    m = build_method("dsgd", topology="ring", lr=5.0 / prob.L)
    with np.errstate(all="ignore"):
        tr = run(prob, m, 200, x0=dsgd_init(prob.x0, prob.n).x, backend="numpy", watch=watch)
    at = int(tr.diverged_at[0])
    assert 0 < at < 200 and at % 10 == 0 and watch.done
    made = tr.step < at
    assert np.all(np.isfinite(tr.node_dist_sq[made])) and np.all(np.isnan(tr.node_dist_sq[~made]))
    assert np.all(tr.node_dist_sq[made] <= 100.0 * (1.0 + tr.node_dist_sq[0]))
    assert np.array_equal(tr.records["updates"], tr.step.astype(float))
