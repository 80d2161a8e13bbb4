"""Experiments for "Exponential Graph is Provably Efficient for Decentralized Deep Training" (Ying et al., 2021).

Topology, spectrum and consensus only (decentralized SGD lives in ``dsgd.py``). Quantities and their
provenance are in papers/exponential_graph.md; the bounds they are compared with are in
``theory/expgraph.py``.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.experiments._registry import Param, experiment
from simcomm.topology import (
    RULES,
    base_graph,
    build,
    circulant,
    max_degree,
    mix,
    one_peer_exponential,
    product_deviation,
    rate_per_step,
    rho,
    time_varying,
    topology_names,
)

# read from the topology registry (simcomm.topology.TOPOLOGIES), never typed here
NAMES = topology_names()
_STATIC = topology_names(time_varying=False)

_TOPO = {
    "topology": Param("str", default="exponential", choices=NAMES, doc="topology constructor name"),
    "n": Param("int", default=16, low=2, doc="number of nodes (torus/grid: most square r x c = n)"),
    "rule": Param("str", default="metropolis", choices=RULES, doc="weights of undirected graphs"),
}


def _check_shape(params):
    t, n = params["topology"], params["n"]
    if t == "hypercube" and n & (n - 1):
        raise ValueError(f"hypercube needs n a power of 2, got n={n}")
    if t in ("grid", "torus") and not any(n % r == 0 for r in range(2, math.isqrt(n) + 1)):
        raise ValueError(f"{t} needs n = r*c with both sides >= 2, got n={n}")


def _built(params) -> str:
    """The topology actually measured: ``topology``, or ``replace_with`` under that negative control."""
    return params["topology"] if params.get("replace_with", "none") == "none" else params["replace_with"]


def one_peer_hops(n: int, first_hop: int = 1, order=None):
    """The one-peer exponential sequence, or (``first_hop > 1``, a negative control) hops first_hop * 2^t.

    ``first_hop = 2`` is the indexing slip of counting the exponents from 1: hops 2, 4, ..., 2^tau, all
    even, so the nodes of odd and even index never mix.
    """
    if first_hop == 1:
        return one_peer_exponential(n, order=order)
    tau = (n - 1).bit_length()
    layers = tuple(circulant(f"one_peer_exponential[{first_hop}*2^{t}]", (n,), [[0], [first_hop << t]], [0.5, 0.5],
                              "one_peer") for t in (range(tau) if order is None else order))
    return time_varying(layers, name="one_peer_exponential")


def _exponential_floor(n: int):
    """The static exponential graph built with floor(log2 n) hop lengths 2^t (negative control).

    The off-by-one of computing tau as ``int(log2 n)``: for n not a power of 2 the longest hop
    2^(ceil(log2 n) - 1) is missing; for n = 2^p it is the static exponential graph.
    """
    offs = np.array([0] + [1 << t for t in range(n.bit_length() - 1)], dtype=np.int64)[:, None]
    return circulant("exponential[floor_log2]", (n,), offs, np.full(len(offs), 1.0 / len(offs)), "uniform")


def _check_spectrum(params):
    _check_shape(params)
    _check_shape({**params, "topology": _built(params)})


@experiment(
    "topology_spectrum",
    # only the random graph draws from the rng
    deterministic=lambda p: "erdos_renyi" not in (p["topology"], _built(p)),
    params={**_TOPO,
            "p": Param("float", default=0.5, low=0.0, high=1.0, low_open=True, doc="erdos_renyi edge probability"),
            "replace_with": Param("str", default="none", choices=("none",) + NAMES, keyed_at_default=False,
                                  doc="negative control only: measure this topology in place of `topology` (the "
                                      "cell, and so the bound, keep `topology`)"),
            "tau_rule": Param("str", default="ceil", choices=("ceil", "floor"), keyed_at_default=False,
                              doc="negative control only: floor builds the static exponential graph with "
                                  "floor(log2 n) hop lengths (tau = int(log2 n)) while the cell and the bound keep "
                                  "ceil(log2 n); ceil changes nothing")},
    check=_check_spectrum,
)
def topology_spectrum(params, rng, backend):
    """rho = ||W - J||_2, spectral gap 1 - rho and max degree of one topology (FFT / ARPACK fast paths).

    ``replace_with`` (negative control) measures another topology while the cell keeps its label;
    ``tau_rule = "floor"`` (negative control) builds the static exponential graph with floor(log2 n)
    hops instead of ceil(log2 n).
    """
    del backend
    name = _built(params)
    p = params["p"] if name == "erdos_renyi" else None
    if name == "exponential" and params["tau_rule"] == "floor":
        topo = _exponential_floor(params["n"])
    else:
        topo = build(name, params["n"], p=p, rule=params["rule"], rng=rng)
    r = rho(topo)
    return [
        dict(metric="rho", value=r),
        dict(metric="spectral_gap", value=1.0 - r),
        dict(metric="max_degree", value=float(max_degree(topo))),
    ]


def _phase_deviation(topo, block: int = 256) -> float:
    """max over start phases k0 of ||W^(k0+tau-1) ... W^(k0) - J||_F, applying the mixing kernel to I.

    The Frobenius norm bounds the 2-norm from above, so a zero here is a zero 2-norm deviation. No
    commutation is assumed: the product is formed in the order the simulator applies it.
    """
    n, tau = topo.n, topo.period
    worst = 0.0
    for k0 in range(tau):
        sq = 0.0
        for start in range(0, n, block):
            cols = np.arange(start, min(n, start + block))
            X = np.zeros((n, len(cols)))
            X[cols, np.arange(len(cols))] = 1.0
            for k in range(k0, k0 + tau):
                X = mix(topo, X, k)
            sq += float(np.sum((X - 1.0 / n) ** 2))
        worst = max(worst, math.sqrt(sq))
    return worst


@experiment(
    "one_peer_deviation",
    deterministic=lambda p: p["order"] == "increasing",  # a random hop order is drawn from the rng
    params={
        "n": Param("int", default=16, low=2, doc="number of nodes"),
        "order": Param("str", default="increasing", choices=("increasing", "random"),
                       doc="order of the hop lengths 2^t within a period (random: a permutation drawn from rng)"),
        "kernel_max_n": Param("int", default=4096, low=0, doc="largest n for the phase-by-phase kernel product"),
        "graph": Param("str", default="one_peer_exponential", choices=("one_peer_exponential", "base_graph"),
                       keyed_at_default=False,
                       doc="negative control only: base_graph measures the Base-2 graph (one peer per step, "
                           "exact for every n) in place of the one-peer exponential graph"),
        "first_hop": Param("int", default=1, low=1, keyed_at_default=False,
                           doc="negative control only: hop lengths first_hop * 2^t (2: exponents counted from 1, "
                               "hops 2, 4, ..., 2^tau); 1 changes nothing"),
    },
)
def one_peer_deviation(params, rng, backend):
    """One-period deviation of the one-peer exponential sequence from J (papers C2).

    ``deviation``: ||prod - J||_2 from the product of the layers' eigenvalue vectors (FFT).
    ``phase_deviation`` (n <= kernel_max_n): max over every start phase of ||prod - J||_F, the product
    formed by applying the gossip kernel to the identity. ``graph = "base_graph"`` (negative control)
    measures one period of the Base-2 graph instead (sparse layers: dense products up to moderate n).
    ``first_hop = 2`` (negative control) visits the hops 2^(t+1) instead of 2^t: every offset is even.
    """
    n = params["n"]
    tau = (n - 1).bit_length()
    order = None if params["order"] == "increasing" else rng.permutation(tau).tolist()
    if params["graph"] == "base_graph":
        topo = base_graph(n, 1)
    else:
        topo = one_peer_hops(n, params["first_hop"], order=order)
    rows = [dict(metric="deviation", value=product_deviation(topo))]
    if n <= params["kernel_max_n"]:
        rows.append(dict(metric="phase_deviation", value=_phase_deviation(topo)))
    return rows


@experiment(
    "gossip_consensus",
    params={
        "topology": Param("str", default="ring", choices=NAMES, doc="topology, static or time-varying"),
        "n": Param("int", default=16, low=2, doc="number of nodes"),
        "d": Param("int", default=1, low=1, doc="columns of x (independent coordinates)"),
        "steps": Param("int", default=2000, low=10,
                       doc="gossip steps; the rate is fitted on the whole periods of the second half"),
        "lazy": Param("bool", default=False,
                      doc="mix with (I + W)/2 instead of W (wrong mixing weights: the negative control)"),
    },
    check=_check_shape,
)
def gossip_consensus(params, rng, backend):
    """Per-step contraction of ||x_k - 1 xbar|| under gossip x <- W x from a random start (papers (f)4).

    The deviation e_k = x_k - 1 xbar is renormalised after every step (the map is linear, so the ratio
    ||e_{k+1}|| / ||e_k|| is unchanged) to stay clear of underflow; the mean is re-subtracted to
    remove round-off drift. ``lazy`` mixes with (I + W)/2 (rate max |1 + lambda|/2, not rho).
    ``rate`` is the geometric mean of the per-step ratios over the second half of the run (whole
    periods of a time-varying topology, whose single steps contract unevenly); 0 when the error
    vanishes to rounding (exact averaging: the complete graph, an exact time-varying sequence).
    ``rho`` is ||W - J||_2 from the spectral fast path (a time-varying topology's largest per-layer
    value) and ``rho_per_step`` the per-step rate of the spectrum (rho for a static topology; the
    period-th root of the one-period product deviation otherwise), for reference.
    """
    topo = build(params["topology"], params["n"], rng=rng)
    steps, period = params["steps"], topo.period or 1
    e = rng.standard_normal((params["n"], params["d"]))
    e -= e.mean(axis=0)
    e /= np.linalg.norm(e)
    logs = np.empty(steps)
    rate = None
    for k in range(steps):
        e = 0.5 * (e + mix(topo, e, k)) if params["lazy"] else mix(topo, e, k)
        e -= e.mean(axis=0)
        s = np.linalg.norm(e)
        if s < 1e-12:  # consensus reached to rounding in one step (the deviation was normalised to 1)
            rate = 0.0
            break
        logs[k] = math.log(s)
        e /= s
    if rate is None:
        start = (steps // 2) // period * period
        stop = start + (steps - start) // period * period
        rate = math.exp(float(np.mean(logs[start:stop if stop > start else steps])))
    return [dict(metric="rate", value=rate), dict(metric="rho", value=rho(topo)),
            dict(metric="rho_per_step", value=rate_per_step(topo))]


@experiment(
    "noisy_consensus",
    params={
        "topology": Param("str", default="ring", choices=NAMES,
                          doc="topology (a time-varying one mixes with W_k at step k)"),
        "n": Param("int", default=16, low=2, doc="number of nodes"),
        "d": Param("int", default=16, low=1, doc="dimension (independent coordinates per node)"),
        "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="step size", former="gamma"),
        "sigma": Param("float", default=1.0, low=0.0, doc="noise standard deviation per coordinate"),
        "burn_in": Param("int", default=1000, low=0, doc="steps discarded before averaging"),
        "steps": Param("int", default=4000, low=1, doc="steps averaged after burn-in"),
        "lazy": Param("bool", default=False,
                      doc="mix with (I + W)/2 instead of W (wrong mixing weights: the negative control)"),
        "record_every": Param("int", default=0, low=0, keyed_at_default=False, column_at_default=False,
                              doc="also record (1/n)||x_k - 1 xbar_k^T||^2 every this many steps; its default (0: off) "
                                  "changes nothing"),
    },
    check=_check_shape,
    columns=("step",),
)
def noisy_consensus(params, rng, backend):
    """Time-averaged stationary consensus error of x <- W (x - lr xi), xi ~ N(0, sigma^2) (papers C6).

    Starts at x = 0 (``lazy``: mixes with (I + W)/2; a time-varying topology mixes with ``W_k`` at
    step ``k``); ``consensus_error`` is the mean over the last ``steps`` iterations of
    (1/n) ||x_k - 1 xbar_k^T||_F^2 (one independent estimate per replicate). With ``record_every = r > 0``
    the trace rows ``consensus`` give that error after ``k`` updates, ``step = k``, at ``k = 0, r, 2r, ...``
    and at the last step (the curve a sweep figure draws against steps; burn-in included).
    """
    n, d = params["n"], params["d"]
    topo = build(params["topology"], n, rng=rng)
    lr, sigma = params["lr"], params["sigma"]
    burn, steps = params["burn_in"], params["steps"]
    x = np.zeros((n, d))
    total, k, chunk = 0.0, 0, 256
    every = params.get("record_every", 0)
    trace = [dict(metric="consensus", value=0.0, step=0)] if every else []
    while k < burn + steps:
        m = min(chunk, burn + steps - k)
        noise = rng.standard_normal((m, n, d))  # drawn in chunks: fewer generator calls, same stream
        for j in range(m):
            y = x - (lr * sigma) * noise[j]
            x = 0.5 * (y + mix(topo, y, k)) if params["lazy"] else mix(topo, y, k)
            if k >= burn:
                dev = x - x.mean(axis=0)
                total += float(np.sum(dev * dev)) / n
            k += 1
            if every and (k % every == 0 or k == burn + steps):
                dev = x - x.mean(axis=0)
                trace.append(dict(metric="consensus", value=float(np.sum(dev * dev)) / n, step=k))
    return [dict(metric="consensus_error", value=total / steps), *trace]
