r"""Experiments for decentralized (momentum) SGD over exponential graphs (papers/exponential_graph.md C3-C5, (f)6-7).

Problem: heterogeneous least squares (:func:`simcomm.models.heterogeneous_least_squares`, exact
:math:`x^\star, f^\star, L`), Gaussian gradient noise ``sigma``. Every comparison uses COMMON RANDOM
NUMBERS: parallel SGD (W = J) and every topology see the same problem and the same per-node noise
streams, so differences come from the topology, not from the draw.

Transient iterations (empirical definition used here) [N, after papers (f)6 and C5 [R]]
---------------------------------------------------------------------------------------
Run parallel SGD and DmSGD from the optimum :math:`x^\star` (the deterministic term
:math:`(f(x_0)-f^\star)/(\gamma T)` of C3 is the same for every topology, so starting at the
optimum isolates the terms that differ) with the step :math:`\gamma_k = \gamma\sqrt{n}/\sqrt{1+k}`:
the :math:`\sqrt{n/T}` scaling of the tuned step of C3 (linear speedup; BlueFog also multiplies the
learning rate by the number of nodes [C]), made a schedule so that one run stands for all horizons.
Let :math:`e_k = \frac1n\sum_i\|\nabla f(x_i^{(k)})\|^2` (the global gradient at the models the
nodes hold; averaged over ``inner`` noise seeds) and :math:`r(T) = \frac1T\sum_{k=1}^{T} e_k`. The
transient iterations are the smallest ``T`` such that :math:`r_{dec}(T') \le` ``factor`` :math:`\cdot\,
r_{par}(T')` for EVERY :math:`T' \ge T` up to the horizon. A run that is not within the factor at the
horizon is censored: its value is the horizon (a lower bound) and the row says so in ``note``.
``factor`` only rescales every transient by the same constant (the excess decays like
:math:`\gamma_k`), so it does not change orders or slopes; 1.25 keeps the full grids within minutes.
:func:`measured_transient` computes it. (The bound ``theory.expgraph:transient_iterations`` is the
rate-based shape [R+N]; this is the measurement it is compared with.)
"""

from __future__ import annotations

import math
import time

import numpy as np

from simcomm.experiments._registry import Param, experiment
from simcomm.models import heterogeneous_least_squares
from simcomm.optim import NOISES, messages_per_step, run_dsgd
from simcomm.topology import TOPOLOGIES as _REGISTRY
from simcomm.topology import build, rho, topology_names

__all__ = ["measured_transient", "running_mean", "checkpoints"]

#: Topologies DSGD runs on, read from the registry: doubly stochastic (DSGD's assumption) and fixed (a random
#: one drawn by name would not come from the cell's stream), plus k = 2, 3, 4 of those that take a degree k.
TOPOLOGIES = (*topology_names(stochasticity="doubly", random=False),
              *(f"{name}:k={k}" for name, info in _REGISTRY.items() if "k" in info.params and not info.random
                for k in (2, 3, 4)))


def running_mean(e: np.ndarray) -> np.ndarray:
    r""":math:`r(T) = \frac1T\sum_{k=1}^{T} e_k` for ``T = 1..len(e)-1`` (``e[0]`` is the start, excluded).

    Examples
    --------
    >>> running_mean(np.array([9.0, 1.0, 3.0]))
    array([1., 2.])
    """
    e = np.asarray(e, dtype=float)[1:]
    return np.cumsum(e) / np.arange(1, e.size + 1)


def checkpoints(horizon: int, per_octave: int = 4) -> np.ndarray:
    """Geometric checkpoints ``T`` in ``[1, horizon]`` (``per_octave`` per doubling, always the horizon).

    Examples
    --------
    >>> checkpoints(16, 1).tolist()
    [1, 2, 4, 8, 16]
    """
    k = int(math.floor(per_octave * math.log2(max(horizon, 1))))
    return np.unique(np.concatenate([np.round(2.0 ** (np.arange(k + 1) / per_octave)).astype(int), [horizon]]))


def measured_transient(r_dec: np.ndarray, r_par: np.ndarray, factor: float, per_octave: int = 4) -> tuple[int, bool]:
    r"""First checkpoint ``T`` from which ``r_dec <= factor * r_par`` at every later checkpoint; censoring flag.

    ``r_dec[T-1]``, ``r_par[T-1]`` are the running means at horizon ``T``; they are compared at the
    geometric :func:`checkpoints` (the theory's horizons are geometric too, and a sparse grid keeps
    a single noisy step from moving the answer). Returns ``(T, censored)``; censored means the last
    checkpoint (the horizon ``len(r_dec)``) is still outside the factor, and then ``T`` is the
    horizon, a lower bound.

    Examples
    --------
    >>> measured_transient(np.array([3.0, 2.0, 1.0, 1.0]), np.ones(4), 1.5, per_octave=2)
    (3, False)
    >>> measured_transient(np.array([1.0, 2.0]), np.ones(2), 1.5)
    (2, True)
    """
    T = len(r_dec)
    ks = checkpoints(T, per_octave)
    ok = np.asarray(r_dec)[ks - 1] <= factor * np.asarray(r_par)[ks - 1]
    bad = np.nonzero(~ok)[0]
    if bad.size == 0:
        return 1, False
    if bad[-1] == ks.size - 1:
        return T, True
    return int(ks[bad[-1] + 1]), False


_COMMON = {
    "d": Param("int", default=10, low=1, doc="dimension of the least-squares problem"),
    "b": Param("float", default=0.0, low=0.0, doc="heterogeneity at the optimum (0: every f_i minimised at x*)"),
    "sigma": Param("float", default=1.0, low=0.0, low_open=True, doc="gradient noise std per coordinate"),
    "lr": Param("float", default=0.01, low=0.0, low_open=True,
                doc="step constant: lr_k = lr sqrt(n)/sqrt(1+k)", former="gamma"),
    "beta": Param("float", default=0.0, low=0.0, high=1.0, high_open=True, doc="momentum (0: DSGD)"),
    "inner": Param("int", default=2, low=1, doc="noise seeds averaged inside one replicate"),
}


def _curves(prob, topologies, *, steps, lr, beta, sigma, inner, seed0, x0, schedule, k0):
    """Mean over ``inner`` seeds of e_k (node gradient norm), per topology, with divergence notes."""
    out, notes = {}, {}
    for topo in topologies:
        acc = np.zeros(steps + 1)
        note = ""
        for s in range(inner):
            tr = run_dsgd(prob, topo, steps=steps, lr=lr, beta=beta, sigma=sigma, seed=seed0 + s,
                          schedule=schedule, k0=k0, x0=x0)
            if tr.diverged[0]:
                note = tr.note
                acc[:] = np.inf
                break
            acc += tr.node_grad_norm_sq
        out[topo] = acc / inner
        notes[topo] = note
    return out, notes


def _transient_rows(params, rng, topologies):
    n = params["n"]
    prob = heterogeneous_least_squares(n, params["d"], b=params["b"], rng=rng)
    seed0 = int(rng.integers(2**62))
    lr = params["lr"] * math.sqrt(n)
    curves, notes = _curves(prob, ("parallel",) + tuple(topologies), steps=params["horizon"], lr=lr,
                            beta=params["beta"], sigma=params["sigma"], inner=params["inner"], seed0=seed0,
                            x0=prob.x_star, schedule="inv_sqrt", k0=1.0)
    r_par = running_mean(curves["parallel"])
    rows, values, censored = [], {}, {}
    for topo in topologies:
        cens = False
        if notes[topo]:
            T, note = math.inf, notes[topo]
        else:
            T, cens = measured_transient(running_mean(curves[topo]), r_par, params["factor"])
            note = f"censored at horizon {params['horizon']}" if cens else ""
        values[topo], censored[topo] = T, cens
        # censored = True: the value is the horizon, a lower bound, never a measurement to average;
        # rho = ||W - J||_2 of the graph (spectral fast path) is the input of the transient's shape
        rows.append(dict(metric="transient", value=float(T), topology=topo, censored=cens, note=note,
                         rho=float(rho(build(topo, n)))))
        with np.errstate(invalid="ignore"):  # inf/inf after a divergence is NaN, and the note says why
            final = float(running_mean(curves[topo])[-1] / r_par[-1])
        rows.append(dict(metric="final_ratio", value=final, topology=topo, note=note))
    return rows, values, censored


_TRANSIENT = {
    **_COMMON,
    "horizon": Param("int", default=4000, low=10, doc="iterations run (censoring point)"),
    "factor": Param("float", default=1.25, low=1.0, low_open=True,
                    doc="within-factor of parallel SGD that ends the transient"),
}


@experiment("dsgd_transient", params={
    **_TRANSIENT,
    "n": Param("int", default=16, low=4, doc="number of nodes"),
    "topology": Param("str", default="exponential", choices=TOPOLOGIES, doc="topology compared with parallel SGD"),
})
def dsgd_transient(params, rng, backend):
    """Transient iterations of DmSGD on one topology against parallel SGD (module doc)."""
    rows, _, _ = _transient_rows(params, rng, (params["topology"],))
    for r in rows:
        r.pop("topology")
        r.pop("rho", None)
    return rows


def _check_chain(params):
    chain = [t.strip() for t in params["chain"].split(",")]
    bad = [t for t in chain if t not in TOPOLOGIES]
    if bad or len(chain) < 2:
        raise ValueError(f"chain must list >= 2 topologies from {', '.join(TOPOLOGIES)}, got {params['chain']!r}")


@experiment("dsgd_transient_chain", columns=("topology", "pair", "side"), check=_check_chain, params={
    **_TRANSIENT,
    "n": Param("int", default=16, low=4, doc="number of nodes"),
    "chain": Param("str", default="exponential,torus,ring", doc="topologies expected in increasing transient order"),
})
def dsgd_transient_chain(params, rng, backend):
    """Transient iterations of several topologies on the same noise; ``transient_order`` rows pair neighbours.

    For each adjacent pair ``a<=b`` of ``chain`` two rows: ``side="lower"`` (a's value) and
    ``side="higher"`` (b's), with ``pair="a<=b"``, so an order claim with ``compare = "side"``
    checks the whole chain. ``transient_ratio`` rows (``pair = "b/a"`` for every later member b of
    the chain over the first a) carry the ratio of the two transients. A transient that reached the
    horizon, and a ratio involving one, carries ``censored = True``.
    """
    chain = [t.strip() for t in params["chain"].split(",")]
    rows, values, censored = _transient_rows(params, rng, chain)
    for a, b in zip(chain, chain[1:]):
        rows.append(dict(metric="transient_order", value=float(values[a]), pair=f"{a}<={b}", side="lower",
                         censored=censored[a]))
        rows.append(dict(metric="transient_order", value=float(values[b]), pair=f"{a}<={b}", side="higher",
                         censored=censored[b]))
    first = chain[0]
    for b in chain[1:]:
        # a censored numerator makes the ratio a lower bound; flag it, never average it
        with np.errstate(invalid="ignore"):
            ratio = float(values[b] / values[first])
        rows.append(dict(metric="transient_ratio", value=ratio, pair=f"{b}/{first}",
                         censored=censored[b] or censored[first]))
    return rows


# --------------------------------------------------------------------------- tracking from x0


def _tracking_runs(params, rng, n, topologies, built=None):
    """Parallel SGD and DmSGD on each of ``topologies`` (names), on one problem and the same noise seeds.

    ``built`` maps a name to the Topology run in its place (a negative control's mistaken graph).
    """
    built = built or {}
    prob = heterogeneous_least_squares(n, params["d"], b=params["b"], rng=rng)
    seed0 = int(rng.integers(2**62))
    curves, notes = {}, {}
    subs, cons = {}, {}
    for topo in ("parallel",) + tuple(topologies):
        acc_e = np.zeros(params["steps"] + 1)
        acc_s = np.zeros(params["steps"] + 1)
        acc_c = np.zeros(params["steps"] + 1)
        note = ""
        for s in range(params["inner"]):
            tr = run_dsgd(prob, built.get(topo, topo), steps=params["steps"], lr=params["lr"] * math.sqrt(n),
                          beta=params["beta"], sigma=params["sigma"], seed=seed0 + s, schedule="inv_sqrt",
                          k0=params["k0"])
            if tr.diverged[0]:
                note = tr.note
                acc_e[:] = np.inf
                acc_s[:] = np.inf
                acc_c[:] = np.inf
                break
            acc_e += tr.node_grad_norm_sq
            acc_s += tr.subopt
            acc_c += tr.consensus
        curves[topo] = acc_e / params["inner"]
        subs[topo] = acc_s / params["inner"]
        cons[topo] = acc_c / params["inner"]
        notes[topo] = note
    return prob, curves, subs, cons, notes


def _tail(x: np.ndarray, frac: float = 0.1) -> float:
    k = max(1, int(round(frac * (len(x) - 1))))
    return float(np.mean(x[-k:]))


_TRACK = {
    **_COMMON,
    "steps": Param("int", default=2000, low=10, doc="iterations T"),
    "k0": Param("float", default=100.0, low=0.0, low_open=True,
                doc="decay scale of lr_k = lr sqrt(n)/sqrt(1+k/k0)"),
    "early": Param("int", default=50, low=1, doc="tracking is measured from this step on"),
}
_TRACK["beta"] = Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="momentum (DmSGD)")
_TRACK["lr"] = Param("float", default=0.002, low=0.0, low_open=True,
                     doc="step constant: lr_k = lr sqrt(n)/sqrt(1+k/k0)", former="gamma")


def _window_ratio(e_dec: np.ndarray, e_par: np.ndarray, T: int) -> float:
    """Mean of ``e_dec`` over ``(T/2, T]`` divided by that of ``e_par`` (the windowed ratio of dsgd_tracking)."""
    lo = T // 2 + 1
    with np.errstate(invalid="ignore"):  # inf/inf after a divergence is NaN; the note says why
        return float(np.mean(e_dec[lo : T + 1]) / np.mean(e_par[lo : T + 1]))


@experiment("dsgd_tracking", params={
    **_TRACK,
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "topology": Param("str", default="exponential", choices=TOPOLOGIES, doc="topology compared with parallel SGD"),
})
def dsgd_tracking(params, rng, backend):
    r"""DmSGD from :math:`x_0 = 0` against parallel SGD on the same noise: the ratio of node gradient norms.

    With :math:`e_k = \frac1n\sum_i\|\nabla f(x_i^{(k)})\|^2` (it sees the consensus error: the
    gradient at each node's own model):

    * ``late_ratio``: mean of :math:`e_k` over the second half of the run (``k > steps/2``, the
      stationary end of the schedule), decentralized / parallel: the claim that the ratio tends to 1
      after the transient;
    * ``ratio_at_step`` with column ``step`` (geometric checkpoints): the same windowed ratio over
      ``(T/2, T]`` for every checkpoint ``T >= early``: the ratio against steps, for the figure;
    * ``tracking_ratio``: :math:`\max_{T \ge \text{early}} r_{dec}(T)/r_{par}(T)` of the running
      means :math:`r(T) = \frac1T\sum_{k\le T} e_k` (reported, not judged).
    """
    n, topo = params["n"], params["topology"]
    _, curves, _, _, notes = _tracking_runs(params, rng, n, (topo,))
    e_dec, e_par = curves[topo], curves["parallel"]
    r_par, r_dec = running_mean(e_par), running_mean(e_dec)
    ratio = r_dec[params["early"] - 1:] / r_par[params["early"] - 1:]
    note = notes[topo]

    rows = [dict(metric="late_ratio", value=_window_ratio(e_dec, e_par, params["steps"]), note=note),
            dict(metric="tracking_ratio", value=float(np.max(ratio)), note=note)]
    for T in checkpoints(params["steps"], 2):
        if T >= params["early"]:
            rows.append(dict(metric="ratio_at_step", value=_window_ratio(e_dec, e_par, int(T)), step=int(T), note=note))
    return rows


@experiment("dsgd_ratio_decay", columns=("window",), params={
    **_TRACK,
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "topology": Param("str", default="exponential", choices=TOPOLOGIES, doc="topology compared with parallel SGD"),
    "shorter": Param("int", default=4, low=2, doc="the earlier horizon is steps / shorter"),
})
def dsgd_ratio_decay(params, rng, backend):
    r"""The windowed ratio of :func:`dsgd_tracking` at two horizons of ONE run: ``T/shorter`` and ``T``.

    ``window_ratio`` rows with ``window = "early"`` (the mean of :math:`e_k` over
    :math:`(T_1/2, T_1]`, :math:`T_1 = T/\text{shorter}`, decentralized / parallel) and ``window =
    "late"`` (the same over :math:`(T/2, T]`). Both come from the same run on the same noise, so an order
    claim compares them paired: a ratio that still falls between the two horizons is a transient not yet
    over, one that does not fall has reached its limit (or never will).
    """
    n, topo = params["n"], params["topology"]
    _, curves, _, _, notes = _tracking_runs(params, rng, n, (topo,))
    e_dec, e_par = curves[topo], curves["parallel"]

    T = params["steps"]
    return [dict(metric="window_ratio", value=_window_ratio(e_dec, e_par, horizon), window=name, note=notes[topo])
            for name, horizon in (("early", T // params["shorter"]), ("late", T))]


def _tail_ratio(num: np.ndarray, den: np.ndarray) -> float:
    with np.errstate(invalid="ignore", divide="ignore"):  # a diverged run: NaN/inf, the note says why
        return _tail(num) / _tail(den)


@experiment("dsgd_one_peer", params={
    **_TRACK,
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "first_hop": Param("int", default=1, low=1, keyed_at_default=False,
                       doc="negative control only: the one-peer hops are first_hop * 2^t (2: exponents counted "
                           "from 1, hops 2, 4, ..., 2^tau, all even); 1 changes nothing"),
})
def dsgd_one_peer(params, rng, backend):
    r"""One-peer against static exponential graph at the same step count, on the same noise.

    Metrics: ``one_peer_consensus`` = tail (last 10%) mean of the one-peer run's consensus error
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2` (raw), with the static graph's on the same
    noise in the column ``static_consensus``; ``loss_ratio`` = tail mean of :math:`f(\bar x)-f^\star`,
    one-peer / static (reported: gossip barely moves it); ``message_ratio`` = messages per node sent
    by static / by one-peer over the run (deterministic, :math:`\tau = \lceil\log_2 n\rceil`); ``tau``.
    ``first_hop = 2`` (negative control) runs one-peer hops 2^(t+1) in place of 2^t.
    """
    from simcomm.experiments.expgraph import one_peer_hops

    n = params["n"]
    built = {} if params["first_hop"] == 1 else {"one_peer_exponential": one_peer_hops(n, params["first_hop"])}
    _, _, subs, cons, notes = _tracking_runs(params, rng, n, ("exponential", "one_peer_exponential"), built=built)
    T = params["steps"]
    m_static = float(np.sum(messages_per_step("exponential", n)) * T)
    per = messages_per_step("one_peer_exponential", n)
    m_one = float(per[np.arange(T) % len(per)].sum())
    note = notes["one_peer_exponential"] or notes["exponential"]
    return [
        dict(metric="one_peer_consensus", value=_tail(cons["one_peer_exponential"]),
             static_consensus=_tail(cons["exponential"]), note=note),
        dict(metric="loss_ratio", value=_tail_ratio(subs["one_peer_exponential"], subs["exponential"]), note=note),
        dict(metric="message_ratio", value=m_static / m_one),
        dict(metric="tau", value=float((n - 1).bit_length())),
    ]


@experiment("dsgd_one_peer_pow2", columns=("nodes", "sizes"), params={
    **_TRACK,
    "p": Param("int", default=4, low=3, high=10, doc="compares n = 2^p with n = 3 * 2^(p-2) (e.g. 16 with 12)"),
    "graph": Param("str", default="one_peer_exponential", choices=("one_peer_exponential", "ring"),
                   keyed_at_default=False,
                   doc="negative control only: ring runs in place of the one-peer exponential graph (no power-of-2 "
                       "structure), still divided by the static graph's error"),
})
def dsgd_one_peer_pow2(params, rng, backend):
    r"""One-peer's consensus error relative to the static exponential graph, at a power of two and nearby.

    Rows ``metric="one_peer_consensus_ratio"`` with ``nodes = "power_of_2"`` (n = 2^p) or
    ``"not_power_of_2"`` (n = 3 2^{p-2}); value = tail (last 10%) mean of the consensus error
    :math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`, one-peer / static, on the same problem and noise
    (a ratio of two measurements: the sizes differ, so each is compared with its own static graph).
    Rows ``one_peer_loss_ratio`` carry the same for :math:`f(\bar x)-f^\star` (reported, not judged:
    gossip barely moves it). Both sizes in one cell, so an order claim compares them. ``graph = "ring"``
    (negative control) runs the ring where the one-peer graph would be.
    """
    p = params["p"]
    one = params["graph"]
    rows = []
    for label, n in (("power_of_2", 1 << p), ("not_power_of_2", 3 << (p - 2))):
        _, _, subs, cons, notes = _tracking_runs(params, rng, n, ("exponential", one))
        note = notes[one] or notes["exponential"]
        sizes = f"{3 << (p - 2)} vs {1 << p}"
        rows.append(dict(metric="one_peer_consensus_ratio", value=_tail_ratio(cons[one], cons["exponential"]),
                         nodes=label, sizes=sizes, note=note))
        rows.append(dict(metric="one_peer_loss_ratio", value=_tail_ratio(subs[one], subs["exponential"]),
                         nodes=label, sizes=sizes, note=note))
    return rows


@experiment("dsgd_transient_growth", columns=("size",), check=_check_chain, params={
    **_TRANSIENT,
    "n": Param("int", default=16, low=4, doc="the smaller number of nodes; the larger is 2 n"),
    "chain": Param("str", default="exponential,torus",
                   doc="two topologies: the ratio is the second's transient over the first's"),
})
def dsgd_transient_growth(params, rng, backend):
    """Transient ratio of two topologies at n and at 2 n, in one cell (so an order claim pairs them).

    Rows ``metric="transient_ratio"`` with ``size = "n"`` or ``"2n"``:
    the second topology's transient over the first's, each size on its own problem and noise
    (the same definition as ``dsgd_transient_chain``). A ratio whose numerator reached the horizon is
    a lower bound and carries ``censored = True``; so does one whose denominator did.
    """
    a, b = [t.strip() for t in params["chain"].split(",")][:2]
    rows = []
    for label, n in (("n", params["n"]), ("2n", 2 * params["n"])):
        _, values, censored = _transient_rows({**params, "n": n}, rng, (a, b))
        with np.errstate(invalid="ignore"):
            ratio = float(values[b] / values[a])
        # no column with the node count: it would vary inside the cell and split the pair
        rows.append(dict(metric="transient_ratio", value=ratio, size=label, censored=censored[b] or censored[a]))
    return rows


# --------------------------------------------------------------------------- one large run (benchmark)


def _run_cost(p):
    """(seconds, bytes) of one replicate, order of magnitude.

    Diagonal: about seven ``(n, d)`` float64 arrays at the peak (minimisers, iterates, momentum, the
    new iterates, gradients, two measurement temporaries); ~5e-8 s per entry and step on a shared
    2-core machine with numba (the counter normals' ``log``/``cos`` dominate). Least squares: the
    data ``(n, 2d, d)`` and the per-node Hessians built once (about three such arrays, O(n d^3) to
    build), then a batched gemv pair per step.
    """
    n, d, steps = float(p["n"]), float(p["d"]), float(p["steps"])
    if p["problem"] == "diagonal":
        return 5e-8 * n * d * (steps + 1), 7 * 8 * n * d
    return 1e-9 * n * d**3 + 4e-9 * n * d * d * steps, 3 * 8 * 2 * n * d * d


@experiment("dsgd_run", cost=_run_cost, params={
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "d": Param("int", default=10, low=1, doc="dimension"),
    "problem": Param("str", default="diagonal", choices=("least_squares", "diagonal"),
                     doc="least_squares (O(n d^2) data) or diagonal (O(n d), for large d)"),
    "topology": Param("str", default="one_peer_exponential", choices=TOPOLOGIES + ("parallel",),
                      doc="gossip topology, or parallel (W = J)"),
    "steps": Param("int", default=20, low=1, doc="iterations T"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="constant step size", former="gamma"),
    "beta": Param("float", default=0.0, low=0.0, high=1.0, high_open=True, doc="momentum (0: DSGD)"),
    "sigma": Param("float", default=1.0, low=0.0, doc="gradient noise std per coordinate (0: exact gradients)"),
    "b": Param("float", default=1.0, low=0.0, doc="heterogeneity at the optimum"),
    "record_every": Param("int", default=1, low=1, doc="measure every this many steps (and at 0 and T)"),
    "noise": Param("str", default="auto", choices=NOISES,
                   doc="stream (host per-node streams), counter (counter normals, drawn where the state is) "
                       "or auto (stream on numpy/numba, counter on cupy)"),
    "trace": Param("bool", default=False, keyed_at_default=False, column_at_default=False,
                   doc="also a row per recorded step (every record_every) of each measurement, with step; "
                       "its default changes nothing (the end-state rows are the same either way)"),
}, columns=("step",))
def dsgd_run(params, rng, backend):
    r"""One DmSGD run from :math:`x_0 = 0`: the final state's measurements (the end-to-end benchmark run).

    The problem comes from :func:`simcomm.models.make_node_problem` (``diagonal`` keeps memory at
    O(n d), so ``n = 256``, ``d = 10^6`` runs, and is built by the backend: on the device for cupy),
    the noise seed from the replicate's stream. Rows:
    ``consensus`` (:math:`\frac1n\|X - \mathbf 1\bar x^\top\|_F^2`), ``subopt``
    (:math:`f(\bar x) - f^\star`) and ``node_grad_norm_sq``
    (:math:`\frac1n\sum_i\|\nabla f(x_i)\|^2`) at step ``T``, each with ``note`` =
    ``"diverged at step t"`` (and the value NaN) if the run blew up; then two timings, reported and
    never judged: ``setup_seconds`` (building the problem) and ``run_seconds`` (the
    :func:`~simcomm.optim.run_dsgd` call: data to the backend's device, the steps, the measurements,
    the final iterates back). With ``trace = true``, also the curve: ``consensus``, ``subopt`` and
    ``node_grad_norm_sq`` at every recorded step (``0``, every ``record_every``, ``T``) with ``step``
    (the end-state rows above have no step, so a sweep figure draws them against the grid and
    ``simcomm plot --trace`` the curve against steps).
    """
    from simcomm.models import make_node_problem

    t0 = time.perf_counter()
    prob = make_node_problem(params["problem"], params["n"], d=params["d"], b=params["b"], rng=rng)
    seed = int(rng.integers(2**62))
    t1 = time.perf_counter()
    tr = run_dsgd(prob, params["topology"], steps=params["steps"], lr=params["lr"], beta=params["beta"],
                  sigma=params["sigma"], seed=seed, record_every=params["record_every"], backend=backend,
                  noise=params["noise"])
    t2 = time.perf_counter()
    note = tr.note
    rows = [dict(metric=m, value=float(getattr(tr, m)[-1]), note=note)
            for m in ("consensus", "subopt", "node_grad_norm_sq")]
    rows.append(dict(metric="setup_seconds", value=t1 - t0))
    rows.append(dict(metric="run_seconds", value=t2 - t1))
    if params.get("trace", False):
        rows += [dict(metric=m, value=float(v), step=int(s), note=note)
                 for m in ("consensus", "subopt", "node_grad_norm_sq") for s, v in zip(tr.step, getattr(tr, m))]
    return rows
