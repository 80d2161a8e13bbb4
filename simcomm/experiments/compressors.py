"""Experiments on any registered compressor and on low-precision collectives (issue 27).

* ``compressor_error``: one vector per replicate from a gradient model, compressed ``draws`` times:
  the error ``E||C(v) - v||^2`` with the statistics of ``v`` the closed forms need, and the bias along
  ``v`` and a fixed sign vector. The compressor is named by its label, e.g. ``"scaled_sign(norm=l2)"``,
  so every registered compressor and setting is reachable without a parameter per setting.
* ``fp16_allreduce``: ``n`` float16 gradients of scale ``s`` averaged in float16, summed first (the
  overflow bug) or divided by ``n`` first (which flushes small gradients to zero).
* ``feedback_scaling_rate``: the worst per-step rate of EF, EF21 or compressed GD (the library's
  :class:`~simcomm.compress.ErrorFeedback`, :class:`~simcomm.compress.EF21` around
  :class:`~simcomm.compress.Scaling`) on the 1-D quadratics of curvature mu and L, over a grid of fixed
  scalings ``C(v) = c v`` with ``|1 - c| <= sqrt(1 - delta)``; optionally with the memory reset every ``R``
  steps (the bucket-rebuild / checkpoint bug).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.compress import EF21, ErrorFeedback, Scaling, compressor_from_label
from simcomm.experiments._registry import Param, experiment
from simcomm.models import sparse_heavy_tailed

VECTORS = ("gaussian", "sparse_skewed", "one_sparse", "pareto")


def _vector(kind: str, d: int, rng) -> np.ndarray:
    """One unit-norm test vector of the model ``kind``.

    Gaussian, the sparse skewed model (1% non-zeros, Pareto(1) magnitudes), a 1-sparse vector, or dense
    i.i.d. Pareto(1.5) magnitudes with random signs. Unit norm, so replicates differ in the vector's
    shape only (the claims are scale-free).
    """
    if kind == "gaussian":
        v = rng.standard_normal(d)
    elif kind == "sparse_skewed":
        v = sparse_heavy_tailed(d, max(1, d // 100), alpha=1.0, rng=rng)
    elif kind == "one_sparse":
        v = sparse_heavy_tailed(d, 1, alpha=1.0, rng=rng)
    else:
        v = sparse_heavy_tailed(d, d, alpha=1.5, rng=rng)
    return v / np.linalg.norm(v)


def _check_label(params):
    try:
        compressor_from_label(params["compressor"])
    except UserError as exc:
        raise ValueError(str(exc)) from None
    if params.get("coin_rounding") and params["compressor"] != "natural":
        raise ValueError(f"coin_rounding is a control of natural compression, got compressor={params['compressor']!r}")


def _coin_natural(V: np.ndarray, rng) -> np.ndarray:
    """Natural compression's rounding with a fair coin: ``|v_i|`` in ``[2^e, 2^{e+1})`` goes up w.p. 1/2.

    The negative control of ``compress.natural_variance``: the up-probability ignores where ``|v_i|``
    lies between the two powers (the right one is ``|v_i|/2^e - 1``), so the rounding is biased and its
    error reaches ``v_i^2/2`` next to a power of two instead of at most ``v_i^2/8``.
    """
    a = np.abs(V)
    _, ex = np.frexp(a)  # a = m 2^ex, m in [1/2, 1)
    low = np.ldexp(1.0, ex - 1)
    up = rng.random(V.shape) < 0.5
    return np.where(a > 0, np.copysign(np.where(up, 2.0 * low, low), V), 0.0)


@experiment(
    "compressor_error",
    columns=("direction",),
    params={
        "compressor": Param("str", doc="a registered compressor's label: name or name(key=value, ...)"),
        "vector": Param("str", default="gaussian", choices=VECTORS, doc="model of the vector v"),
        "d": Param("int", default=1000, low=1, doc="dimension"),
        "draws": Param("int", default=1, low=1, doc="compressions of v per replicate (1 for deterministic ones)"),
        "coin_rounding": Param("bool", default=False, keyed_at_default=False,
                               doc="negative control only: natural compression rounds up with probability 1/2 "
                                   "wherever |v_i| lies between the two powers of two (biased); false = the "
                                   "registered compressor"),
    },
    check=_check_label,
    cost=lambda p: (2e-8 * p["d"] * p["draws"] + 1e-3, 24 * p["d"] * min(p["draws"], 2000)),
)
def compressor_error(params, rng, backend):
    """Mean ``||C(v) - v||^2`` over ``draws`` compressions of one unit-norm ``v`` drawn from the model.

    Metrics: ``error`` with columns ``norm2`` (``||v||^2``), ``norm1`` (``||v||_1``); ``error_over_norm2``;
    ``bias`` = ``<mean C(v) - v, w>/(||v|| ||w||)`` for ``direction`` w = v and a fixed random sign vector.
    ``coin_rounding`` (negative control) replaces natural compression by :func:`_coin_natural`.
    """
    c = compressor_from_label(params["compressor"])
    d, M = params["d"], params["draws"]
    v_rng, c_rng = rng.spawn(2)
    v = _vector(params["vector"], d, v_rng)
    w = np.where(np.random.default_rng(12345).random(d) < 0.5, -1.0, 1.0)
    chunk = max(1, min(M, 2_000_000 // d))
    qsum, err2 = np.zeros(d), 0.0
    for lo in range(0, M, chunk):
        m = min(chunk, M - lo)
        V = np.broadcast_to(v, (m, d)).copy()
        Q = _coin_natural(V, c_rng) if params["coin_rounding"] else np.asarray(c.apply(V, rng=c_rng), dtype=np.float64)
        qsum += Q.sum(axis=0)
        err2 += float(((Q - v) ** 2).sum())
    mean = qsum / M
    n2, n1 = float(v @ v), float(np.abs(v).sum())
    emp = err2 / M
    return [
        dict(metric="error", value=emp, norm2=n2, norm1=n1),
        dict(metric="error_over_norm2", value=emp / n2),
        dict(metric="bias", value=float((mean - v) @ v) / n2, direction="v"),
        dict(metric="bias", value=float((mean - v) @ w) / (math.sqrt(n2) * math.sqrt(d)), direction="sign"),
    ]



@experiment(
    "fp16_allreduce",
    params={
        "n": Param("int", default=16, low=1, doc="nodes whose float16 gradients are averaged"),
        "s": Param("float", default=1000.0, low=0.0, low_open=True, high=65504.0,
                   doc="scale of each node's gradient (its largest coordinate; rounded to float16)"),
        "order": Param("str", default="sum_first", choices=("sum_first", "divide_first"),
                       doc="sum the n gradients then divide by n (allreduce of sums), or divide each first"),
        "d": Param("int", default=1000, low=1, doc="coordinates per gradient"),
    },
    deterministic=True,
)
def fp16_allreduce(params, rng, backend):
    """Average ``n`` float16 gradients in float16 arithmetic; ``overflowed`` = 1 if the result has inf.

    Node ``i``'s gradient is ``s (1 - j/(2d))`` at coordinate ``j`` (largest coordinate ``s``, the same
    on every node: the worst case of aligned gradients), in float16. The sum runs node by node with every
    partial sum rounded to float16 (a ring reduce), then is divided by ``n``; ``divide_first`` divides each
    gradient by ``n`` first.
    """
    n, d = params["n"], params["d"]
    s = np.float16(params["s"])
    g = (float(s) * (1.0 - np.arange(d) / (2.0 * d))).astype(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        acc = np.zeros(d, dtype=np.float16)
        part = g if params["order"] == "sum_first" else g / np.float16(n)
        for _ in range(n):
            acc = (acc + part).astype(np.float16)
        avg = acc / np.float16(n) if params["order"] == "sum_first" else acc
    # underflowed: every coordinate of the average is 0 although the gradients are not (divided values flushed)
    return [dict(metric="overflowed", value=float(not np.isfinite(avg).all())),
            dict(metric="underflowed", value=float(bool(np.all(avg == 0)) and bool(np.any(g != 0)))),
            dict(metric="avg_max", value=float(np.max(avg)))]


#: the step-size rules the spec may name: the steps Thomsen, Taylor & Dieuleveut (2025) state as optimal
#: (issue 27's statement; the formulas are theory.compress:ef_optimal_step / cgd_optimal_step, repeated
#: here because an experiment takes its step as an input and simcomm never imports theory)
STEP_RULES = ("ef_optimal", "cgd_optimal", "value")


def _step(params) -> float:
    mu, L, delta = params["mu"], params["L"], params["delta"]
    e = math.sqrt(1.0 - delta)
    if params["step"] == "ef_optimal":
        return 2.0 / (L + mu) * delta / (1.0 + e) ** 2
    if params["step"] == "cgd_optimal":
        return 2.0 / ((1.0 + e) * (L + mu))
    return params["lr"]


def _check_rate(p):
    if not p["mu"] <= p["L"]:
        raise ValueError(f"mu = {p['mu']} exceeds L = {p['L']}; use mu <= L")
    if p["step"] == "value" and not p["lr"] > 0:
        raise ValueError("step = 'value' needs lr > 0")


@experiment(
    "feedback_scaling_rate",
    params={
        "method": Param("str", default="ef", choices=("ef", "ef21", "cgd"),
                        doc="error feedback (ef), EF21 (ef21) or compressed GD without feedback (cgd)"),
        "step": Param("str", default="ef_optimal", choices=STEP_RULES,
                      doc="the step: EF's or CGD's stated optimal step from (L, mu, delta), or lr itself"),
        "lr": Param("float", default=0.0, low=0.0, doc="the step when step = 'value'"),
        "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="smallest curvature"),
        "L": Param("float", default=1.0, low=0.0, low_open=True, doc="largest curvature"),
        "delta": Param("float", default=0.5, low=0.0, high=1.0, low_open=True,
                       doc="contraction parameter: scalings c with |1 - c| <= sqrt(1 - delta)"),
        "n_scalings": Param("int", default=41, low=2, doc="scalings c on an even grid of [1 - eps, 1 + eps]"),
        "reset_every": Param("int", default=0, low=0, doc="reset the memory every this many steps (0: never)"),
        "ignore_reset": Param("bool", default=False, keyed_at_default=False,
                              doc="negative control only: keep the memory when a reset is asked for"),
        "steps": Param("int", default=120, low=2, doc="steps of the transfer map whose spectral radius is measured"),
    },
    check=_check_rate,
    deterministic=True,
    cost=lambda p: (2e-5 * p["n_scalings"] * p["steps"], 1e4),
)
def feedback_scaling_rate(params, rng, backend):
    """The worst measured per-step rate over the scalings and the two curvatures; one row per scaling too.

    The runs are linear in the state (iterate, memory), so the rate is measured exactly as the spectral
    radius of the ``T``-step transfer matrix, to the power ``1/T``: the state is advanced from the two unit
    states ``(x, m) = (1, 0)`` and ``(0, 1)`` by the library's own (init, apply) pairs, and the two end
    states form the matrix (no fit of a noisy curve). ``T`` is ``steps`` rounded up to a multiple of the
    reset period. Metrics: ``rate`` (the worst), ``rate_c`` per scaling (column ``c``, worst of the two
    curvatures); for ``method = "cgd"`` also ``rate_gap``: its worst rate minus EF's at EF's stated step
    (the same scalings, reset period and steps).
    """
    if params["method"] == "cgd":
        ef = _worst_rate(dict(params, method="ef", step="ef_optimal"))[0]
        worst, lr, rows = _worst_rate(params)
        return [dict(metric="rate", value=worst, step_size=lr), dict(metric="rate_gap", value=worst - ef), *rows]
    worst, lr, rows = _worst_rate(params)
    return [dict(metric="rate", value=worst, step_size=lr), *rows]


def _worst_rate(params):
    """``(worst rate, step, rows)`` of :func:`feedback_scaling_rate`."""
    method, R = params["method"], params["reset_every"]
    lr, e = _step(params), math.sqrt(1.0 - params["delta"])
    T = params["steps"] if R == 0 else R * -(-params["steps"] // R)
    lam = np.array([params["mu"], params["L"]])
    rows, worst = [], 0.0
    for c in 1.0 - e + 2.0 * e * np.arange(params["n_scalings"]) / (params["n_scalings"] - 1):
        comp = Scaling(float(c))
        # rows: (curvature, unit start) pairs, each a 1-D problem: [mu from x, mu from m, L from x, L from m]
        x = np.array([[1.0], [0.0], [1.0], [0.0]])
        lam_r = np.repeat(lam, 2)[:, None]
        if method == "cgd":
            for _ in range(T):
                x = x - lr * comp.apply(lam_r * x)
            rate = np.abs(x[[0, 2], 0]) ** (1.0 / T)
        else:
            fb = ErrorFeedback(comp) if method == "ef" else EF21(comp)
            state = fb.init((4, 1))
            state = state._replace(**{state._fields[0]: np.array([[0.0], [1.0], [0.0], [1.0]])})
            for t in range(T):
                out, state = fb.apply(lam_r * x, state, rng=None)
                x = x - lr * out  # EF: the message; EF21: the estimate h'
                if R and (t + 1) % R == 0 and not params["ignore_reset"]:
                    state = fb.init((4, 1))  # the memory is lost (bucket rebuild, checkpoint reload)
            mem = getattr(state, state._fields[0])
            rate = []
            for k in (0, 2):  # the T-step transfer matrix of (x, m) at this curvature
                if R and not params["ignore_reset"]:  # after a reset only x carries on: x -> (M^R)_11 x
                    rate.append(abs(x[k, 0]) ** (1.0 / T))
                    continue
                M = np.array([[x[k, 0], x[k + 1, 0]], [mem[k, 0], mem[k + 1, 0]]])
                rate.append(float(np.max(np.abs(np.linalg.eigvals(M)))) ** (1.0 / T))
            rate = np.array(rate)
        worst = max(worst, float(rate.max()))
        rows.append(dict(metric="rate_c", value=float(rate.max()), c=float(c)))
    return worst, lr, rows
