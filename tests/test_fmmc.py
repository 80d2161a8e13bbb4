"""fastest_mixing: closed forms (ring, path), never worse than Metropolis-Hastings, feasibility, bad input, CLI."""

import json
import math
import sys

import cvxpy  # noqa: F401,E402  (a core dependency: missing fails, never skips)
import networkx as nx
import numpy as np
import pytest

import theory.fmmc as th
from simcomm._errors import UserError
from simcomm.topology import (
    erdos_renyi,
    fastest_mixing,
    from_networkx,
    grid,
    hypercube,
    is_doubly_stochastic,
    mixing_matrix,
    one_peer_exponential,
    rho,
    ring,
    sparse_matrix,
    star,
    torus,
)
from tests.test_cli import _run


@pytest.mark.parametrize("n", [4, 6, 8, 16])
@pytest.mark.parametrize("method", ["symmetric", "sdp"])
def test_ring_matches_closed_form(n, method):
    topo = fastest_mixing(ring(n), method=method)
    W = mixing_matrix(topo)
    i = np.arange(n)
    w = W[i, (i + 1) % n]
    # CLARABEL stops at a 1e-8 duality gap; the weight error is at most gap / (2 (1 - cos(2 pi/n)))
    tol = 1e-8 / (2 * (1 - math.cos(2 * math.pi / n))) * 10
    np.testing.assert_allclose(w, th.ring_optimal_weight(n), atol=tol)
    assert rho(topo) == pytest.approx(th.ring_optimal_rho(n), abs=1e-7)


def test_path_graph_optimum_is_one_half():
    # Boyd, Diaconis and Xiao (2004): on the path P_n the fastest-mixing chain puts 1/2 on every edge,
    # rho = cos(pi/n)
    topo = fastest_mixing(from_networkx(nx.path_graph(6)))
    W = mixing_matrix(topo)
    # rho is flat to first order along alternating perturbations of the weights, so the solver's
    # weights are only ~1e-5 accurate while rho is 1e-8 accurate
    np.testing.assert_allclose(np.diag(W, 1), 0.5, atol=1e-4)
    assert rho(topo) == pytest.approx(math.cos(math.pi / 6), abs=1e-7)


@pytest.mark.parametrize("make", [
    lambda: star(12), lambda: grid(3, 4), lambda: erdos_renyi(14, 0.4, rng=2), lambda: torus(3, 5),
    lambda: hypercube(3), lambda: from_networkx(nx.lollipop_graph(5, 4)),
])
def test_never_worse_than_metropolis_and_feasible(make):
    topo = make()
    out, info = fastest_mixing(topo, return_info=True)
    assert rho(out) <= rho(topo) + 1e-7
    assert info.objective == pytest.approx(rho(out), abs=1e-6)
    W = sparse_matrix(out)
    assert is_doubly_stochastic(out, atol=1e-12) and W.data.min() >= 0.0
    assert abs(W - W.T).max() == 0.0
    # same support: no weight outside the graph's edges
    support = sparse_matrix(topo) != 0
    extra = (W != 0).astype(int) - support.astype(int)
    assert extra.max() <= 0


def test_sdp_and_symmetric_lp_agree_on_a_torus():
    a = rho(fastest_mixing(torus(3, 4), method="symmetric"))
    b = rho(fastest_mixing(torus(3, 4), method="sdp"))
    assert a == pytest.approx(b, abs=1e-7)


def test_scs_solver_is_accepted():
    out, info = fastest_mixing(star(10), solver="SCS", return_info=True)
    assert info.solver == "SCS" and rho(out) <= rho(star(10)) + 1e-6


def test_bad_input():
    G = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="connected graph"):
        fastest_mixing(from_networkx(G))
    with pytest.raises(ValueError, match="static topology"):
        fastest_mixing(one_peer_exponential(8))
    with pytest.raises(ValueError, match="unknown solver"):
        fastest_mixing(ring(8), solver="MOSEK")
    with pytest.raises(ValueError, match="circulant"):
        fastest_mixing(star(8), method="symmetric")
    with pytest.raises(ValueError, match="needs a Topology"):
        fastest_mixing(np.eye(3))


def test_missing_cvxpy_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # import cvxpy now raises ImportError
    with pytest.raises(UserError, match="pip install cvxpy"):
        fastest_mixing(ring(8))
    r = _run(["topology", "ring", "-n", "16", "--weights", "fastest"])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "cvxpy" in lines[0], r.output


def test_cli_ring_fastest_json():
    r = _run(["topology", "ring", "-n", "16", "--weights", "fastest", "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert info["weights"] == "fastest" and info["max_degree"] == 2 and info["doubly_stochastic"] is True
    assert info["rho"] == pytest.approx(th.ring_optimal_rho(16), abs=1e-7)
