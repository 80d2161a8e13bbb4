r"""URQ-compressed gradient descent on a non-convex problem on real data (papers/urq_delay.md; theory/urq.py).

The problem is logistic regression with the non-convex regulariser :math:`\lambda\sum_j x_j^2/(1+x_j^2)`
on a packaged scikit-learn data set (standardised features plus an intercept, as
``simcomm.models.logistic``):

.. math:: f(x) = \frac1m\sum_{i=1}^m \log(1 + e^{-y_i a_i^\top x}) + \lambda\sum_j \frac{x_j^2}{1+x_j^2}.

:math:`\phi(t) = t^2/(1+t^2)` has :math:`-1/2 \le \phi''(t) \le 2` (minimum at :math:`|t| = 1`), so
:math:`\nabla f` is ``L``-Lipschitz with :math:`L = \lambda_{\max}(A^\top A/m)/4 + 2\lambda`, and
:math:`f` is NOT convex: along a unit eigenvector :math:`v` of :math:`A^\top A/m` with eigenvalue
:math:`\lambda_{\min}`, at a point with every :math:`|x_j| = 1`, the Hessian's quadratic form is at most
:math:`\lambda_{\min}/4 - \lambda/2 < 0` whenever :math:`\lambda > \lambda_{\min}/2` (breast cancer:
:math:`\lambda_{\min} \approx 1.3\cdot 10^{-4}`; :func:`hessian_min_eig` measures it). This is the
non-convex regularised logistic regression of the non-convex variance-reduction literature; the
penalty saturates, so weights grow into the concave region :math:`|x_j| > 1/\sqrt3` when the data favour it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm.compress import Compressor
from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.urq import _Q, _quantizer
from simcomm.experiments.urq_logistic import _check_compressors, _compressor_settings
from simcomm.models import Problem, binary_features, log1p_exp, sigmoid
from simcomm.optim import compressed_gd

__all__ = ["nonconvex_logistic", "hessian_min_eig", "FixedScaleSign"]


@functools.lru_cache(maxsize=8)
def nonconvex_logistic(dataset: str = "breast_cancer", lam: float = 0.1, n: int = 1) -> Problem:
    r"""Logistic regression plus :math:`\lambda\sum_j x_j^2/(1+x_j^2)` on a packaged data set, over ``n`` workers.

    With ``n > 1`` the rows, sorted by label, are cut into ``n`` contiguous shards (non-iid, as
    ``simcomm.models.logistic`` with ``heterogeneous``): worker ``i`` holds :math:`f_i`, the loss on its
    shard plus the regulariser, and :math:`f = \frac1n\sum_i f_i`. ``L`` is the largest of the shards'
    :math:`\lambda_{\max}(A_i^\top A_i/m_i)/4 + 2\lambda` (the whole set's for ``n = 1``), ``mu = 0``,
    ``x0 = 0``. The minimum is not known: ``f_star = 0`` is a lower bound (both terms are non-negative)
    and ``x_star = x0`` a reference point only (used by the divergence watch, never judged).

    Examples
    --------
    >>> p = nonconvex_logistic("breast_cancer", 0.1)
    >>> p.d, round(p.L, 4)
    (31, 3.5204)
    """
    A, y = binary_features(dataset)
    m, d = A.shape
    shards = np.array_split(np.arange(m), n)
    Ays = [A[s] * y[s, None] for s in shards]  # rows y_j a_j of each shard
    L = float(max(np.linalg.eigvalsh(A[s].T @ A[s] / len(s))[-1] for s in shards) / 4 + 2 * lam)

    def reg_grad(X):
        return lam * 2 * X / (1 + X * X) ** 2

    def grad(X, idx):
        X = np.atleast_2d(X)
        G = reg_grad(X)
        for i in np.unique(idx):
            rows = idx == i
            G[rows] += (-sigmoid(-(X[rows] @ Ays[i].T)) / len(Ays[i])) @ Ays[i]
        return G

    def full_grad(X):
        X = np.atleast_2d(X)
        return sum((-sigmoid(-(X @ Ay.T)) / len(Ay)) @ Ay for Ay in Ays) / n + reg_grad(X)

    def value(X):
        X = np.atleast_2d(X)
        loss = sum(log1p_exp(-(X @ Ay.T)).mean(axis=1) for Ay in Ays) / n
        return loss + lam * (X * X / (1 + X * X)).sum(axis=1)

    x0 = np.zeros(d)
    return Problem(f"nonconvex_logistic_{dataset}", n, d, L, 0.0, x0, 0.0, 0.0, x0, grad, value, full_grad)


def hessian_min_eig(dataset: str, lam: float, x: np.ndarray) -> float:
    r"""Smallest eigenvalue of :math:`\nabla^2 f(x)` (negative: :math:`f` is not convex there).

    Examples
    --------
    >>> hessian_min_eig("breast_cancer", 0.1, np.ones(31)) < 0
    True
    """
    A, y = binary_features(dataset)
    m = A.shape[0]
    z = y * (A @ x)
    w = sigmoid(z) * sigmoid(-z) / m
    H = (A * w[:, None]).T @ A + lam * np.diag((2 - 6 * x * x) / (1 + x * x) ** 3)
    return float(np.linalg.eigvalsh(H)[0])


@dataclass(frozen=True)
class FixedScaleSign(Compressor):
    r"""1-bit stochastic sign quantization with a FIXED scale ``c``: :math:`Q(v)_i = \pm c` (a negative control).

    :math:`P(Q(v)_i = c) = (1 + v_i/c)/2`, unbiased for :math:`|v_i| \le c` (clipped beyond), with
    :math:`\mathbb E\|Q(v) - v\|^2 = d c^2 - \|v\|^2`: the variance does not vanish with ``v``. With the
    scale taken per vector (:math:`c = \|v\|_\infty`) it would be a URQ; frozen at a first vector's it has
    a variance floor :math:`d c^2`.

    Examples
    --------
    >>> q = FixedScaleSign(0.5)
    >>> sorted(set(np.abs(q.apply(np.array([0.0, 0.1, -0.3]), rng=0)).tolist()))
    [0.5]
    """

    c: float = 1.0
    unbiased: ClassVar[bool] = True

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        x = np.asarray(x, dtype=np.float64)
        up = np.random.default_rng(rng).random(x.shape) < np.clip((1.0 + x / self.c) / 2.0, 0.0, 1.0)
        return np.where(up, self.c, -self.c)

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 + d


@experiment(
    "urq_nonconvex_logistic",
    columns=("quantizer",),
    params={"dataset": Param("str", default="breast_cancer", choices=("breast_cancer", "digits"),
                             doc="packaged scikit-learn data set (digits: even vs odd)"),
            "lam": Param("float", default=0.1, low=0.0, low_open=True,
                         doc="weight of the non-convex regulariser sum_j x_j^2/(1 + x_j^2)"),
            "K": Param("int", default=1000, low=1, doc="iterations"),
            "compressors": Param("str", default="none,qsgd:s=1,qsgd:s=4,ternary,rand_k:k=8",
                                 doc="comma-separated unbiased compressors run in one cell, each 'name' or "
                                     "'name:s=..' / 'name:k=..'"),
            "scale": Param("str", default="norm", choices=("norm", "frozen_sign"),
                           doc="negative control only: frozen_sign replaces every compressor by 1-bit stochastic "
                               "sign quantization whose scale is ||grad f(x0)||_inf, fixed at the first gradient "
                               "instead of taken per vector (FixedScaleSign): its variance does not vanish with "
                               "the gradient; the step stays the entry's 1/(alpha L)")},
    check=_check_compressors,
)
def urq_nonconvex_logistic(params, rng, backend):
    r"""Running average of :math:`\|\nabla f(x_k)\|^2` of URQ-compressed GD on non-convex logistic regression.

    Single-stream compressed GD, :math:`x_{k+1} = x_k - \gamma Q(\nabla f(x_k))`, on
    :func:`nonconvex_logistic`, at the D1 step :math:`\gamma = 1/(\alpha L)`, :math:`\alpha = 1 + \beta`
    the compressor's worst-case factor (``Compressor.alpha(d)``), for ``K`` steps from ``x0 = 0``. Every
    compressor of ``compressors`` runs in this one cell from the same random stream.

    Rows ``avg_grad_norm2`` per compressor (``quantizer`` = its entry):
    :math:`\frac1K\sum_{k<K}\|\nabla f(x_k)\|^2`, with columns ``alpha``, ``beta`` and ``bound_d1``, the D1
    bound :math:`2\alpha L f(x_0)/K` (``f_star = 0`` is a lower bound, so this is a valid upper bound).
    ``scale = "frozen_sign"`` (negative control) runs :class:`FixedScaleSign` with
    :math:`c = \|\nabla f(x_0)\|_\infty` in place of each compressor, at that compressor's step.
    """
    p = nonconvex_logistic(params["dataset"], params["lam"])
    K = params["K"]
    f0 = float(p.value(p.x0)[0])
    c0 = float(np.abs(p.full_grad(p.x0)[0]).max())
    stream = int(rng.integers(2**63))
    rows = []
    for entry in (e.strip() for e in params["compressors"].split(",") if e.strip()):
        name, kw = _compressor_settings(entry)
        q = _quantizer({**{k: v.default for k, v in _Q.items()}, **kw, "quantizer": name})
        a, b = float(q.alpha(p.d)), float(q.beta(p.d))
        if params["scale"] == "frozen_sign":
            q = FixedScaleSign(c0)
        tr = compressed_gd(p, q, lr=1.0 / (a * p.L), steps=K, mode="aggregate",
                           record_every=K, track_grad=True, rng=np.random.default_rng(stream), backend=backend)
        rows.append(dict(metric="avg_grad_norm2", value=float(tr.grad2_mean[0]), quantizer=entry, alpha=a, beta=b,
                         bound_d1=2.0 * a * p.L * f0 / K, note=tr.notes()[0]))
    return rows


_LEVELS = "1,2,4,8,16,32,64,128,256"


def _check_levels(params):
    try:
        levels = [int(t) for t in params["levels"].split(",")]
    except ValueError:
        raise ValueError(f"levels must be comma-separated integers, got {params['levels']!r}") from None
    if len(levels) < 3 or levels != sorted(set(levels)) or levels[0] < 1:
        raise ValueError(f"levels must list >= 3 increasing QSGD levels s >= 1, got {params['levels']!r}")


@experiment(
    "urq_bits_precision",
    params={"problem": Param("str", default="logistic_breast_cancer",
                             choices=("logistic_breast_cancer", "logistic_digits", "ridge"),
                             doc="strongly convex problem (ridge: d = 50, L = 1, mu = 0.1, drawn from the stream)"),
            "l2": Param("float", default=0.1, low=0.0, low_open=True, doc="ridge weight of the logistic problems"),
            "eps": Param("float", default=1e-4, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) <= eps (f(x0) - f*)"),
            "levels": Param("str", default=_LEVELS, doc="QSGD levels s swept, comma-separated, increasing"),
            "predictor": Param("str", default="alpha_bits", choices=("alpha_bits", "bits_only"),
                               doc="negative control only: bits_only predicts the optimum from the bits per "
                                   "message alone (beta ignored: the iterations taken as independent of s)"),
            "count": Param("str", default="code", choices=("code", "dense"),
                           doc="negative control only: dense counts every message as 32 d bits (float32 values), "
                               "ignoring the compressor's code"),
            "family": Param("str", default="qsgd", choices=("qsgd", "all"), keyed_at_default=False,
                            doc="qsgd: the QSGD levels only; all: also ternary, natural, minmax_uint8, fp16 and "
                                "scaled sign with error feedback, with the rows family_pred_over_best and "
                                "sign_ef_over_best (the default qsgd changes nothing: the cell as it was)"),
            "sign_feedback": Param("str", default="ef", choices=("ef", "none"), keyed_at_default=False,
                                   doc="negative control only: none runs scaled sign without error feedback")},
    check=_check_levels,
)
def urq_bits_precision(params, rng, backend):
    r"""Total bits to eps of QSGD-compressed GD against its precision ``s``: where the optimum lies.

    Single-stream compressed GD at :math:`1/(\alpha_s L)` with QSGD at every level ``s`` of ``levels``
    (``Compressor.alpha(d)``, ``bits(d)``: 32 bits of norm plus a fixed-width level code a coordinate),
    and exact GD (``none``, 32 d bits a message), all from the same random stream. Bits to eps =
    iterations to :math:`f - f^\star \le \varepsilon(f(x_0) - f^\star)` times bits per message.

    The D1 prediction [N] (iterations :math:`\propto \alpha_s`, :func:`theory.urq.iterations_beta`) puts the
    optimum at :math:`s^\ast = \arg\min_s \alpha_s b_s`; ``predictor = "bits_only"`` (negative control) at
    :math:`\arg\min_s b_s` (beta ignored). Rows: ``pred_over_best`` = measured bits at :math:`s^\ast` over the
    measured minimum over ``levels`` (1 when the prediction finds the optimum), and ``none_over_best`` =
    exact GD's bits over that minimum; columns ``s_pred``, ``s_best`` and ``interior`` (the measured optimum is
    neither end of ``levels``). A run that misses eps within ``HORIZON`` x the prediction counts as ``inf``.

    ``family = "all"`` adds, after the rows above and from the same stream, the compressors of :data:`FAMILY`:
    ternary, natural compression and stochastic ``minmax_uint8`` (URQs, at :math:`1/(\alpha L)`), fp16
    (deterministic rounding, relative error at most :math:`2^{-11}` a coordinate in its normal range:
    :math:`\alpha = 1 + 2^{-22}`), and scaled sign with error feedback (``ef``, at :math:`1/L`; biased, its
    worst-case contraction :math:`\delta = 1/d` read as :math:`\alpha = d`, which sets its horizon). Rows
    ``family_pred_over_best``: measured bits at :math:`\arg\min_c \alpha_c b_c` over the quantizer family
    (QSGD levels, ternary, natural, uint8, fp16; ``bits_only``: :math:`\arg\min_c b_c`) over the measured
    minimum over it, columns ``c_pred`` and ``c_best``; ``sign_ef_over_best``: scaled sign with error
    feedback's measured bits over that minimum (``sign_feedback = "none"``, negative control: without
    error feedback), column ``sign_ef_iters_over_K0``.
    """
    from simcomm.experiments.urq_logistic import HORIZON, _gd_iterations, _iterations_to_eps
    from simcomm.models import make_problem

    if params["problem"] == "ridge":
        p = make_problem("ridge", n=1, d=50, L=1.0, mu=0.1, rng=rng)
    else:
        p = make_problem(params["problem"], n=1, heterogeneous=False, l2=params["l2"])
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    K0 = _gd_iterations(p, stop)
    stream = int(rng.integers(2**63))

    def bits_to_eps(q, a=None, feedback=None, lr=None):
        a = float(q.alpha(p.d)) if a is None else a
        H = math.ceil(HORIZON * a * K0)
        tr = compressed_gd(p, q, lr=1.0 / (a * p.L) if lr is None else lr, steps=H,
                           mode="workers" if feedback else "aggregate", feedback=feedback, stop_gap=stop,
                           rng=np.random.default_rng(stream), backend=backend)
        it, _ = _iterations_to_eps(tr, stop, H)
        per = 32 * p.d if params["count"] == "dense" else q.bits(p.d)
        return it * per, a, q.bits(p.d), it

    base = {k: v.default for k, v in _Q.items()}
    levels = [int(t) for t in params["levels"].split(",")]
    runs = {s: bits_to_eps(_quantizer({**base, "s": s, "quantizer": "qsgd"})) for s in levels}
    none = bits_to_eps(_quantizer({**base, "quantizer": "none"}))[0]
    key = (lambda s: runs[s][1] * runs[s][2]) if params["predictor"] == "alpha_bits" else (lambda s: runs[s][2])
    s_pred = min(levels, key=key)
    s_best = min(levels, key=lambda s: runs[s][0])
    best = runs[s_best][0]
    cols = dict(s_pred=s_pred, s_best=s_best, interior=bool(levels[0] < s_best < levels[-1]), K0=float(K0))
    rows = [dict(metric="pred_over_best", value=runs[s_pred][0] / best, **cols),
            dict(metric="none_over_best", value=none / best, **cols)]
    if params["family"] == "all":
        rows += _family_rows(params, p, K0, {f"qsgd:s={s}": r for s, r in runs.items()}, bits_to_eps)
    return rows


#: the compressors ``urq_bits_precision`` adds with ``family = "all"`` besides the QSGD levels
FAMILY = ("ternary", "natural", "minmax_uint8", "fp16")
#: fp16's alpha: rounding to nearest in the normal range, relative error <= 2**-11 a coordinate
FP16_ALPHA = 1.0 + 2.0**-22


def _family_rows(params, p, K0, qsgd_runs, bits_to_eps):
    """Rows ``family_pred_over_best`` and ``sign_ef_over_best`` of :func:`urq_bits_precision` (``family = "all"``)."""
    from simcomm.compress import compressor_from_settings

    runs = dict(qsgd_runs)
    for name in FAMILY:
        runs[name] = bits_to_eps(compressor_from_settings(name, {}), a=FP16_ALPHA if name == "fp16" else None)
    # scaled sign at the plain step 1/L; its horizon is HORIZON x the worst-case prediction d K0 (delta = 1/d)
    fb = None if params["sign_feedback"] == "none" else "ef"
    sign_bits, _, _, sign_it = bits_to_eps(compressor_from_settings("scaled_sign", {}), a=float(p.d), feedback=fb,
                                           lr=1.0 / p.L)
    key = (lambda c: runs[c][1] * runs[c][2]) if params["predictor"] == "alpha_bits" else (lambda c: runs[c][2])
    c_pred = min(runs, key=key)
    c_best = min(runs, key=lambda c: runs[c][0])
    best = runs[c_best][0]
    cols = dict(c_pred=c_pred, c_best=c_best, K0=float(K0))
    return [dict(metric="family_pred_over_best", value=runs[c_pred][0] / best, **cols),
            dict(metric="sign_ef_over_best", value=sign_bits / best, sign_ef_iters_over_K0=sign_it / K0, **cols)]
