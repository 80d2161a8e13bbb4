"""simcomm.topology: closed forms, oracles, properties, backend parity, bad input."""

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import theory.expgraph as th
from simcomm._errors import UserError
from simcomm.backends import get_backend, use
from simcomm.topology import (
    DENSE_MAX,
    build,
    circulant_eigenvalues,
    complete,
    describe,
    erdos_renyi,
    exponential,
    from_matrix,
    from_networkx,
    grid,
    hypercube,
    is_doubly_stochastic,
    max_degree,
    mix,
    mixing_matrix,
    one_peer_exponential,
    product_deviation,
    rho,
    ring,
    spectral_gap,
    star,
    time_varying,
    to_networkx,
    topology_names,
    torus,
)
from tests import naive_topology as naive

# Deterministic linear algebra: FFT / LAPACK round-off on n <= 4096 is ~1e-15; 1e-12 leaves margin.
ATOL = 1e-12


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("n", [3, 4, 5, 8, 9, 16, 33])
def test_ring_eigenvalues_closed_form(n):
    # W = (I + S + S^-1)/3 has eigenvalues (1 + 2 cos(2 pi k/n))/3 (networkx-style closed form)
    lam = circulant_eigenvalues(ring(n))
    want = (1 + 2 * np.cos(2 * np.pi * np.arange(n) / n)) / 3
    np.testing.assert_allclose(lam.real, want, atol=ATOL)
    np.testing.assert_allclose(lam.imag, 0.0, atol=ATOL)


def test_ring8_spectral_gap():
    assert spectral_gap(ring(8)) == pytest.approx((2 - math.sqrt(2)) / 3, abs=ATOL)


# papers/exponential_graph.md C1 table (rounded to 4 decimals there)
RHO_TABLE = {4: 0.3333, 8: 0.5, 16: 0.6, 32: 0.6667, 64: 0.7143, 100: 0.75, 1024: 0.8182, 5: 0.25,
             7: 0.3536, 15: 0.4899, 31: 0.5623, 127: 0.6482, 255: 0.6788, 1023: 0.7268}


@pytest.mark.parametrize("n,value", sorted(RHO_TABLE.items()))
def test_rho_table_of_the_notes(n, value):
    assert rho(exponential(n)) == pytest.approx(value, abs=5e-5)


def test_rho_even_equality_and_odd_strict():
    for n in range(2, 300):
        r, b = rho(exponential(n)), th.rho_bound_static_exponential(n)
        if n % 2 == 0:
            assert abs(r - th.rho_static_exponential_even(n)) <= ATOL, n
        elif n >= 5:
            assert r < b - 1e-6, n
        else:
            assert r <= b + ATOL


def test_rho_large_n_is_fast_path():
    # n = 10^6 (even): equality with 1 - 2/(1 + 20); O(n) memory, no n x n matrix
    assert rho(exponential(10**6)) == pytest.approx(1 - 2 / 21, abs=ATOL)


@pytest.mark.parametrize("dim", [1, 2, 3, 5])
def test_hypercube_spectrum(dim):
    lam = np.sort(circulant_eigenvalues(hypercube(dim)).real.ravel())
    want = np.sort(th.eigenvalues("hypercube", 2**dim).real)
    np.testing.assert_allclose(lam, want, atol=ATOL)


@pytest.mark.parametrize("r,c", [(2, 2), (2, 3), (3, 3), (4, 6), (5, 2)])
def test_torus_matches_oracle_and_side_two_has_one_neighbour(r, c):
    W = mixing_matrix(torus(r, c))
    np.testing.assert_allclose(W, naive.metropolis_matrix(r * c, naive.torus_edges(r, c)), atol=ATOL)
    assert max_degree(torus(r, c)) == (2 if r > 2 else 1) + (2 if c > 2 else 1)
    assert rho(torus(r, c)) == pytest.approx(naive.dense_rho(W), abs=ATOL)


def test_torus_2x2_is_the_ring_of_4():
    perm = [0, 1, 3, 2]  # torus labels a*2 + b visited around the 4-cycle
    np.testing.assert_allclose(mixing_matrix(torus(2, 2))[np.ix_(perm, perm)], mixing_matrix(ring(4)), atol=ATOL)
    assert rho(torus(2, 2)) == pytest.approx(rho(ring(4)), abs=ATOL)


def test_star_gap_is_one_over_n():
    for n in (3, 10, 64, 700):  # 700 > 512: ARPACK path
        assert spectral_gap(star(n)) == pytest.approx(1 / n, abs=1e-10)


def test_small_shapes():
    assert np.allclose(mixing_matrix(ring(2)), 0.5)  # one neighbour, not two
    assert rho(ring(2)) == pytest.approx(0.0, abs=ATOL)
    assert rho(exponential(2)) == pytest.approx(0.0, abs=ATOL)
    assert rho(exponential(3)) == pytest.approx(0.0, abs=ATOL)  # tau = 2: complete graph
    assert one_peer_exponential(2).period == 1
    assert rho(complete(7)) < ATOL


# ----------------------------------------------------------------------------- oracles


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12, 17])
def test_matrices_match_definitions(n):
    np.testing.assert_allclose(mixing_matrix(ring(n)), naive.ring_matrix(n), atol=ATOL)
    np.testing.assert_allclose(mixing_matrix(exponential(n)), naive.exponential_matrix(n), atol=ATOL)
    topo = one_peer_exponential(n)
    for k in range(2 * topo.period):
        np.testing.assert_allclose(mixing_matrix(topo, k), naive.one_peer_matrix(n, k), atol=ATOL)
    assert rho(exponential(n)) == pytest.approx(naive.dense_rho(naive.exponential_matrix(n)), abs=ATOL)


@pytest.mark.parametrize("rule", ["metropolis", "max_degree"])
def test_grid_and_star_weights(rule):
    np.testing.assert_allclose(mixing_matrix(grid(3, 4, rule=rule)),
                               naive.metropolis_matrix(12, naive.grid_edges(3, 4), rule), atol=ATOL)
    edges = [(0, j) for j in range(1, 6)]
    np.testing.assert_allclose(mixing_matrix(star(6, rule=rule)), naive.metropolis_matrix(6, edges, rule), atol=ATOL)
    # re-weighting through mixing_matrix(rule=...) gives the same matrices
    np.testing.assert_allclose(mixing_matrix(grid(3, 4), rule=rule),
                               naive.metropolis_matrix(12, naive.grid_edges(3, 4), rule), atol=ATOL)


def test_rules_differ_on_irregular_graphs():
    assert not np.allclose(mixing_matrix(grid(3, 3), rule="metropolis"), mixing_matrix(grid(3, 3), rule="max_degree"))


def test_arpack_paths_match_dense():
    # n > 512 takes ARPACK (eigsh for symmetric, svds otherwise)
    for topo in (grid(24, 25), erdos_renyi(600, 0.02, rng=np.random.default_rng(12345))):
        assert rho(topo) == pytest.approx(naive.dense_rho(mixing_matrix(topo)), abs=1e-9)
    rng = np.random.default_rng(12345)
    n = 600
    P = sum(sp.csr_array((np.full(n, 0.25), (np.arange(n), rng.permutation(n))), shape=(n, n)) for _ in range(4))
    topo = from_matrix(P)
    assert topo.directed
    assert rho(topo) == pytest.approx(naive.dense_rho(P.toarray()), abs=1e-9)


# ----------------------------------------------------------------------------- one-peer


@pytest.mark.parametrize("p", range(1, 8))
def test_one_peer_exact_every_phase_dense(p):
    n = 2**p
    for k0 in range(p):
        prod = np.eye(n)
        for k in range(k0, k0 + p):
            prod = naive.one_peer_matrix(n, k) @ prod
        assert np.abs(prod - 1.0 / n).max() < ATOL
    assert product_deviation(one_peer_exponential(n)) < ATOL


def test_one_peer_exact_any_hop_order():
    topo = one_peer_exponential(64, order=[3, 0, 5, 1, 4, 2])
    X = np.eye(64)
    with use("numpy"):
        for k in range(6):
            X = mix(topo, X, k)
    assert np.abs(X - 1 / 64).max() == 0.0  # dyadic arithmetic: exact


@pytest.mark.parametrize("n", [3, 5, 6, 7, 12, 24, 48, 100, 1000, 1023, 1025, 3000])
def test_one_peer_inexact_matches_closed_form_and_floor(n):
    dev = product_deviation(one_peer_exponential(n))
    assert dev == pytest.approx(th.one_peer_deviation(n), abs=ATOL)
    assert dev >= th.one_peer_deviation_floor(n) - ATOL
    assert dev > 0


def test_product_deviation_generic_path_matches_dense():
    layers = [grid(3, 4), star(12), ring(12)]
    topo = time_varying(layers)
    P = mixing_matrix(ring(12)) @ mixing_matrix(star(12)) @ mixing_matrix(grid(3, 4))
    assert product_deviation(topo) == pytest.approx(naive.dense_rho(P), abs=ATOL)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 40), p=st.floats(0.3, 1.0), seed=st.integers(0, 2**16),
       rule=st.sampled_from(["metropolis", "max_degree"]))
def test_erdos_renyi_properties(n, p, seed, rule):
    try:
        topo = erdos_renyi(n, p, rng=seed, rule=rule)
    except UserError:
        return  # disconnected draw: the error path is tested separately
    W = mixing_matrix(topo)
    assert is_doubly_stochastic(W, atol=1e-12)
    assert np.array_equal(W, W.T)
    assert W.min() >= 0
    gap = spectral_gap(topo)
    assert 0 < gap <= 1 + ATOL


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(topology_names(random=False, time_varying=False)), n=st.integers(2, 70))
def test_constructors_doubly_stochastic_and_symmetric_when_undirected(name, n):
    try:
        topo = build(name, n)
    except UserError:
        return  # e.g. hypercube with n not a power of 2, torus with n prime
    W = mixing_matrix(topo)
    assert is_doubly_stochastic(topo) and is_doubly_stochastic(W)
    assert W.min() >= 0
    if not topo.directed:
        assert np.array_equal(W, W.T)
    assert 0 < spectral_gap(topo) <= 1 + ATOL  # every constructor here is connected
    assert rho(topo) == pytest.approx(naive.dense_rho(W), abs=1e-10)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 30), m=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_from_matrix_accepts_birkhoff_combinations(n, m, seed):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(m))
    W = sum(wi * np.eye(n)[rng.permutation(n)] for wi in w)
    topo = from_matrix(W)
    assert rho(topo) == pytest.approx(naive.dense_rho(W), abs=1e-10)
    assert topo.directed == (not np.allclose(W, W.T, atol=0, rtol=0))


# ----------------------------------------------------------------------------- mixing / backends

TOPOLOGIES = [ring(9), exponential(13), one_peer_exponential(10), torus(3, 4), hypercube(3), complete(70),
              star(8), grid(3, 3), erdos_renyi(12, 0.5, rng=np.random.default_rng(12345))]


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
def test_mix_equals_dense_product(topo, backend):
    rng = np.random.default_rng(12345)
    X = rng.standard_normal((topo.n, 5))
    for k in range(3):
        want = naive.gossip_loop(mixing_matrix(topo, k), X)
        with use(backend):
            np.testing.assert_allclose(mix(topo, X, k), want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_numba_parity(dtype):
    npb, nbb = get_backend("numpy"), get_backend("numba")
    rng = np.random.default_rng(12345)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    # (37, 11) runs the serial numba kernel, (300, 120) the row-parallel one (PARALLEL_MIN entries),
    # (8, 20000) the column-slab one (at least two slabs of 32768 // n columns)
    for n, d in ((37, 11), (300, 120), (8, 20_000)):
        X = rng.standard_normal((n, d)).astype(dtype)
        shifts, w = np.array([0, 1, 2, 4, 8, 16, 32, -3]), rng.dirichlet(np.ones(8))
        a, b = npb.shift_mix(X, shifts, w), nbb.shift_mix(X, shifts, w)
        assert a.dtype == b.dtype == dtype
        # same summation order in both kernels; rtol guards against a compiler contracting to FMA
        np.testing.assert_allclose(a, b, rtol=rtol)
        W = sp.csr_array(mixing_matrix(erdos_renyi(n, 0.3, rng=np.random.default_rng(12345))))
        a = npb.csr_mix(W.indptr, W.indices, W.data, X)
        b = nbb.csr_mix(W.indptr, W.indices, W.data, X)
        np.testing.assert_allclose(a, b, rtol=rtol)


@pytest.mark.parametrize("n,d", [(5, 7), (8, 20_000)])
def test_mix_kernels_bitwise_with_empty_rows(n, d):
    # same terms in the same order from 0.0: the numba kernels equal numpy bit for bit (sign of zero
    # included), also for a node with no in-neighbour and for an empty offset list
    npb, nbb = get_backend("numpy"), get_backend("numba")
    X = np.random.default_rng(7).standard_normal((n, d))
    X[:, 0] = -0.0
    indptr = np.array([0, 0] + [2 * i for i in range(1, n)])  # row 0 has no entries
    indices = np.array([(i + j) % n for i in range(1, n) for j in (0, 1)])
    data = np.full(indices.size, 0.5)
    bits = lambda a: a.view(np.uint64)  # noqa: E731
    np.testing.assert_array_equal(bits(nbb.csr_mix(indptr, indices, data, X)),
                                  bits(npb.csr_mix(indptr, indices, data, X)))
    empty = (np.array([], dtype=np.int64), np.array([]))
    np.testing.assert_array_equal(bits(nbb.shift_mix(X, *empty)), bits(npb.shift_mix(X, *empty)))
    sh, w = np.array([0, 1, 3]), np.array([0.5, 0.25, 0.25])
    np.testing.assert_array_equal(bits(nbb.shift_mix(X, sh, w)), bits(npb.shift_mix(X, sh, w)))


def test_mix_rejects_wrong_rows():
    with pytest.raises(UserError, match="rows"):
        mix(ring(5), np.zeros((4, 2)))


# ----------------------------------------------------------------------------- adapters, describe, build


def test_networkx_round_trip():
    for topo in (grid(3, 3), exponential(9), erdos_renyi(10, 0.5, rng=np.random.default_rng(12345))):
        G = to_networkx(topo)
        assert G.is_directed() == topo.directed
        back = from_networkx(G, weight="weight")
        np.testing.assert_allclose(mixing_matrix(back), mixing_matrix(topo), atol=ATOL)
    np.testing.assert_allclose(mixing_matrix(from_networkx(nx.cycle_graph(6))), mixing_matrix(ring(6)), atol=ATOL)


def test_describe_keys_and_values():
    d = describe(exponential(1024))
    assert set(d) == {"name", "n", "max_degree", "rho", "spectral_gap", "doubly_stochastic", "stochasticity", "period",
                      "product_deviation", "rate_per_step", "spectral_gap_per_step"}
    assert (d["max_degree"], d["period"], d["product_deviation"], d["doubly_stochastic"]) == (10, None, None, True)
    assert d["rho"] == pytest.approx(th.rho_bound_static_exponential(1024), abs=ATOL)
    d = describe(one_peer_exponential(12))
    assert (d["period"] == 4 and d["max_degree"] == 1
            and d["product_deviation"] == pytest.approx(th.one_peer_deviation(12), abs=ATOL))


def test_build_shapes():
    assert build("torus", 12, shape="2x6").shape == (2, 6)
    assert build("grid", 16).n == 16
    assert build("hypercube", 32).shape == (2,) * 5
    assert build("erdos_renyi", 16, p=1.0, rng=0).n == 16


BAD = [
    (lambda: ring(1), "n must be an integer >= 2"),
    (lambda: build("hypercube", 12), "power"),
    (lambda: torus(1, 5), ">= 2"),
    (lambda: grid(4, 1), ">= 2"),
    (lambda: build("torus", 12, shape="3x5"), "r\\*c"),
    (lambda: build("torus", 13), "factorisation"),
    (lambda: build("grid", 12, shape="1x12"), ">= 2"),
    (lambda: build("torus", 12, shape="3by4"), "RxC"),
    (lambda: erdos_renyi(10, 0.0), "\\(0, 1\\]"),
    (lambda: erdos_renyi(10, 1.5), "\\(0, 1\\]"),
    (lambda: erdos_renyi(60, 0.01, rng=np.random.default_rng(12345)), "disconnected"),
    (lambda: build("exponentail", 8), "did you mean 'exponential'"),
    (lambda: build("ring", 8, rule="metropolis_hastings"), "did you mean 'metropolis'"),
    (lambda: from_matrix(np.array([[0.5, 0.5], [0.2, 0.8]])), "column 0 sums to"),
    (lambda: from_matrix(np.array([[1.5, -0.5], [-0.5, 1.5]])), "negative"),
    (lambda: from_matrix(np.ones((2, 3)) / 3), "square"),
    (lambda: from_matrix(np.array([[np.nan, 1.0], [1.0, 0.0]])), "NaN"),
    (lambda: mixing_matrix(ring(DENSE_MAX + 1)), "dense"),
    (lambda: mixing_matrix(exponential(8), rule="max_degree"), "fixed weights"),
    (lambda: one_peer_exponential(8, order=[0, 0, 1]), "permutation"),
    (lambda: from_networkx(nx.DiGraph([(0, 1), (1, 0)])), "weight"),
    (lambda: build("ring", 8, p=0.5), "erdos_renyi only"),
]


@pytest.mark.parametrize("call,msg", BAD)
def test_bad_input_one_line_user_error(call, msg):
    with pytest.raises(UserError, match=msg) as exc:
        call()
    assert "\n" not in str(exc.value)


def test_deviation_after_matches_closed_forms_and_the_explicit_product():
    import numpy as np

    from simcomm.topology import (
        deviation_after,
        erdos_renyi,
        exponential,
        mixing_matrix,
        one_peer_exponential,
        rate_per_step,
        rho,
        torus,
    )

    # normal W: ||W^T - J||_2 = rho^T exactly
    for topo in (exponential(16), torus(4, 6)):
        assert abs(deviation_after(topo, 7) - rho(topo) ** 7) < 1e-12
    assert deviation_after(exponential(16), 0) == 1.0
    # exact sequence: the product of one period is J (papers C2); n = 2^tau - 1: 2^-tau per period
    assert deviation_after(one_peer_exponential(32), 5) < 1e-12
    assert abs(deviation_after(one_peer_exponential(7), 6) - 0.125**2) < 1e-12
    assert abs(rate_per_step(one_peer_exponential(7)) - 0.5) < 1e-12
    # a non-circulant graph above the dense limit (ARPACK path) against the explicit dense product
    topo = erdos_renyi(600, 0.02, rng=3)
    W = mixing_matrix(topo)
    P = np.linalg.matrix_power(W, 3)
    assert abs(deviation_after(topo, 3) - np.linalg.norm(P - 1 / 600, 2)) < 1e-8


def test_gossip_consensus_takes_every_topology_and_measures_the_per_period_rate():
    import numpy as np

    from simcomm.backends import get_backend
    from simcomm.experiments import get_experiment
    from simcomm.topology import NAMES

    exp = get_experiment("gossip_consensus")
    assert set(exp.params["topology"].choices) == set(NAMES)
    params = exp.validate({"topology": "one_peer_exponential", "n": 100, "steps": 420}, "test")
    rows = {r["metric"]: r["value"] for r in exp.func(params, np.random.default_rng(0), get_backend("numpy"))}
    # the geometric mean over whole periods of a random start's contraction tends to the top mode's
    # per-period rate; over 30 periods the start's transient is below 1e-6 relative
    assert rows["rho"] == 1.0 and abs(rows["rate"] - rows["rho_per_step"]) < 1e-6 * rows["rho_per_step"]
    params = exp.validate({"topology": "base_graph", "n": 25, "steps": 60}, "test")
    rows = {r["metric"]: r["value"] for r in exp.func(params, np.random.default_rng(0), get_backend("numpy"))}
    assert rows["rate"] == 0.0 and rows["rho_per_step"] == 0.0  # exact averaging within a period
