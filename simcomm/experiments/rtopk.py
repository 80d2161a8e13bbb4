"""Experiments for rTop-k (Barnes, Inan, Isik & Özgür, 2020).

The paper: "rTop-k: A Statistical Estimation Approach to Distributed SGD".

Operator level: the raw squared error of top-k, rand-k and rTop-k on sparse skewed vectors, with the
measured norms the bounds of ``theory.rtopk`` take as row columns (``norm2``, ``topr_norm2``).
Estimation level: the sparse skewed Bernoulli model F1 of papers/rtopk.md, a stand-in derived in the
notes ([N]), NOT the paper's model (which was not available); see :mod:`simcomm.estimate`.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.compress import rand_k, rtop_k, top_k, top_k_indices
from simcomm.estimate import SCHEMES, estimate_mean, index_budget, mean_estimation_mse
from simcomm.experiments._registry import Param, experiment
from simcomm.models import skewed_profile, sparse_heavy_tailed

METHODS = ("rtop_k", "top_k", "rand_k")

_VECTOR = {
    "d": Param("int", default=1000, low=1, doc="dimension"),
    "k": Param("int", default=10, low=1, doc="coordinates kept (k <= d)"),
    "alpha": Param("float", default=1.0, low=0.0,
                   doc="magnitude exponent (pareto tail index > 0, or powerlaw j^-alpha)"),
    "profile": Param("str", default="pareto", choices=("pareto", "powerlaw"),
                     doc="random Pareto magnitudes, or the fixed j^-alpha"),
    "draws": Param("int", default=200, low=2, doc="vectors (and compressor draws) averaged per replicate"),
}


def _check_vector(p):
    if p["k"] > p["d"]:
        raise ValueError(f"k = {p['k']} exceeds d = {p['d']}; use k <= d")
    if p["profile"] == "pareto" and p["alpha"] <= 0:
        raise ValueError("alpha must be > 0 for the pareto profile")


def _check_error(p):
    _check_vector(p)
    if p["nnz"] > p["d"]:
        raise ValueError(f"nnz = {p['nnz']} exceeds d = {p['d']}; use nnz <= d")
    if p.get("r_over_k"):
        if p["r"]:
            raise ValueError(f"r = {p['r']} and r_over_k = {p['r_over_k']} both set rTop-k's top set; give one")
        if p["r_over_k"] < 1:
            raise ValueError(f"r_over_k = {p['r_over_k']} is out of range; use r/k >= 1 (r >= k)")
    if p["r"] and not p["k"] <= p["r"] <= p["d"]:
        raise ValueError(f"r = {p['r']} is out of range; use k = {p['k']} <= r <= d = {p['d']} (or r = 0 for r = k)")
    if p.get("rtopk_rescale") and p["method"] != "rtop_k":
        raise ValueError(f"rtopk_rescale = true applies to method = rtop_k only, not {p['method']}")


def _top_set(p) -> int:
    """rTop-k's r: ``r``, else ``round(r_over_k * k)`` capped at ``d``, else ``k``."""
    if p.get("r_over_k"):
        return min(p["d"], max(p["k"], round(p["r_over_k"] * p["k"])))
    return p["r"] or p["k"]


def _vector_cost(p):
    """(seconds, bytes) of one replicate: a few dense (draws, d) float64 arrays (x, C(x), x - C(x)...).

    ~1.5e-7 s per entry measured on a shared 2-core machine for d in 1e3..1e5 (top-k slowest);
    peak memory is about five such arrays.
    """
    entries = float(p["draws"]) * float(p["d"])
    return 1.5e-7 * entries, 5 * 8 * entries


@experiment(
    "sparsifier_error",
    cost=_vector_cost,
    params={
        **_VECTOR,
        "r": Param("int", default=0, low=0, doc="rTop-k's top-set size (k <= r <= d; 0 means r = k)"),
        "r_over_k": Param("float", default=0.0, low=0.0, keyed_at_default=False,
                          doc="rTop-k's top set as a ratio: r = round(r_over_k * k), capped at d (>= 1); added later, "
                              "its default 0 changes nothing (r is used); for sweeps (a bound that takes r reads r)"),
        "nnz": Param("int", default=100, low=1, doc="nonzero coordinates of x (nnz <= d)"),
        "method": Param("str", default="rtop_k", choices=METHODS, doc="sparsifier"),
        "scale": Param("bool", default=True, doc="rand_k only: multiply kept entries by d/k (unbiased)"),
        "rtopk_rescale": Param("bool", default=False, keyed_at_default=False,
                               doc="negative control only: true multiplies rTop-k's kept entries by r/k (as if "
                                   "it were made unbiased over its top set); false = rTop-k as defined (unscaled)"),
    },
    check=_check_error,
)
def sparsifier_error(params, rng, backend):
    """Squared error ``||x - C(x)||^2`` averaged over ``draws`` sparse skewed vectors, with the inputs of its bounds.

    Each vector has ``nnz`` nonzeros at random positions with random signs (pareto: random heavy-tailed
    magnitudes; powerlaw: the magnitudes ``j^-alpha``), and each is compressed with fresh randomness.
    Every vector is scaled to unit norm before it is compressed: the identities are homogeneous of
    degree 2, and Pareto magnitudes with tail index <= 2 have no finite mean square, so unscaled
    squared errors would not average. The row's value is the RAW mean squared error over the draws;
    the columns ``norm2`` (mean of ``||x||^2``, 1 up to rounding) and ``topr_norm2`` (mean of
    ``||Top_r(x)||^2``; r is ``r``, else ``round(r_over_k * k)`` capped at d, else k) over the same
    vectors are the measured statistics the bounds of ``theory.rtopk`` take (they are linear in them, so
    means compare with means). A bound that takes ``r`` reads the cell's ``r``: claims give ``r``, sweeps
    may give ``r_over_k``. ``rtopk_rescale = true`` (negative control) multiplies rTop-k's kept entries
    by ``r/k``: its error is then ``||x||^2 + (r/k - 2) ||Top_r(x)||^2`` in expectation.
    """
    d, k, method = params["d"], params["k"], params["method"]
    r = _top_set(params)
    x = sparse_heavy_tailed(d, params["nnz"], alpha=params["alpha"], profile=params["profile"], rng=rng,
                            size=(params["draws"],))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    if method == "top_k":
        c = top_k(x, k)
    elif method == "rand_k":
        c = rand_k(x, k, rng=rng, scale=params["scale"])
    else:
        c = rtop_k(x, k, r, rng=rng)
        if params["rtopk_rescale"]:  # the mistaken scale: unbiased over the top set, no longer a contraction
            c *= r / k
    sq = x**2
    # ||Top_r(x)||^2: the r largest squares of each vector (partition, no full sort)
    topr = np.partition(sq, d - r, axis=-1)[..., d - r :].sum(axis=-1) if r < d else sq.sum(axis=-1)
    return [dict(metric="sq_err", value=float(((x - c) ** 2).sum(axis=-1).mean()),
                 norm2=float(sq.sum(axis=-1).mean()), topr_norm2=float(topr.mean()))]


_SAMPLERS = ("uniform", "magnitude", "with_replacement")


def _biased_kept_mask(x, k, r, sampler, rng):
    """Kept-coordinate mask (T, d) of rTop-k with a mistaken random-k step (negative controls only).

    The top ``r`` of each row as rTop-k takes them; then ``magnitude``: ``k`` of them without
    replacement with probability proportional to ``|x_j|`` (exponential race: the ``k`` smallest
    ``E_j / |x_j|``, ``E_j ~ Exp(1)``, the law of successive weighted draws); ``with_replacement``:
    ``k`` uniform draws with replacement, a coordinate drawn twice kept once.
    """
    T, d = x.shape
    top = np.broadcast_to(np.arange(d), (T, d)) if r == d else top_k_indices(x, r)
    if sampler == "magnitude":
        keys = rng.exponential(size=(T, r)) / np.abs(np.take_along_axis(x, top, axis=-1))
        pick = np.argpartition(keys, k - 1, axis=-1)[:, :k] if k < r else np.broadcast_to(np.arange(r), (T, r))
    else:
        pick = rng.integers(0, r, size=(T, k))
    mask = np.zeros((T, d), dtype=bool)
    np.put_along_axis(mask, np.take_along_axis(top, pick, axis=-1), True, axis=-1)
    return mask


def _check_limits(p):
    _check_vector(p)
    if p["r"] and not p["k"] <= p["r"] <= p["d"]:
        raise ValueError(f"r = {p['r']} is out of range; use k = {p['k']} <= r <= d = {p['d']} (or r = 0 for r = d)")


@experiment(
    "rtopk_limits",
    cost=_vector_cost,
    params={**_VECTOR,
            "r": Param("int", default=0, low=0, doc="rTop-k's top-set size (0 means r = d, the rand-k limit)"),
            "sampler": Param("str", default="uniform", choices=_SAMPLERS, keyed_at_default=False,
                             doc="negative control only: how the k coordinates are drawn from the top r; "
                                 "magnitude: without replacement with probability proportional to |x_j| "
                                 "(successive sampling); with_replacement: k uniform draws with replacement "
                                 "(repeats kept once, so fewer than k); uniform = rTop-k as defined")},
    check=_check_limits,
)
def rtopk_limits(params, rng, backend):
    """Discrepancy of rTop-k's inclusion counts from a uniform k-subset on one dense vector.

    With ``c_j`` the number of the ``draws`` compressions that keep coordinate ``j`` and ``p = k/d``,
    the value is ``Z - 1`` for ``Z = mean_j (c_j - T p)^2 / (T p (1 - p))``; ``E Z = 1`` when every
    draw keeps a uniform k-subset (unscaled rand-k, the ``r = d`` limit), so the discrepancy has mean
    0 there. ``r < d`` keeps only top-r coordinates and gives a large positive value. (The other
    limit, ``r = k`` is top-k, holds entry for entry and is a test, not a claim.) ``sampler`` other than
    ``uniform`` (negative controls) draws the k coordinates from the top r with a mistaken sampler: in
    proportion to ``|x_j|`` (uniform again only where the magnitudes are equal), or with replacement
    (at ``r = d`` each count is Binomial(T, p'), ``p' = 1 - (1 - 1/d)^k``, so
    ``E Z = (p' (1 - p') + T (p - p')^2) / (p (1 - p))``).
    """
    d, k, T = params["d"], params["k"], params["draws"]
    r = params["r"] or d
    x = sparse_heavy_tailed(d, d, alpha=params["alpha"], profile=params["profile"], rng=rng)
    xs = np.broadcast_to(x, (T, d))
    if params["sampler"] == "uniform":
        # Every entry of x is nonzero (nnz = d), so the kept set is the nonzero set.
        counts = (rtop_k(xs, k, r, rng=rng) != 0).sum(axis=0)
    else:
        counts = _biased_kept_mask(xs, k, r, params["sampler"], rng).sum(axis=0)
    p = k / d
    value = float(np.mean((counts - T * p) ** 2) / (T * p * (1 - p)) - 1.0) if k < d else 0.0
    return [dict(metric="discrepancy", value=value)]


_MODEL = {
    "n": Param("int", default=50, low=1, doc="nodes"),
    "d": Param("int", default=1024, low=2, doc="dimension"),
    "s": Param("float", default=10.0, low=0.0, low_open=True, doc="sparsity: sum of theta (s <= d)"),
    "k": Param("int", default=40, low=1, doc="bit budget per node (k' = floor(k / ceil(log2 d)) indices)"),
    "alpha": Param("float", default=1.0, low=0.0, doc="skew: power-law exponent of theta's profile"),
    "support": Param("float", default=4.0, low=1.0, doc="support size as a multiple of s"),
    "draws": Param("int", default=200, low=1, doc="Monte Carlo repetitions averaged per replicate (vectorised)",
                   former="mc"),
}


def _check_model(p):
    if p.get("subset_scale", "size") != "size" and not p.get("rescale", True):
        raise ValueError("subset_scale = dimension and rescale = false are two controls; give one")
    if p["s"] > p["d"]:
        raise ValueError(f"s = {p['s']:g} exceeds d = {p['d']}; use s <= d")
    bits = (p["d"] - 1).bit_length()
    if p["k"] < bits:
        raise ValueError(f"bit budget k = {p['k']} is smaller than one index ({bits} bits for d = {p['d']}); "
                         f"use k >= {bits}")


def _profile(d, s, alpha, support):
    return skewed_profile(min(d, math.ceil(support * s)), s, alpha)


def _dimension_scaled_errors(theta, n, k, d, draws, rng):
    """Squared errors of the three schemes when the random subset is scaled by d/k' (a negative control).

    Observations on all ``d`` coordinates (``theta`` padded with zeros), shared by the schemes; top-k
    and rand-k' are :func:`simcomm.estimate.estimate_mean`'s. The random subset is its ``rtop_k`` run
    one node at a time (a node's estimate is nonzero exactly on the indices it sends), with the sent
    indicators averaged over nodes and multiplied by ``d/k'`` instead of ``|S_i|/min(k', |S_i|)``.
    """
    full = np.zeros(d)
    full[: theta.size] = np.sort(theta)[::-1]
    order = np.argsort(-full, kind="stable")
    scale = d / index_budget(k, d)
    out = {s: np.empty(draws) for s in SCHEMES}
    chunk = max(1, (1 << 22) // (n * d))
    for a in range(0, draws, chunk):
        b = min(draws, a + chunk)
        X = rng.random((b - a, n, d)) < full
        sent = estimate_mean(X.reshape(-1, 1, d), k, scheme="rtop_k", rng=rng).reshape(b - a, n, d) > 0
        est = {"rtop_k": sent.sum(axis=1) * (scale / n),
               "top_k": estimate_mean(X, k, scheme="top_k", rng=rng, order=order),
               "rand_k": estimate_mean(X, k, scheme="rand_k", rng=rng)}
        for s in SCHEMES:
            out[s][a:b] = ((est[s] - full) ** 2).sum(axis=-1)
    return out


@experiment("mean_estimation", columns=("method",), check=_check_model, params={
    **_MODEL,
    "rescale": Param("bool", default=True, keyed_at_default=False,
                     doc="negative control only: false drops the random subset's |S|/min(k', |S|) rescaling "
                         "(a biased estimator)"),
    "subset_scale": Param("str", default="size", choices=("size", "dimension"), keyed_at_default=False,
                          doc="negative control only: dimension scales the random subset's indicators by "
                              "rand-k's d/k' in place of |S|/min(k', |S|) (a biased estimator); size = as "
                              "defined"),
})
def mean_estimation(params, rng, backend):
    """MSE of the three estimation schemes (model F1 [N]), on the same observations.

    One row per scheme (``method`` = rtop_k: random subset of the support; top_k: first k' of the
    support in the skew ordering; rand_k: k' uniformly random coordinates), each the mean of ``draws``
    squared errors ``||theta_hat - theta||^2``; and ``topk_minus_subset``, the mean over the same
    ``draws`` repetitions of top-k's squared error minus the random subset's (a paired difference).
    ``rescale = false`` (negative control) makes the random subset a biased estimator; so does
    ``subset_scale = "dimension"`` (negative control), which scales its indicators by rand-k's ``d/k'``
    (mean about ``(d/|S|) theta``), simulated on all ``d`` coordinates (``_dimension_scaled_errors``).
    """
    d = params["d"]
    theta = _profile(d, params["s"], params["alpha"], params["support"])
    if params["subset_scale"] == "dimension":
        err = _dimension_scaled_errors(theta, params["n"], params["k"], d, params["draws"], rng)
    else:
        err = mean_estimation_mse(theta, params["n"], params["k"], d=d, replicates=params["draws"], rng=rng,
                                  rescale=params["rescale"])
    # No k' column: it is a function of (k, d), and a co-varying column would split plot lines.
    rows = [dict(metric="mse", value=float(err[s].mean()), method=s) for s in SCHEMES]
    # The paired difference on the same observations (common random numbers): raw measurements only.
    rows.append(dict(metric="topk_minus_subset", value=float((err["top_k"] - err["rtop_k"]).mean())))
    return rows


_AXES = ("n", "kprime", "s", "log2d")


def _scaled(p):
    """Cell parameters with the swept quantity multiplied by x (see mean_estimation_scaling)."""
    n, d, s, k, x = p["n"], p["d"], p["s"], p["k"], p["x"]
    axis = p["axis"]
    if axis == "n":
        n *= x
    elif axis == "kprime":
        k *= x
    elif axis == "s":
        s *= x
    else:
        d = 2 ** ((d - 1).bit_length() * x)
    return n, d, s, k


def _check_scaling(p):
    _check_model(p)
    n, d, s, k = _scaled(p)
    if d > 2**62:
        raise ValueError(f"log2d axis: d = 2^{(d - 1).bit_length()} is too large; use a smaller d or x")
    _check_model({**p, "n": n, "d": d, "s": s, "k": k})


@experiment(
    "mean_estimation_scaling",
    params={
        **_MODEL,
        "axis": Param("str", default="n", choices=_AXES,
                      doc="quantity multiplied by x: n, the bit budget k (so k'), s, or log2 d"),
        "x": Param("int", default=1, low=1, doc="multiplier of the swept quantity"),
        "rescale": Param("bool", default=True, keyed_at_default=False,
                         doc="negative control only: false drops the random subset's |S|/min(k', |S|) "
                             "rescaling (a biased estimator)"),
    },
    check=_check_scaling,
)
def mean_estimation_scaling(params, rng, backend):
    """MSE of the random-subset scheme with one quantity multiplied by ``x`` (model F1 [N]).

    ``axis`` = n: n x; kprime: bit budget k x (k' = k x / ceil(log2 d) when k is a multiple of it);
    s: s x (the support grows with it); log2d: d = 2^(ceil(log2 d) x) at the same bit budget k, so
    k' shrinks like 1/log2 d. Only the support is simulated, so huge d costs nothing.
    ``rescale = false`` (negative control) makes the random subset a biased estimator.
    """
    n, d, s, k = _scaled(params)
    theta = _profile(d, s, params["alpha"], params["support"])
    err = mean_estimation_mse(theta, n, k, d=d, replicates=params["draws"], rng=rng, schemes=("rtop_k",),
                              rescale=params["rescale"])
    return [dict(metric="mse", value=float(err["rtop_k"].mean()))]
