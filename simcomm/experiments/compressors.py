"""Experiments on any registered compressor and on low-precision collectives (issue 27).

* ``compressor_error``: one vector per replicate from a gradient model, compressed ``draws`` times:
  the error ``E||C(v) - v||^2`` with the statistics of ``v`` the closed forms need, and the bias along
  ``v`` and a fixed sign vector. The compressor is named by its label, e.g. ``"scaled_sign(norm=l2)"``,
  so every registered compressor and setting is reachable without a parameter per setting.
* ``fp16_allreduce``: ``n`` float16 gradients of scale ``s`` averaged in float16, summed first (the
  overflow bug) or divided by ``n`` first.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.compress import compressor_from_label
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


@experiment(
    "compressor_error",
    columns=("direction",),
    params={
        "compressor": Param("str", doc="a registered compressor's label: name or name(key=value, ...)"),
        "vector": Param("str", default="gaussian", choices=VECTORS, doc="model of the vector v"),
        "d": Param("int", default=1000, low=1, doc="dimension"),
        "draws": Param("int", default=1, low=1, doc="compressions of v per replicate (1 for deterministic ones)"),
    },
    check=_check_label,
    cost=lambda p: (2e-8 * p["d"] * p["draws"] + 1e-3, 24 * p["d"] * min(p["draws"], 2000)),
)
def compressor_error(params, rng, backend):
    """Mean ``||C(v) - v||^2`` over ``draws`` compressions of one unit-norm ``v`` drawn from the model.

    Metrics: ``error`` with columns ``norm2`` (``||v||^2``), ``norm1`` (``||v||_1``); ``error_over_norm2``;
    ``bias`` = ``<mean C(v) - v, w>/(||v|| ||w||)`` for ``direction`` w = v and a fixed random sign vector.
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
        Q = np.asarray(c.apply(np.broadcast_to(v, (m, d)).copy(), rng=c_rng, backend=backend), dtype=np.float64)
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
    return [dict(metric="overflowed", value=float(not np.isfinite(avg).all())),
            dict(metric="avg_max", value=float(np.max(avg)))]
