r"""Error against bits for every registered compressor (issue 31): one axis for sparsifiers and quantizers.

* ``compressor_tradeoff``: one compressor family per cell (a label without its compression setting,
  e.g. ``"top_k"``, ``"rand_k(scale=false)"``, ``"rtop_k(r_over_k=4)"``, ``"qsgd"``, ``"sign"``), swept
  inside the cell over its setting: ``k`` for the k-sparsifiers (and ``p = k/d`` for Bernoulli), ``s``
  for QSGD, the step for stochastic rounding; a compressor without a setting is one point. Each point
  is a row ``rel_error`` (mean of :math:`\|C(v)-v\|^2/\|v\|^2` over ``draws`` unit-norm vectors of the
  model, each compressed once) with ``bits_per_coord`` (the compressor's own ``bits(d)/d``).

rTop-k's top set is given as ``r_over_k`` (``r = r_over_k * k``, capped at ``d``: the ratio the
paper's figures use) or as an absolute ``r`` (then ladder points with ``k > r`` are skipped).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm._params import top_level_split
from simcomm.compress import COMPRESSORS, StochasticRound, compressor_from_label
from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.compressors import _vector

#: the setting each family is swept over inside a cell (families absent here have no setting)
_LADDER = {"top_k": "k", "rand_k": "k", "rtop_k": "k", "rand_k_replace": "k", "bernoulli": "p", "qsgd": "s",
           "natural_dithering": "s", "stochastic_round": "delta", "top_k_quant": "k", "dct_top_k": "k"}
_PLACEHOLDER = {"k": 1, "r": 1, "p": 0.5, "s": 1, "delta": 1.0}


def _parse(label: str) -> tuple[str, dict, float | None, int | None]:
    """``(name, fixed settings, r_over_k, r)`` of a family label; the swept setting must be left out."""
    name, _, rest = label.partition("(")
    name = name.strip()
    if name not in COMPRESSORS:
        from simcomm._errors import closest

        raise UserError(f"compressor '{name}' is not registered{closest(name, COMPRESSORS)}; "
                        f"use one of {', '.join(COMPRESSORS)}")
    fixed, r_over_k, r = {}, None, None
    body = rest.rstrip().removesuffix(")") if rest else ""
    for part in filter(None, (p.strip() for p in top_level_split(body))):  # compose's settings are labels
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise UserError(f"compressor '{label}': '{part}' is not key=value")
        if key == "r_over_k":
            r_over_k = float(value)
            if not (math.isfinite(r_over_k) and r_over_k >= 1):
                raise UserError(f"compressor '{label}': r_over_k = {value} is not allowed; use r/k >= 1")
        elif key == "r" and name == "rtop_k":
            r = int(value)
        elif key == _LADDER.get(name):
            raise UserError(f"compressor '{label}': {key} is swept by the experiment; leave it out of the label")
        else:
            fixed[key] = value
    if name == "rtop_k" and (r_over_k is None) == (r is None):
        raise UserError(f"compressor '{label}': give rTop-k's top set as r_over_k=... or r=... (one of them)")
    if name != "rtop_k" and (r_over_k is not None or r is not None):
        raise UserError(f"compressor '{label}': r_over_k and r are rtop_k settings")
    # the fixed settings are checked by building the compressor with placeholders for the swept ones
    missing = [s.name for s in COMPRESSORS[name].settings() if s.required and s.name not in fixed]
    unswept = [m for m in missing if m not in _PLACEHOLDER]
    if unswept:
        raise UserError(f"compressor '{label}' needs {', '.join(unswept)}: give it in the label, "
                        f"e.g. {name}({unswept[0]}=...)")
    text = ", ".join([*(f"{k}={v}" for k, v in fixed.items()), *(f"{m}={_PLACEHOLDER[m]}" for m in missing)])
    compressor_from_label(f"{name}({text})" if text else name)
    return name, fixed, r_over_k, r


def _check(p):
    try:
        _parse(p["compressor"])
    except UserError as exc:
        raise ValueError(str(exc)) from None


def _ladder(name: str, d: int, points: int, r_over_k, r) -> list[dict]:
    """The swept settings of one family: geometric, from coarse to fine."""
    setting = _LADDER.get(name)
    if setting is None:
        return [{}]
    if setting == "s":
        return [{"s": 2**j} for j in range(points)]
    if setting == "delta":  # step relative to the vector's max |v| (so the message's span is 2 / delta levels)
        return [{"delta": 2.0 ** -j} for j in range(points)]
    ks = sorted({max(1, round(d * 2.0 ** -(j + 1))) for j in range(points)})
    if setting == "p":
        return [{"p": k / d} for k in ks]
    out = []
    for k in ks:
        if name == "rtop_k":
            rr = min(d, max(k, round(r_over_k * k))) if r_over_k is not None else r
            if rr < k or rr > d:
                continue
            out.append({"k": k, "r": rr})
        else:
            out.append({"k": k})
    return out


def _cost(p):
    """(seconds, bytes) of one replicate: ``points`` compressions of a (draws, d) block (~3e-8 s per entry)."""
    entries = float(p["draws"]) * float(p["d"])
    return 3e-8 * entries * p["points"] + 1e-3, 6 * 8 * entries


@experiment(
    "compressor_tradeoff",
    params={
        "compressor": Param("str", doc="a registered compressor's label without its swept setting (k, p, s, delta); "
                                       "rtop_k takes r_over_k=... or r=..."),
        "vector": Param("str", default="gaussian", choices=("gaussian", "sparse_skewed", "pareto"),
                        doc="model of v (sparse_skewed: 1% non-zeros with Pareto(1) magnitudes)"),
        "d": Param("int", default=4096, low=2, doc="dimension"),
        "draws": Param("int", default=20, low=1, doc="vectors per replicate, each compressed once"),
        "points": Param("int", default=8, low=1, high=20,
                        doc="settings on the ladder: k = d/2 ... d/2^points, s = 1 ... 2^(points-1), "
                            "delta = 1 ... 2^(1-points) max|v|"),
    },
    check=_check,
    cost=_cost,
)
def compressor_tradeoff(params, rng, backend):
    r"""Relative squared error against bits per coordinate along a compressor's setting ladder.

    Rows ``rel_error`` (mean over ``draws`` vectors of :math:`\|C(v)-v\|^2` for unit-norm ``v``)
    with the columns ``setting`` (the built compressor's label), ``bits_per_coord``
    (``bits(d) / d``, the compressor's own message cost; stochastic rounding at a step relative to the
    vector's largest entry, so its span is known) and the swept value (``k``, ``r``, ``s``, ``p``,
    ``delta``; absent where it does not apply).
    """
    name, fixed, r_over_k, r = _parse(params["compressor"])
    d, M = params["d"], params["draws"]
    v_rng, c_rng = rng.spawn(2)
    V = np.stack([_vector(params["vector"], d, g) for g in v_rng.spawn(M)])  # (M, d), unit rows
    base = compressor_from_label(name + ("(" + ", ".join(f"{k}={v}" for k, v in fixed.items()) + ")" if fixed
                                         else "")) if not [s for s in COMPRESSORS[name].settings() if s.required] \
        else None
    rows = []
    for point in _ladder(name, d, params["points"], r_over_k, r):
        if name == "stochastic_round":
            m = np.abs(V).max(axis=1, keepdims=True)
            c = StochasticRound(point["delta"])
            Q = np.asarray(c.apply(V / m, rng=c_rng), dtype=np.float64) * m
            bits = c.bits(d, span=2.0)
        else:
            if base is not None:
                c = base
            else:
                text = ", ".join([*(f"{k}={v}" for k, v in fixed.items()), *(f"{k}={v}" for k, v in point.items())])
                c = compressor_from_label(f"{name}({text})")
            Q = np.asarray(c.apply(V.copy(), rng=c_rng), dtype=np.float64)
            bits = c.bits(d)
        err = ((Q - V) ** 2).sum(axis=1)  # ||v|| = 1
        label = c.label if name != "stochastic_round" else f"stochastic_round(delta={point['delta']:g} max|v|)"
        rows.append(dict(metric="rel_error", value=float(err.mean()), setting=label,
                         bits_per_coord=float(bits) / d, **{k: float(v) for k, v in point.items()},
                         **({"r_over_k": float(r_over_k)} if r_over_k is not None else {})))
    return rows

