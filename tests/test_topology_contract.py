"""Contract of every registered topology (simcomm.topology.TOPOLOGIES), read from the registry.

Every constructor reachable by name is held to what it declares: unit sums as its stochasticity says,
nonnegative weights, ``W = W^T`` where it declares symmetry, ``rho = ||W - J||_2`` in ``[0, 1]`` for
doubly stochastic weights (and equal to a dense SVD), the product of one period exactly ``J`` where
it declares exact averaging, its kind (static or time-varying), its randomness (same seed, same
draw; a fixed graph ignores the seed), and the mixing kernels agreeing with ``W @ X``. No name is
typed in the invariant tests: a newly registered constructor is picked up by them. The one place a
name appears is ``REFERENCE``, one closed-form row per topology (networkx's habit of checking a
spectrum against its formula), and a test fails when a registered topology has no row.
"""

import dataclasses
import math

import numpy as np
import pytest

import tests.naive_topology as naive
from simcomm._errors import UserError
from simcomm.backends import use
from simcomm.topology import (
    TOPOLOGIES,
    TopologyInfo,
    build,
    describe,
    directed_ring,
    max_degree,
    mix,
    mixing_matrix,
    product_deviation,
    rho,
)

#: node counts tried for every topology (a constructor refuses the ones it cannot build: hypercube
#: needs 2^p, a torus a factorisation, a hyper-hypercube small prime factors, ...)
SIZES = (2, 3, 4, 5, 6, 8, 9, 12, 16, 25, 27, 30)
#: sums and entries are formed in float64 from weights like 1/3: a few ulps of 1
ATOL = 1e-12


def _layers(topo):
    return [mixing_matrix(topo, k) for k in range(topo.period or 1)]


def check_contract(info: TopologyInfo, topo, n: int) -> None:
    """Raise AssertionError unless ``topo`` (built by ``info`` with ``n`` nodes) is what ``info`` declares."""
    assert topo.n == n, f"{info.name}: built {topo.n} nodes, asked {n}"
    assert topo.time_varying == info.time_varying, f"{info.name}: time_varying is {topo.time_varying}"
    assert topo.stochasticity == info.stochasticity, (
        f"{info.name}: declares {info.stochasticity} stochastic, the topology says {topo.stochasticity}")
    Ws = _layers(topo)
    for k, W in enumerate(Ws):
        assert W.min() >= -ATOL, f"{info.name} layer {k}: negative weight {W.min()}"
        if info.stochasticity in ("doubly", "row"):
            assert np.abs(W.sum(axis=1) - 1).max() <= ATOL, f"{info.name} layer {k}: a row does not sum to 1"
        if info.stochasticity in ("doubly", "column"):
            assert np.abs(W.sum(axis=0) - 1).max() <= ATOL, f"{info.name} layer {k}: a column does not sum to 1"
        if info.symmetric:
            assert np.array_equal(W, W.T), f"{info.name} layer {k}: declared symmetric, W != W^T"
    if info.symmetric:
        assert not topo.directed, f"{info.name}: declared symmetric but the topology says directed"
    if info.stochasticity == "doubly":
        r = rho(topo)
        assert -ATOL <= r <= 1 + ATOL, f"{info.name}: rho = {r} outside [0, 1]"
        # the fast path (FFT / ARPACK / per layer) against a dense SVD of every layer
        assert r == pytest.approx(max(naive.dense_rho(W) for W in Ws), abs=1e-9), f"{info.name}: rho"
    if info.exact_for(n):
        P = np.eye(n)
        for W in Ws:
            P = W @ P  # W^(tau-1) ... W^(0)
        dev = np.abs(P - 1.0 / n).max()
        assert dev <= 1e-12, f"{info.name}: declares exact averaging, one period leaves {dev:.3g}"
        assert product_deviation(topo) <= 1e-12, f"{info.name}: product_deviation disagrees with the dense product"


def _built(name):
    """(n, topology) for every size the constructor accepts, seed 0."""
    out = []
    for n in SIZES:
        try:
            out.append((n, build(name, n, rng=0)))
        except UserError:
            continue
    return out


@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_every_registered_topology_keeps_its_declarations(name):
    info = TOPOLOGIES[name]
    built = _built(name)
    assert len(built) >= 3, f"{name}: built for {len(built)} of the sizes {SIZES}; the contract needs three"
    for n, topo in built:
        check_contract(info, topo, n)


@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_randomness_is_as_declared(name):
    info = TOPOLOGIES[name]
    n, topo = _built(name)[-1]
    again = build(name, n, rng=0)
    other = [build(name, n, rng=s) for s in range(1, 4)]
    same = [np.array_equal(mixing_matrix(topo, k), mixing_matrix(again, k)) for k in range(topo.period or 1)]
    assert all(same), f"{name}: the same seed gave another topology"
    differs = any(not np.array_equal(mixing_matrix(topo), mixing_matrix(t)) for t in other)
    # a random topology on the largest size (>= 25 nodes) redraws with the seed; a fixed one ignores it
    assert differs == info.random, f"{name}: declares random={info.random}, seeds 0..3 say otherwise"


@pytest.mark.parametrize("name", list(TOPOLOGIES))
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_mixing_kernels_match_the_matrix(name, backend):
    n, topo = _built(name)[-1]
    X = np.random.default_rng(5).standard_normal((n, 3))
    with use(backend):
        for k in range(topo.period or 1):
            np.testing.assert_allclose(mix(topo, X, k), mixing_matrix(topo, k) @ X, rtol=1e-12, atol=1e-14)


def test_contract_catches_a_false_declaration():
    # the check can fail: a directed ring declared symmetric, and declared exact, is refused
    for wrong in (dict(symmetric=True), dict(symmetric=False, exact=True), dict(symmetric=False, stochasticity="row")):
        info = TopologyInfo("directed_ring", directed_ring, **wrong)
        with pytest.raises(AssertionError):
            check_contract(info, directed_ring(8, self_weights=0.5), 8)
    # and weights that are not what the topology itself says (a row-stochastic W labelled doubly)
    pull = directed_ring(8, self_weights=np.linspace(0.1, 0.8, 8), weighting="pull")
    with pytest.raises(AssertionError, match="a column does not sum to 1"):
        check_contract(TopologyInfo("directed_ring", directed_ring, symmetric=False),
                       dataclasses.replace(pull, stochasticity="doubly"), 8)


# ----------------------------------------------------------------------------- one closed-form row per topology

#: (name, n, build keywords, quantity, expected, where the value comes from)
REFERENCE = [
    ("ring", 8, {}, "rho", (1 + math.sqrt(2)) / 3, "eigenvalues (1 + 2 cos(2 pi j/n))/3, j = 1"),
    ("torus", 16, {}, "rho", 0.6, "(1 + 2 cos(2 pi a/4) + 2 cos(2 pi b/4))/5 at (a, b) = (1, 0) and (2, 2)"),
    ("hypercube", 8, {}, "rho", 0.5, "eigenvalues (1 + dim - 2j)/(dim + 1), dim = 3"),
    ("complete", 5, {}, "rho", 0.0, "W = J"),
    ("exponential", 16, {}, "rho", 0.6, "1 - 2/(1 + log2 n), papers C1"),
    ("one_peer_exponential", 8, {}, "period", 3, "ceil(log2 n) layers, papers B2"),
    ("star", 10, {}, "rho", 0.9, "Metropolis weights 1/n on every edge: 1 - rho = 1/n, papers C5"),
    ("grid", 4, {}, "rho", 1 / 3, "the 2x2 grid is the 4-cycle with weights 1/3: eigenvalues 1, 1/3, 1/3, -1/3"),
    ("erdos_renyi", 16, {"p": 1.0}, "rho", 0.0, "p = 1 is K_n, whose Metropolis weights are 1/n: W = J"),
    ("hyper_hypercube", 9, {"k": 2}, "period", 2, "9 = 3 x 3: one clique layer per factor"),
    ("one_peer_hypercube", 16, {}, "period", 4, "p = log2 n one-peer layers"),
    ("simple_base_graph", 8, {"k": 1}, "period", 3, "n = 2^3: the hyper-hypercube of 3 one-peer layers"),
    ("base_graph", 25, {"k": 4}, "period", 2, "25 = 5 x 5 with b = k + 1 = 5: two clique layers"),
    ("directed_ring", 4, {}, "rho", math.sqrt(2) / 2, "W = (I + S)/2 is normal: |1 + i|/2 at j = 1"),
    ("directed_exponential", 8, {}, "rho", 0.5, "with equal self-weights it is exponential(8): 1 - 2/(1 + 3)"),
    ("random_matching", 4, {}, "rho", 1.0, "(I + P)/2 of one perfect matching keeps the between-pairs mode"),
    ("s_out", 5, {"s": 4}, "rho", 0.0, "s = n - 1: every node hears every other with weight 1/n, W = J"),
    ("d_equistatic", 2, {"M": 3}, "rho", 0.5, "n = 2: every offset is 1, W = (I + 3P)/4 = [[1/4, 3/4], [3/4, 1/4]]"
     " has eigenvalues 1 and (1 - 3)/4 = -1/2; rho = 1/2"),
    ("u_equistatic", 2, {"M": 1}, "rho", 0.0, "n = 2, M = 1: offsets +-1 coincide, W = (I + P)/2 = J"),
    ("one_peer_equidyn", 2, {}, "rho", 0.0, "n = 2: u = 1, W = (I + P)/2 = J"),
]


def _quantity(topo, what):
    if what == "rho":
        return rho(topo)
    if what == "period":
        return topo.period
    if what == "max_degree":
        return max_degree(topo)
    return describe(topo)[what]


@pytest.mark.parametrize("name,n,kw,what,expected,source", REFERENCE, ids=[r[0] for r in REFERENCE])
def test_reference_row(name, n, kw, what, expected, source):
    assert _quantity(build(name, n, rng=0, **kw), what) == pytest.approx(expected, abs=1e-12), source


def test_every_registered_topology_has_a_reference_row():
    missing = sorted(set(TOPOLOGIES) - {row[0] for row in REFERENCE})
    assert not missing, f"add a closed-form row to REFERENCE for {missing}"
