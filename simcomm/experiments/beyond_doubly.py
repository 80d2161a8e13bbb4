r"""Decentralized experiments beyond doubly stochastic gossip: push-sum, gradient tracking, random graphs.

The bounds are in ``theory/decentralized.py`` (all [N]); the methods in :mod:`simcomm.optim`
(``run_pushsum``, ``run_tracking``, ``run_dsgd``) and the graphs in :mod:`simcomm.topology`
(``directed_exponential``, ``directed_ring``, ``random_matching``, ``s_out``).

* ``tracking_floor``: DSGD, gradient tracking and exact diffusion on the same heterogeneous
  quadratic (common Hessian, heterogeneity exactly ``b``), exact gradients by default, one constant
  step, from ``x0 = 0``: the node distance :math:`\frac1n\sum_i\|x_i - x^\star\|^2` after ``steps``.
* ``pushsum_consensus``: push-sum average consensus on a digraph with uneven (random) self-weights:
  the largest distance of any node's ratio to the exact average of the starting values.
* ``random_gossip``: one round of a random topology (a uniform matching or an s-out draw) on a
  random ``x``: :math:`\sum_i\|x_i' - \bar x\|^2/\sum_i\|x_i - \bar x\|^2`, averaged over ``draws``.
"""

from __future__ import annotations

import numpy as np

from simcomm.backends import use
from simcomm.experiments._registry import Param, experiment
from simcomm.models import diagonal_quadratic
from simcomm.optim import TRACKER_STARTS, run_dsgd, run_pushsum, run_tracking
from simcomm.topology import build, circulant, directed_exponential, directed_ring, mix, random_matching, rho, s_out

__all__ = []

#: static normal doubly stochastic topologies (the floor bound's assumption)
FLOOR_TOPOLOGIES = ("ring", "torus", "exponential", "hypercube")


def _check_floor(params):
    n, t = params["n"], params["topology"]
    if t == "hypercube" and n & (n - 1):
        raise ValueError(f"hypercube needs n a power of 2, got n={n}")
    if t == "torus" and not any(n % r == 0 for r in range(2, int(n**0.5) + 1)):
        raise ValueError(f"torus needs n = r*c with both sides >= 2, got n={n}")
    if params["mu"] > params["L"]:
        raise ValueError(f"curvatures need mu <= L, got mu={params['mu']}, L={params['L']}")


def _tracking_cost(p):
    """(seconds, bytes) of one replicate: three runs of ``steps`` steps at ~40 us each (small n d)."""
    return 3 * p["steps"] * (4e-5 + 2e-9 * p["n"] * p["d"]), 20 * 8 * p["n"] * p["d"]


@experiment("tracking_floor", check=_check_floor, cost=_tracking_cost, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "d": Param("int", default=10, low=1, doc="dimension of the diagonal quadratic"),
    "b": Param("float", default=1.0, low=0.0, doc="heterogeneity at the optimum (0: every f_i minimised at x*)"),
    "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="smallest curvature (the floor bound's mu)"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
    "topology": Param("str", default="ring", choices=FLOOR_TOPOLOGIES, doc="static normal doubly stochastic graph"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="constant step size (the bound needs lr L <= 1)"),
    "steps": Param("int", default=3000, low=1, doc="iterations T"),
    "sigma": Param("float", default=0.0, low=0.0, doc="gradient noise std per coordinate (0: exact gradients)"),
    "tracker_start": Param("str", default="gradient", choices=TRACKER_STARTS,
                           doc="gradient tracking's first tracker: the gradient (exact) or zero (the control)"),
    "ed_correction": Param("bool", default=True,
                           doc="exact diffusion's correction term (false: DSGD with (I + W)/2, the control)"),
    "lazy": Param("bool", default=False, keyed_at_default=False,
                  doc="negative control only: every method mixes with (I + W)/2 while the rows' rho stays W's "
                      "(lazy weights the floor bound is not told); false = W itself"),
})
def tracking_floor(params, rng, backend):
    r"""DSGD vs gradient tracking vs exact diffusion on one heterogeneous quadratic, the same step (module doc).

    Rows ``metric="node_dist_sq"`` (:math:`\frac1n\sum_i\|x_i^{(T)} - x^\star\|^2`) with ``method``
    = ``dsgd``, ``gradient_tracking`` and, on symmetric graphs, ``exact_diffusion``; each carries
    ``rho`` (:math:`\max_{m\ne0}|\lambda_m(W)|`, the spectral fast path) for the floor bound and
    ``note`` when a run diverged (the value is then NaN). All three methods share the problem and,
    with ``sigma > 0``, the per-node noise streams. ``lazy`` (negative control) runs them on
    :math:`(I + W)/2`, whose :math:`\rho` is :math:`(1 + \lambda_2(W))/2`, and still reports W's ``rho``.
    """
    n, steps, lr = params["n"], params["steps"], params["lr"]
    with use("numpy"):  # the same problem on every backend (numba's log/cos may differ in the last ulp)
        prob = diagonal_quadratic(n, params["d"], b=params["b"], mu=params["mu"], L=params["L"], rng=rng)
    seed = int(rng.integers(2**62))
    topo = build(params["topology"], n)
    r = float(rho(topo))
    if params["lazy"]:  # every floor topology is circulant: (I + W)/2 moves half of each weight to self
        self_offset = np.zeros((1, len(topo.shape)), dtype=np.int64)
        topo = circulant(f"lazy_{topo.name}", topo.shape, np.vstack([self_offset, topo.offsets]),
                         np.concatenate([[0.5], 0.5 * topo.weights]), rule=f"lazy {topo.rule}")

    def dist(X):
        E = np.asarray(X) - prob.x_star
        return float(np.sum(E * E) / n)

    tr = run_dsgd(prob, topo, steps=steps, lr=lr, sigma=params["sigma"], seed=seed, record_every=steps,
                  backend=backend, noise="stream")
    rows = [dict(metric="node_dist_sq", value=dist(tr.x) if not tr.diverged[0] else float("nan"), method="dsgd",
                 rho=r, note=tr.note)]
    methods = ["gradient_tracking"] + ([] if topo.directed else ["exact_diffusion"])
    for method in methods:
        tr = run_tracking(prob, topo, method=method, steps=steps, lr=lr, sigma=params["sigma"], seed=seed,
                          record_every=steps, tracker_start=params["tracker_start"],
                          correction=params["ed_correction"], backend=backend)
        rows.append(dict(metric="node_dist_sq", value=float(tr.node_dist_sq[-1]), method=method, rho=r, note=tr.note))
    return rows


PUSHSUM_TOPOLOGIES = ("directed_exponential", "directed_ring", "s_out")


def _check_pushsum(params):
    if params["self_low"] > params["self_high"]:
        raise ValueError(f"self_low ({params['self_low']}) must be <= self_high ({params['self_high']})")
    if params["topology"] == "s_out" and params["s"] > params["n"] - 1:
        raise ValueError(f"s-out needs s <= n - 1 = {params['n'] - 1}, got s={params['s']}")


def _check_random(params):
    if params["sampling"] == "s_out" and params["s"] > params["n"] - 1:
        raise ValueError(f"s-out needs s <= n - 1 = {params['n'] - 1}, got s={params['s']}")


@experiment("pushsum_consensus", check=_check_pushsum, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "d": Param("int", default=4, low=1, doc="columns of x (independent coordinates)"),
    "topology": Param("str", default="directed_exponential", choices=PUSHSUM_TOPOLOGIES,
                      doc="static digraph with uneven self-weights, or s_out (push weights, a fresh draw every step)"),
    "s": Param("int", default=1, low=1, doc="s_out: targets per node and step"),
    "self_low": Param("float", default=0.1, low=0.0, high=1.0, high_open=True,
                      doc="self-weights a_i ~ U[self_low, self_high] (static digraphs)"),
    "self_high": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="see self_low"),
    "steps": Param("int", default=3000, low=1, doc="push-sum steps"),
    "debias": Param("bool", default=True, doc="report the ratio x/w (push-sum); false: the numerators (plain gossip)"),
    "offset": Param("float", default=1.0, doc="common mean of the starting values: x_i(0) ~ offset + N(0, 1)"),
})
def pushsum_consensus(params, rng, backend):
    r"""Push-sum average consensus from Gaussian starts (mean ``offset``) on a column-stochastic digraph (module doc).

    Rows: ``max_error`` :math:`\max_i\|z_i^{(T)} - \bar x^{(0)}\|_\infty` (the numerators instead of
    the ratio with ``debias = false``), ``weight_spread`` (max over min push-sum weight at ``T``, how
    uneven the mixing is: 1 for a doubly stochastic ``W``), and ``start_spread``
    :math:`\max_i\|x_i^{(0)} - \bar x^{(0)}\|_\infty` (the scale of the problem).
    """
    n, d = params["n"], params["d"]
    # a common offset: models start around one point, as in training; the bias of plain gossip,
    # (n v_i - 1) xbar_0, is then of the order of the offset instead of the ~1/sqrt(n) of a centred start
    X0 = params["offset"] + rng.standard_normal((n, d))
    if params["topology"] == "s_out":
        s = params["s"]

        def topo(r):
            return s_out(n, s, rng=r, weighting="push")

        tr = run_pushsum(X0, topo, steps=params["steps"], debias=params["debias"], record_every=params["steps"],
                         backend=backend, rng=rng)
    else:
        a = rng.uniform(params["self_low"], params["self_high"], n)
        make = directed_exponential if params["topology"] == "directed_exponential" else directed_ring
        tr = run_pushsum(X0, make(n, self_weights=a, weighting="push"), steps=params["steps"],
                         debias=params["debias"], record_every=params["steps"], backend=backend)
    note = tr.note
    return [dict(metric="max_error", value=float(tr.max_error[-1]), note=note),
            dict(metric="weight_spread", value=float(tr.weight_spread[-1]), note=note),
            dict(metric="start_spread", value=float(np.abs(X0 - X0.mean(axis=0)).max()))]


@experiment("random_gossip", check=_check_random, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "sampling": Param("str", default="matching", choices=("matching", "s_out"),
                      doc="uniform random matching, or Epidemic Learning's s-out round (pull weights)"),
    "s": Param("int", default=1, low=1, doc="s_out: targets per node (1 <= s <= n - 1)"),
    "d": Param("int", default=4, low=1, doc="columns of x"),
    "draws": Param("int", default=2000, low=1, doc="rounds averaged per replicate (a fresh x and graph each)"),
    "lazy": Param("bool", default=False, doc="mix with (I + W)/2 instead of W (wrong weights: the control)"),
})
def random_gossip(params, rng, backend):
    r"""One random-topology round, :math:`\sum_i\|x_i' - \bar x\|^2/\sum_i\|x_i - \bar x\|^2`, mean over draws.

    Each draw takes a fresh Gaussian ``x`` and a fresh topology from the replicate's stream, mixes
    with the library's kernel (:func:`simcomm.topology.mix`, CSR: no ``n x n`` matrix), and measures
    the distance to the mean BEFORE the round (for a matching the mean is kept; an s-out round moves
    it). Row ``contraction``: the mean over ``draws`` of that ratio.
    """
    n, d, s = params["n"], params["d"], params["s"]
    total = 0.0
    for _ in range(params["draws"]):
        x = rng.standard_normal((n, d))
        xbar = x.mean(axis=0)
        topo = random_matching(n, rng=rng) if params["sampling"] == "matching" else s_out(n, s, rng=rng)
        y = mix(topo, x)
        if params["lazy"]:
            y = 0.5 * (x + y)
        e, f = x - xbar, y - xbar
        total += float(np.sum(f * f) / np.sum(e * e))
    return [dict(metric="contraction", value=total / params["draws"])]


#: symmetric doubly stochastic graphs CHOCO's analysis covers
CHOCO_TOPOLOGIES = ("ring", "torus", "hypercube", "complete")
#: what the consensus step is a multiple of: the paper's gamma*, the uncompressed stability limit 2/beta,
#: or 1, plain gossip's step (a negative control: the step of exact averaging used with a compressor)
GAMMA_REFS = ("paper", "stable", "gossip")


def _spectrum(topo):
    """(gap, beta) = (1 - max_{m != 0} |lambda_m|, 1 - lambda_min) of a symmetric W (dense, small n)."""
    from simcomm.topology import mixing_matrix

    lam = np.linalg.eigvalsh(mixing_matrix(topo))  # ascending; lam[-1] = 1
    return float(1.0 - max(abs(lam[0]), abs(lam[-2]))), float(1.0 - lam[0])


def _check_choco(params):
    _check_floor(dict(params, mu=1.0, L=1.0))
    if params["k"] > params["d"]:
        raise ValueError(f"k must be <= d, got k={params['k']}, d={params['d']}")


@experiment("choco_gossip", check=_check_choco, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "d": Param("int", default=8, low=1, doc="dimension"),
    "topology": Param("str", default="hypercube", choices=CHOCO_TOPOLOGIES, doc="symmetric doubly stochastic graph"),
    "compressor": Param("str", default="top_k", choices=("top_k", "rand_k"),
                        doc="delta-compressor: top-k or unscaled rand-k (delta = k/d for both)"),
    "k": Param("int", default=2, low=1, doc="kept coordinates per message"),
    "steps": Param("int", default=3000, low=1, doc="CHOCO-Gossip steps T"),
    "gamma_ref": Param("str", default="paper", choices=GAMMA_REFS,
                       doc="consensus step unit: the paper's gamma*, 2/beta (uncompressed stability limit) or 1 "
                           "(plain gossip's step, which ignores the compression: a negative control)"),
    "gamma_factor": Param("float", default=1.0, low=0.0, low_open=True, doc="consensus step = factor * unit"),
})
def choco_gossip(params, rng, backend):
    r"""CHOCO-Gossip from a centred Gaussian start: the consensus error after ``steps``, relative to the start.

    Row ``consensus_ratio`` :math:`\sum_i\|x_i^{(T)} - \bar x\|^2/\sum_i\|x_i^{(0)} - \bar x\|^2` with
    the bound's inputs ``gap`` (:math:`1 - |\lambda_2|`), ``beta_w`` (:math:`\|I - W\|_2`), ``delta``
    (the compressor's ``1 - error_factor(d)``) and the ``gamma`` used. A run whose ratio passes 1e6 is
    stopped (``note``) and reports the ratio it reached: it diverged, and any later value is larger.
    """
    from simcomm.compress import compressor_from_name
    from simcomm.optim import choco_delta, choco_gamma, run_choco_gossip

    n, d = params["n"], params["d"]
    topo = build(params["topology"], n)
    gap, beta = _spectrum(topo)
    settings = {"k": params["k"]} | ({"scale": False} if params["compressor"] == "rand_k" else {})
    comp = compressor_from_name(params["compressor"], **settings)
    delta = choco_delta(comp, d)
    ref = params["gamma_ref"]
    unit = choco_gamma(gap, beta, delta) if ref == "paper" else 2.0 / beta if ref == "stable" else 1.0
    gamma = params["gamma_factor"] * unit
    X0 = rng.standard_normal((n, d))
    X0 -= X0.mean(axis=0)  # centred: the bound's factor 2 needs xbar = 0 (theory.decentralized)
    tr = run_choco_gossip(X0, topo, comp, gamma=gamma, steps=params["steps"], rng=rng, record_every=params["steps"],
                          backend=backend)
    return [dict(metric="consensus_ratio", value=float(tr.consensus_ratio[-1]), gap=gap, beta_w=beta, delta=delta,
                 gamma=gamma, note=tr.note)]


#: symmetric graphs with one weight on every edge (the link-drop rate's assumption)
DROP_TOPOLOGIES = ("ring", "torus", "hypercube", "complete")


def _check_drops(params):
    _check_floor(dict(params, mu=1.0, L=1.0, topology=params["topology"] if params["topology"] != "complete"
                      else "ring"))
    if not 0.0 <= params["q"] < 1.0:
        raise ValueError(f"drop rate q must lie in [0, 1), got q={params['q']}")


@experiment("link_drop_consensus", check=_check_drops, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "d": Param("int", default=8, low=1, doc="columns of x"),
    "topology": Param("str", default="ring", choices=DROP_TOPOLOGIES, doc="symmetric graph, equal edge weights"),
    "q": Param("float", default=0.2, low=0.0, high=1.0, high_open=True, doc="Bernoulli drop rate per edge and step"),
    "steps": Param("int", default=30, low=1, doc="gossip steps T"),
    "offset": Param("float", default=1.0, doc="common mean of the starting values: x_i(0) ~ offset + N(0, 1)"),
    "compensate": Param("bool", default=True,
                        doc="a failed edge's weight stays with its endpoints (false: it is lost, the control)"),
})
def link_drop_consensus(params, rng, backend):
    r"""Gossip with Bernoulli(q) edge failures drawn every step: the mean-square error after ``steps``.

    Row ``mean_sq_ratio`` :math:`\sum_i\|x_i^{(T)} - \bar x^{(0)}\|^2/\sum_i\|x_i^{(0)} - \bar x^{(0)}\|^2`
    (one run from a fresh Gaussian start; the failures from the replicate's stream), with the bound's
    inputs ``w`` (the common edge weight of ``W``), ``lap_low`` :math:`= 1 - \lambda_2(W)` and
    ``lap_high`` :math:`= 1 - \lambda_{\min}(W)` (dense eigenvalues of the fixed ``W``; the randomness
    is the formula's part) and ``kept_fraction``.
    """
    from simcomm.optim import run_unreliable_gossip
    from simcomm.topology import LinkFailures, mixing_matrix

    n, d = params["n"], params["d"]
    topo = build(params["topology"], n)
    W = mixing_matrix(topo)
    off = W[~np.eye(n, dtype=bool)]
    w = float(off[off > 0].max())
    if not np.allclose(off[off > 0], w, rtol=1e-12):
        raise ValueError(f"'{params['topology']}' at n={n} has unequal edge weights; the rate formula needs one weight")
    lam = np.linalg.eigvalsh(W)
    X0 = params["offset"] + rng.standard_normal((n, d))
    tr = run_unreliable_gossip(X0, topo, LinkFailures(q=params["q"]), steps=params["steps"], rng=rng,
                               compensate=params["compensate"], record_every=params["steps"], backend=backend)
    return [dict(metric="mean_sq_ratio", value=float(tr.mean_sq_ratio[-1]), w=w, lap_low=float(1.0 - lam[-2]),
                 lap_high=float(1.0 - lam[0]), kept_fraction=float(tr.kept_fraction[-1]))]


@experiment("link_drop_mode", check=_check_drops, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "topology": Param("str", default="ring", choices=DROP_TOPOLOGIES, doc="symmetric graph, equal edge weights"),
    "q": Param("float", default=0.2, low=0.0, high=1.0, high_open=True, doc="Bernoulli drop rate per edge and step"),
    "mode": Param("str", default="slow", choices=("slow", "fast"),
                  doc="start on an eigenvector of lambda_2 (slow) or of lambda_min (fast) of W"),
    "draws": Param("int", default=2000, low=1, doc="independent one-step rounds averaged per replicate"),
    "compensate": Param("bool", default=True,
                        doc="a failed edge's weight stays with its endpoints (false: it is lost, the control)"),
})
def link_drop_mode(params, rng, backend):
    r"""One failing-link step from an eigenvector ``v`` of ``W``: :math:`E\|W_t v\|^2/\|v\|^2`, mean over draws.

    ``v`` (unit, :math:`\perp \mathbf 1`) is an eigenvector of :math:`L = I - W` for
    :math:`\ell_2 = 1 - \lambda_2` (``mode="slow"``) or :math:`\ell_n = 1 - \lambda_{\min}`; every draw
    takes fresh Bernoulli(q) failures from the replicate's stream and one :func:`~simcomm.topology.unreliable_mix`
    step. Row ``mode_contraction`` (the mean of :math:`\|x'\|^2` over draws; :math:`\bar x = 0` is kept
    when the weight is compensated) with ``w`` and ``lap`` (the bound's inputs).
    """
    from simcomm.topology import LinkFailures, edge_list, mixing_matrix, unreliable_mix

    n = params["n"]
    topo = build(params["topology"], n)
    W = mixing_matrix(topo)
    off = W[~np.eye(n, dtype=bool)]
    w = float(off[off > 0].max())
    if not np.allclose(off[off > 0], w, rtol=1e-12):
        raise ValueError(f"'{params['topology']}' at n={n} has unequal edge weights; the rate formula needs one weight")
    lam, vecs = np.linalg.eigh(W)
    idx = n - 2 if params["mode"] == "slow" else 0
    v = vecs[:, idx].copy()[:, None]
    edges, fail = edge_list(topo), LinkFailures(q=params["q"])
    state = fail.init(edges, rng)
    total = 0.0
    for _ in range(params["draws"]):
        kept, state = fail.draw(edges, state, rng)
        y = unreliable_mix(edges, v, kept, compensate=params["compensate"])
        total += float(np.sum(y * y))
    return [dict(metric="mode_contraction", value=total / params["draws"], w=w, lap=float(1.0 - lam[idx]))]


def _check_equi(params):
    if params["n"] < 3:
        raise ValueError(f"EquiStatic needs n >= 3, got n={params['n']}")
    if not 0.0 < params["p"] < 1.0:
        raise ValueError(f"p must lie in (0, 1), got p={params['p']}")


@experiment("equistatic_norm", check=_check_equi, params={
    "n": Param("int", default=1024, low=3, doc="number of nodes"),
    "M": Param("int", default=64, low=1, doc="drawn offsets (D: out-edges per node; U: 2M peers)"),
    "variant": Param("str", default="d", choices=("d", "u"), doc="D-EquiStatic (directed) or U-EquiStatic"),
    "p": Param("float", default=0.1, low=0.0, high=1.0, low_open=True, high_open=True,
               doc="failure probability: the observable is the (1 - p)-quantile of ||W - J||_2"),
    "draws": Param("int", default=400, low=1, doc="graphs drawn per replicate"),
    "law": Param("str", default="uniform", choices=("uniform", "local"),
                 doc="offsets uniform on 1..n-1 (EquiTopo) or from the window 1..M/4 (the control)"),
})
def equistatic_norm(params, rng, backend):
    r"""EquiStatic graphs drawn from the stream: the :math:`(1-p)`-quantile of :math:`\|W - J\|_2` over draws.

    Each draw builds the circulant (:func:`simcomm.topology.d_equistatic` / ``u_equistatic``) and takes
    :math:`\|W - J\|_2 = \max_{k\ne0}|\lambda_k|` from :func:`simcomm.topology.rho` (the circulant FFT
    path: no ``n x n`` matrix). Rows ``norm_quantile`` (the empirical :math:`(1-p)`-quantile over
    ``draws``) and ``norm_median``.
    """
    from simcomm.topology import d_equistatic, u_equistatic

    make = d_equistatic if params["variant"] == "d" else u_equistatic
    norms = np.array([rho(make(params["n"], params["M"], rng=rng, law=params["law"])) for _ in range(params["draws"])])
    return [dict(metric="norm_quantile", value=float(np.quantile(norms, 1.0 - params["p"]))),
            dict(metric="norm_median", value=float(np.median(norms)))]
