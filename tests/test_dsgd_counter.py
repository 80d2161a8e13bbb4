"""Counter-based DSGD noise, device-ready runs (array namespace), the diagonal problem, the dsgd_run experiment."""

import math
from pathlib import Path

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import available_backends, get_backend, use
from simcomm.backends._numpy.quant import counter_uniforms
from simcomm.models import heterogeneous_least_squares, logistic_problem
from simcomm.models._decentralized import (
    NODE_PROBLEMS,
    diagonal_quadratic,
    global_gradient,
    global_loss,
    heterogeneity,
    make_node_problem,
    node_gradients,
    node_slice,
    suboptimality,
)
from simcomm.optim import dsgd_init, dsgd_update, run_dsgd
from simcomm.optim._decentralized import counter_keys, node_noise_rng
from simcomm.topology import exponential, one_peer_exponential, star, torus
from tests.conftest import N_SIGMA

SIMS = Path(__file__).resolve().parents[1] / "sims"
gpu = pytest.mark.skipif("cupy" not in available_backends(), reason="needs CuPy (gpu extra) and a CUDA device")


def _keys(n, seed=12345):
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


# --------------------------------------------------------------------------- the kernel


@pytest.mark.parametrize("step", [0, 3, 2**40 + 7])
def test_counter_normals_follow_the_formula(step):
    # the specification the other backends implement: u1, u2 are uniforms 2c and 2c + 1 of the
    # SplitMix64 counter stream of quant.counter_uniforms, c = step * d + j; Box-Muller, cosine branch
    n, d, sigma = 3, 7, 0.7
    keys = _keys(n)
    G0 = np.random.default_rng(1).standard_normal((n, d))
    G = get_backend("numpy").add_counter_normals(G0.copy(), keys, step, sigma)
    for i in range(n):
        u = counter_uniforms(int(keys[i]), 2 * d, start=2 * step * d)
        z = np.sqrt(-2.0 * np.log(1.0 - u[0::2])) * np.cos(2.0 * np.pi * u[1::2])
        np.testing.assert_array_equal(G[i], G0[i] + sigma * z)


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 40_000), (70, 1000)])  # serial, parallel, several blocks
def test_counter_normals_numba_matches_numpy(shape):
    keys = _keys(shape[0])
    G0 = np.random.default_rng(2).standard_normal(shape)
    ref = get_backend("numpy").add_counter_normals(G0.copy(), keys, 11, 1.3)
    got = get_backend("numba").add_counter_normals(G0.copy(), keys, 11, 1.3)
    # libm log/cos (numba) against numpy's SIMD loops: a few ulp apart, never more
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
    assert not np.array_equal(ref, G0)


def test_counter_normals_are_standard_normal():
    # N draws: |mean| < N_SIGMA / sqrt(N) (sd of a mean of N(0, 1) draws), |mean(z^2) - 1| <
    # N_SIGMA sqrt(2 / N) (var z^2 = 2), and P(|z| < 1) = 0.6827 within N_SIGMA binomial standard errors
    n, d, steps = 8, 5000, 10
    be = get_backend("numba")
    keys = _keys(n)
    Z = np.stack([be.add_counter_normals(np.zeros((n, d)), keys, k, 1.0) for k in range(steps)])
    N = Z.size
    assert abs(Z.mean()) < N_SIGMA / math.sqrt(N)
    assert abs(np.mean(Z**2) - 1.0) < N_SIGMA * math.sqrt(2.0 / N)
    p = math.erf(1 / math.sqrt(2))
    assert abs(np.mean(np.abs(Z) < 1.0) - p) < N_SIGMA * math.sqrt(p * (1 - p) / N)


def test_counter_normals_rows_and_steps_are_independent():
    # sample correlation of two independent N(0, 1) vectors of length m is ~ N(0, 1/m): |r| < N_SIGMA/sqrt(m)
    n, d = 6, 20_000
    be = get_backend("numba")
    keys = _keys(n)
    A = be.add_counter_normals(np.zeros((n, d)), keys, 0, 1.0)
    B = be.add_counter_normals(np.zeros((n, d)), keys, 1, 1.0)
    lim = N_SIGMA / math.sqrt(d)
    for i in range(n):
        assert abs(np.corrcoef(A[i], B[i])[0, 1]) < lim  # same node, consecutive steps
        for j in range(i + 1, n):
            assert abs(np.corrcoef(A[i], A[j])[0, 1]) < lim  # same step, different nodes
    # lagged within a row: coordinate j against j + 1 (adjacent counters)
    assert abs(np.corrcoef(A[0, :-1], A[0, 1:])[0, 1]) < N_SIGMA / math.sqrt(d - 1)
    # the same key and step give the same draw (a pure function), whatever else is in G
    np.testing.assert_array_equal(be.add_counter_normals(np.zeros((2, d)), keys[2:4], 1, 1.0), B[2:4])


# --------------------------------------------------------------------------- run_dsgd(noise=...)


def test_counter_keys_are_the_node_streams_first_draw():
    keys = counter_keys(9, 5)
    assert keys.dtype == np.uint64 and len(set(keys.tolist())) == 5
    for i in range(5):
        assert keys[i] == node_noise_rng(9, i).integers(0, 2**64, dtype=np.uint64)


def test_counter_run_is_dsgd_with_counter_normals():
    # run_dsgd(noise="counter") = the one-step update fed with grad + sigma * counter normals of step k
    n, d, steps, sigma, seed = 8, 4, 9, 0.5, 3
    prob = heterogeneous_least_squares(n, d, b=1.0, rng=np.random.default_rng(12345))
    topo = one_peer_exponential(n)
    tr = run_dsgd(prob, topo, steps=steps, lr=0.05, beta=0.8, sigma=sigma, seed=seed, noise="counter",
                  backend="numpy")
    be, keys = get_backend("numpy"), counter_keys(seed, n)
    s = dsgd_init(prob.x0, n)
    for k in range(steps):
        G = be.add_counter_normals(node_gradients(prob, s.x), keys, k, sigma)
        s = dsgd_update(s, G, topo, lr=0.05, beta=0.8, backend="numpy")
    np.testing.assert_array_equal(tr.x, s.x)


@pytest.mark.parametrize("make", [lambda: heterogeneous_least_squares(8, 5, b=1.0, rng=1),
                                  lambda: diagonal_quadratic(8, 300, b=1.0, rng=1),
                                  lambda: logistic_problem(8, n_samples=400, rng=2)])
@pytest.mark.parametrize("topo", [exponential(8), torus(2, 4), star(8), "parallel"])  # shift, csr, csr, mean
def test_counter_run_numba_matches_numpy(make, topo):
    prob = make()
    kw = dict(steps=15, lr=0.05, beta=0.5, sigma=0.3, seed=4, record_every=5, noise="counter")
    a = run_dsgd(prob, topo, backend="numpy", **kw)
    b = run_dsgd(prob, topo, backend="numba", **kw)
    np.testing.assert_allclose(b.x, a.x, rtol=1e-10, atol=1e-12)
    for f in ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-9, atol=1e-14)
    # and it is not the stream run: a different, documented generator
    assert not np.allclose(run_dsgd(prob, topo, backend="numpy", **{**kw, "noise": "stream"}).x, a.x)


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_auto_noise_is_the_stream_on_the_host(backend_name):
    prob = heterogeneous_least_squares(6, 3, b=1.0, rng=5)
    kw = dict(steps=6, lr=0.05, sigma=0.5, seed=2, backend=backend_name)
    a, b = run_dsgd(prob, "ring", **kw), run_dsgd(prob, "ring", noise="stream", **kw)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.consensus, b.consensus)


def _fake_device_backend():
    # the numpy kernels behind an array namespace that is not the numpy module: run_dsgd takes every
    # device branch (state built with xp, problem_to, CSR plans and counter keys moved, auto -> counter)
    # while the arrays stay numpy, so the device path's logic runs and is checked on the CPU
    import types

    xp = types.ModuleType("fake_xp")
    xp.__getattr__ = lambda name: getattr(np, name)
    be = types.ModuleType("fake_device")
    src = get_backend("numpy")
    for name in dir(src):
        if not name.startswith("__"):
            setattr(be, name, getattr(src, name))
    be.xp, be.NAME = xp, "fake_device"
    return be


@pytest.mark.parametrize("topo", [one_peer_exponential(8), torus(2, 4), "parallel"])
def test_device_branches_equal_the_host_run(topo):
    prob = diagonal_quadratic(8, 50, b=1.0, rng=3)
    kw = dict(steps=10, lr=0.1, beta=0.5, sigma=0.4, seed=6, record_every=3)
    dev = run_dsgd(prob, topo, backend=_fake_device_backend(), **kw)  # noise="auto": counter on a device
    host = run_dsgd(prob, topo, backend="numpy", noise="counter", **kw)
    np.testing.assert_array_equal(dev.x, host.x)
    np.testing.assert_array_equal(dev.subopt, host.subopt)
    assert not np.array_equal(run_dsgd(prob, topo, backend="numpy", **kw).x, host.x)  # auto on the host: stream


def test_bad_noise_name_is_one_line():
    prob = heterogeneous_least_squares(4, 2, rng=0)
    with pytest.raises(UserError, match="unknown noise 'countr'.*counter") as err:
        run_dsgd(prob, "ring", steps=2, lr=0.1, noise="countr")
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- the diagonal problem


@pytest.mark.parametrize("n, d, b", [(8, 50, 0.7), (3, 1, 2.0), (16, 1000, 0.0)])
def test_diagonal_constants_are_exact(n, d, b):
    prob = diagonal_quadratic(n, d, b=b, mu=0.05, L=2.0, rng=np.random.default_rng(12345))
    assert prob.n == n and prob.d == d and "diagonal" in NODE_PROBLEMS
    # L and mu are the extreme curvatures, attained
    assert prob.L == (2.0 if d > 1 else 0.05) and prob.mu == 0.05
    assert prob.h.min() == prob.mu and prob.h.max() == prob.L
    # heterogeneity at x*: exactly b up to rounding, measured from the node gradients
    assert math.isclose(prob.b, b, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(heterogeneity(prob), b, rel_tol=1e-12, abs_tol=1e-15)
    # x* minimises f: the mean of the node gradients vanishes there (centres average to x*)
    G = node_gradients(prob, np.tile(prob.x_star, (n, 1)))
    assert np.abs(G.mean(axis=0)).max() < 1e-13 * (1 + np.abs(G).max())
    # f* closed form = f(x*) evaluated through the node losses
    assert math.isclose(global_loss(prob, prob.x_star), prob.f_star, rel_tol=1e-12, abs_tol=1e-15)
    # f(x) - f* = 1/2 sum h (x - x*)^2, and grad f matches a central difference of f
    x = prob.x_star + np.random.default_rng(3).standard_normal(d)
    assert math.isclose(global_loss(prob, x) - prob.f_star, suboptimality(prob, x), rel_tol=1e-10)
    j, eps = d // 2, 1e-4
    e = np.zeros(d)
    e[j] = eps
    fd = (global_loss(prob, x + e) - global_loss(prob, x - e)) / (2 * eps)  # exact for a quadratic up to rounding
    assert math.isclose(fd, global_gradient(prob, x)[j], rel_tol=1e-6, abs_tol=1e-8)


def test_diagonal_problem_is_the_same_on_every_backend():
    # built from counter normals by the backend: numpy and numba agree up to libm rounding
    with use("numpy"):
        a = diagonal_quadratic(6, 500, b=0.8, rng=7)
    with use("numba"):
        c = diagonal_quadratic(6, 500, b=0.8, rng=7)
    np.testing.assert_allclose(c.centers, a.centers, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.x_star, a.x_star, rtol=1e-12, atol=1e-12)
    assert math.isclose(c.f_star, a.f_star, rel_tol=1e-12) and (c.L, c.mu) == (a.L, a.mu)
    assert not np.allclose(diagonal_quadratic(6, 500, b=0.8, rng=8).x_star, a.x_star)  # the seed matters


def test_diagonal_bad_input():
    with pytest.raises(UserError, match="impossible with one node"):
        diagonal_quadratic(1, 3, b=1.0, rng=0)
    with pytest.raises(UserError, match="0 < mu <= L"):
        diagonal_quadratic(4, 3, mu=2.0, L=1.0, rng=0)
    with pytest.raises(UserError, match="heterogeneity b"):
        diagonal_quadratic(4, 3, b=-1.0, rng=0)
    assert diagonal_quadratic(1, 3, b=0.0, rng=0).n == 1


def test_diagonal_dsgd_converges_without_noise_and_heterogeneity():
    prob = make_node_problem("diagonal", 16, d=200, b=0.0, rng=np.random.default_rng(12345))
    tr = run_dsgd(prob, "one_peer_exponential", steps=300, lr=0.5, seed=0)
    # contraction per step at least 1 - lr mu = 0.95 once in consensus: 300 steps shrink it far below 1e-5
    assert tr.subopt[-1] < 1e-5 * tr.subopt[0]
    np.testing.assert_allclose(tr.x, np.tile(prob.x_star, (16, 1)), atol=1e-3)


def test_node_slice_holds_one_node():
    prob = diagonal_quadratic(5, 4, b=1.0, rng=0)
    one = node_slice(prob, 2, 3)
    X = np.random.default_rng(0).standard_normal((5, 4))
    np.testing.assert_array_equal(node_gradients(one, X[2:3]), node_gradients(prob, X)[2:3])


# --------------------------------------------------------------------------- the dsgd_run experiment


def test_dsgd_run_quick_spec_runs_and_backends_agree():
    from simcomm.runner import run
    from simcomm.spec import load

    spec = load(SIMS / "extra" / "dsgd_large.toml", quick=True)
    tables = {b: run(spec, backend=b).table for b in ("numpy", "numba")}
    for t in tables.values():
        vals = dict(zip(t["metric"], t["value"]))
        assert set(vals) == {"consensus", "subopt", "node_grad_norm_sq", "setup_seconds", "run_seconds"}
        assert all(np.isfinite(v) and v >= 0 for v in vals.values())
        assert not t["note"].fillna("").astype(str).str.len().any()  # no divergence
    # counter noise: both backends compute the same run
    a, b = (tables[k].set_index("metric")["value"] for k in ("numpy", "numba"))
    for m in ("consensus", "subopt", "node_grad_norm_sq"):
        assert math.isclose(a[m], b[m], rel_tol=1e-9)


def test_dsgd_run_records_divergence():
    from simcomm.experiments import get_experiment

    exp = get_experiment("dsgd_run")
    # lr * L = 4 > 2: gradient descent on the largest curvature diverges
    params = exp.validate(dict(n=4, d=20, lr=4.0, steps=200, sigma=0.0), "test")
    rows = exp.func(params, np.random.default_rng(1), None)
    sub = next(r for r in rows if r["metric"] == "subopt")
    assert sub["note"].startswith("diverged at step") and sub["value"] == math.inf  # optim._driver convention


# --------------------------------------------------------------------------- on the device


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("make", [lambda: heterogeneous_least_squares(8, 5, b=1.0, rng=1),
                                  lambda: diagonal_quadratic(8, 300, b=1.0, rng=1),
                                  lambda: logistic_problem(8, n_samples=400, rng=2)])
@pytest.mark.parametrize("topo", [exponential(8), one_peer_exponential(8), torus(2, 4), "parallel"])
@pytest.mark.parametrize("noise", ["stream", "counter"])
def test_cupy_run_matches_numpy(make, topo, noise):
    prob = make()
    kw = dict(steps=12, lr=0.05, beta=0.5, sigma=0.3, seed=4, record_every=4, noise=noise)
    a = run_dsgd(prob, topo, backend="numpy", **kw)
    b = run_dsgd(prob, topo, backend="cupy", **kw)
    assert type(b.x) is np.ndarray  # the trace comes back to the host
    np.testing.assert_allclose(b.x, a.x, rtol=1e-9, atol=1e-12)
    for f in ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-8, atol=1e-14)


@gpu
@pytest.mark.gpu
def test_cupy_counter_normals_match_numpy():
    import cupy as cp

    keys = _keys(9)
    ref = get_backend("numpy").add_counter_normals(np.zeros((9, 5000)), keys, 7, 1.0)
    got = get_backend("cupy").add_counter_normals(cp.zeros((9, 5000)), cp.asarray(keys), 7, 1.0)
    np.testing.assert_allclose(cp.asnumpy(got), ref, rtol=1e-13, atol=1e-13)
