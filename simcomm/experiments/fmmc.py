r"""Experiments for fastest-mixing weights (Boyd, Diaconis and Xiao, SIAM Review 2004).

Measurements only; the bounds are in ``theory/fmmc.py`` and the solver in
:mod:`simcomm.topology._fmmc`.

* ``fmmc_vs_mh``: :math:`\rho` of the fastest-mixing weights and of the Metropolis-Hastings weights on
  the same graph (ring, torus, star, hypercube, seeded Erdos-Renyi).
* ``fmmc_ring``: the SDP's edge weights on the ring (smallest and largest), to compare with the
  closed form of ``theory.fmmc.ring_optimal_weight``.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.experiments._registry import Param, experiment
from simcomm.topology import (
    Topology,
    erdos_renyi,
    fastest_mixing,
    from_matrix,
    hypercube,
    rho,
    ring,
    sparse_matrix,
    star,
    torus,
)

__all__ = ["graph_for"]

GRAPHS = ("ring", "torus", "star", "hypercube", "erdos_renyi")


def graph_for(name: str, n: int, *, p: float, rng) -> Topology:
    """The graph of a cell, with Metropolis-Hastings weights (torus: the squarest r x c; hypercube: n = 2^dim).

    Examples
    --------
    >>> graph_for("torus", 12, p=0.0, rng=0).shape
    (3, 4)
    """
    if name == "ring":
        return ring(n)
    if name == "star":
        return star(n)
    if name == "torus":
        r = math.isqrt(n)
        while n % r:
            r -= 1
        return torus(r, n // r)
    if name == "hypercube":
        return hypercube(n.bit_length() - 1)
    return erdos_renyi(n, p if p > 0 else min(1.0, 3.0 * math.log(n) / n), rng=rng)


def _check(params):
    n, g = params["n"], params["graph"]
    if g == "hypercube" and n & (n - 1):
        raise ValueError(f"hypercube needs n a power of 2, got n={n}")
    if g == "torus" and not any(n % r == 0 for r in range(2, math.isqrt(n) + 1)):
        raise ValueError(f"torus needs n = r*c with both sides >= 2, got n={n}")


def _lazy_metropolis(topo: Topology) -> Topology:
    """Negative control: the Metropolis-Hastings W pulled halfway to I, (I + W_MH)/2 (a worse weighting)."""
    W = sparse_matrix(topo)
    n = topo.n
    import scipy.sparse as sp

    return from_matrix((sp.identity(n, format="csr") + W) / 2.0, name=topo.name)


def _sdp_seconds(n: int) -> float:
    # measured on a shared 2-core machine: star 64 5 s, star 128 7 s, Erdos-Renyi 64 48 s, 128 73 s
    return 3e-5 * n**3 + 1.0


@experiment("fmmc_vs_mh", check=_check, deterministic=lambda p: p["graph"] != "erdos_renyi",
            wall_clock=("solver_seconds",),
            cost=lambda p: (0.3 if p["graph"] in ("ring", "torus", "hypercube") else _sdp_seconds(p["n"]),
                            64 * 8 * p["n"] ** 2),
            params={
    "graph": Param("str", default="ring", choices=GRAPHS, doc="graph family"),
    "n": Param("int", default=16, low=4, doc="number of nodes"),
    "p": Param("float", default=0.0, low=0.0, high=1.0,
               doc="Erdos-Renyi edge probability (0: min(1, 3 ln(n)/n), three times the connectivity threshold)"),
    "eps": Param("float", default=1e-7, low=0.0, low_open=True, doc="SCS tolerance (SDP above n = 48)"),
    "optimiser": Param("str", default="fastest", choices=("fastest", "lazy_metropolis"),
                       doc="weights compared with Metropolis-Hastings (lazy_metropolis: negative control)"),
})
def fmmc_vs_mh(params, rng, backend):
    r""":math:`\rho` of optimised weights vs Metropolis-Hastings weights on the same graph.

    Row ``metric="rho_fmmc"``: :math:`\rho(W)` of the returned weights (FFT for circulants, dense
    or ARPACK otherwise), with column ``rho_mh`` (:math:`\rho(W_{MH})` of the same graph, the
    bound's input). Rows ``rho_mh``, ``sdp_objective`` (the solver's optimal value; ``note`` names
    the solver) are for the figure and the report; ``solver_seconds`` (wall clock) goes to meta.json.
    """
    del backend
    topo = graph_for(params["graph"], params["n"], p=params["p"], rng=rng)
    r_mh = rho(topo)
    if params["optimiser"] == "lazy_metropolis":
        W, objective, solver, seconds = _lazy_metropolis(topo), float("nan"), "none", 0.0
    else:
        W, info = fastest_mixing(topo, eps=params["eps"], return_info=True)
        objective, solver, seconds = info.objective, info.solver, info.seconds
    r = rho(W)
    # the judged row carries only the bound's input rho_mh besides the cell parameters (any other
    # column would split the cell); solver details are rows of their own
    return [
        dict(metric="rho_fmmc", value=r, rho_mh=r_mh),
        dict(metric="rho_mh", value=r_mh, rho_mh=r_mh),
        dict(metric="sdp_objective", value=objective, rho_mh=r_mh, note=f"solver {solver}"),
        dict(metric="solver_seconds", value=seconds, rho_mh=r_mh),
    ]


@experiment("fmmc_ring", columns=("stat",), deterministic=True,
            cost=lambda p: (0.3 if p["method"] != "sdp" else _sdp_seconds(p["n"]), 64 * 8 * p["n"] ** 2),
            params={
    "n": Param("int", default=16, low=3, doc="number of nodes of the ring"),
    "method": Param("str", default="sdp", choices=("sdp", "symmetric", "metropolis"),
                    doc="general SDP or symmetry-reduced LP (metropolis: negative control only, the "
                        "Metropolis-Hastings weights 1/3, nothing optimised)"),
    "solver": Param("str", default="auto", choices=("auto", "CLARABEL", "SCS"), doc="SDP solver (auto: by n)"),
})
def fmmc_ring(params, rng, backend):
    r"""Edge weights of the fastest-mixing ring: rows ``metric="edge_weight"`` with ``stat`` = min / max.

    Also ``metric="rho"``: :math:`\rho` of the returned ``W``. ``method = "metropolis"`` (negative
    control) returns the ring's Metropolis-Hastings weights instead of solving anything.
    """
    del rng, backend
    n = params["n"]
    solver = None if params["solver"] == "auto" else params["solver"]
    if params["method"] == "symmetric" and solver is not None:
        raise UserError("the symmetric LP always uses CLARABEL; leave solver = 'auto'")
    if params["method"] == "metropolis":
        topo = ring(n)  # W = (I + S + S^-1)/3: the Metropolis-Hastings weights of the ring
    else:
        topo = fastest_mixing(ring(n), method=params["method"], solver=solver)
    W = sparse_matrix(topo)
    i = np.arange(n)
    w = np.asarray(W[i, (i + 1) % n]).ravel()  # the n ring edges (i, i+1)
    return [
        dict(metric="edge_weight", value=float(w.min()), stat="min"),
        dict(metric="edge_weight", value=float(w.max()), stat="max"),
        dict(metric="rho", value=rho(topo)),
    ]
