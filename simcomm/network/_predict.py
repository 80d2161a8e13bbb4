r"""Does compression pay on my cluster? Per-step time of each compressor and the break-even step inflation.

A synchronous data-parallel step costs the slowest node's compute ``c`` plus the communication:

* uncompressed SGD (and the dense casts ``fp16``, ``bf16``, which still sum) runs a ring allreduce,
  :math:`T_{\rm ar}(b) = 2(n-1)(\alpha + \beta b/n)`;
* every other compressor's messages do not sum, so a ring allgather forwards all ``n`` of them,
  :math:`T_{\rm ag}(b) = (n-1)(\alpha + \beta b)`

(:func:`~simcomm.network.ring_allreduce_time`, :func:`~simcomm.network.allgather_time`, with the NIC
limit of the :class:`~simcomm.network.Network`). Message bytes are the encoded payload: the fixed
header plus the compressor's own ``bits(d)``, float32 values.

If compression needs :math:`\rho` times the steps of SGD to reach the same target, it pays iff
:math:`\rho\,(c + T_C) < c + T_{\rm ar}`, i.e. iff :math:`\rho < \rho^\star = (c + T_{\rm ar})/(c + T_C)`,
the *break-even step inflation* (the per-step speed-up). ``theory.network`` holds the same closed forms
([N]): ``ef_topk_time_ratio`` (the time ratio), ``ef_break_even_step_ratio`` (:math:`\rho^\star`),
``sparse_allgather_crossover_n`` (the node count above which an allgather loses even per step), and
``expected_max_compute`` (the slowest of ``n`` shifted-exponential compute times); tests check that
:func:`predict_step_times` agrees with them.

:func:`simcomm.experiments.network.measure_step_inflation` measures :math:`\rho` on a small stand-in
problem (logistic regression on the digits data, error feedback around each compressor, the same
minibatches for every method); it lives with the experiments because it trains a model.
"""

from __future__ import annotations

import math
import re

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import positive

__all__ = ["DEFAULT_COMPRESSORS", "resolve_compressor", "predict_step_times"]

#: what ``simcomm net predict`` compares when no ``-c`` is given (``%`` of d for k)
DEFAULT_COMPRESSORS = ("top_k(k=1%)", "rand_k(k=1%, scale=false)", "qsgd(s=16)", "ternary", "scaled_sign", "fp16")

_SUMMABLE = ("none", "fp16", "bf16")  # dense messages: reduced in the network by a ring allreduce
_PCT = re.compile(r"=\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*%")


def resolve_compressor(label: str, d: int):
    """Build a registered compressor from its label; ``k=1%`` (any setting ``=X%``) means ``X`` percent of ``d``.

    Parameters
    ----------
    label : str
        ``name`` or ``name(key=value, ...)`` as in :func:`simcomm.compress.compressor_from_label`, e.g.
        ``"top_k(k=1000)"``, ``"top_k(k=0.1%)"``, ``"rtop_k(k=1%, r=4%)"``, ``"qsgd(s=4)"``.
    d : int
        Model size (coordinates); percentages are rounded to an integer >= 1.

    Returns
    -------
    Compressor

    Raises
    ------
    UserError
        Unknown name or setting, a value out of range (one line, with the registered names).

    Examples
    --------
    >>> resolve_compressor("top_k(k=1%)", 1000)
    TopK(k=10)
    """
    from simcomm.compress import compressor_from_label

    text = _PCT.sub(lambda m: "=" + str(max(1, round(float(m.group(1)) / 100.0 * d))), str(label))
    try:
        return compressor_from_label(text)
    except UserError as exc:
        raise UserError(f"compressor '{label}': {exc}") from None


def _harmonic(n: int) -> float:
    r""":math:`H_n = \sum_{i \le n} 1/i`: summed up to 10^4 terms, digamma beyond (no loop over a huge n)."""
    if n <= 10_000:
        return sum(1.0 / i for i in range(1, n + 1))
    from scipy.special import digamma

    return float(digamma(n + 1.0)) + float(np.euler_gamma)


def predict_step_times(d: int, n: int, net, compressors, *, compute: float = 0.0,
                       compute_scale: float = 0.0) -> list[dict]:
    r"""Predicted time per step of uncompressed SGD and of each compressor, with the break-even step inflation.

    Parameters
    ----------
    d : int
        Model parameters (float32 coordinates).
    n : int
        Nodes, ``>= 2``.
    net : Network
        Scalar ``alpha``, ``beta`` (and ``nic_beta``), e.g. ``Network.from_toml`` of a calibrated file.
    compressors : iterable of str or Compressor
        Labels (:func:`resolve_compressor`) or compressor objects.
    compute : float
        Seconds of computation per step on one node (the deterministic part), ``>= 0``.
    compute_scale : float
        Mean of an exponential straggler tail per node and step (s); the step waits for the slowest
        node, :math:`c = \text{compute} + \text{scale}\,H_n`.

    Returns
    -------
    list of dict
        One row per method, SGD (``none``) first: ``compressor`` (label), ``pattern``, ``bytes`` (per
        message and node), ``comm_s``, ``step_s`` (``c`` + ``comm_s``), ``break_even`` (:math:`\rho^\star`:
        compression pays iff it needs fewer than this many times SGD's steps; 1 for SGD),
        ``crossover_n`` (allgather rows: the ``n`` above which the allgather is slower than the dense
        allreduce even per step, ignoring compute; ``inf`` when latency-bound; ``None`` otherwise).

    Examples
    --------
    >>> from simcomm.network import Network
    >>> rows = predict_step_times(10**6, 8, Network(1e-5, 1e-9), ["top_k(k=1%)"], compute=0.01)
    >>> [r["compressor"] for r in rows], round(rows[1]["break_even"], 3)
    (['none', 'top_k(k=10000)'], 1.628)
    """
    from simcomm.compress import Identity
    from simcomm.network._payload import HEADER_BYTES
    from simcomm.network._time import allgather_time, ring_allreduce_time

    d = positive("d (model parameters)", d, integer=True)
    n = positive("n (nodes)", n, integer=True)
    if n < 2:
        raise UserError(f"n = {n} is not allowed; communication needs n >= 2 nodes")
    compute = positive("compute (s per step)", compute, zero=True)
    compute_scale = positive("compute_scale (s)", compute_scale, zero=True)
    if np.ndim(net.alpha) or np.ndim(net.beta) or np.ndim(net.nic_beta):
        raise UserError("net predict: the network must have scalar alpha and beta (one link type)")
    c = compute + compute_scale * _harmonic(n)
    comps = [Identity()] + [resolve_compressor(x, d) if isinstance(x, str) else x for x in compressors]
    rows, seen = [], set()
    for comp in comps:
        label = getattr(comp, "label", None) or comp.name
        if label in seen:
            continue
        seen.add(label)
        for s in comp.settings():  # a k or r beyond the model is a user error, named here
            v = getattr(comp, s.name)
            if s.name in ("k", "r") and isinstance(v, int) and v > d:
                raise UserError(f"compressor '{label}': {s.name} = {v} exceeds d = {d}; use {s.name} <= d "
                                f"(or a percentage, {s.name}=1%)")
        nbytes = HEADER_BYTES + math.ceil(float(comp.bits(d)) / 8.0)
        if comp.name in _SUMMABLE:
            pattern, comm = "ring_allreduce", float(ring_allreduce_time(n, nbytes, net))
        else:
            pattern, comm = "allgather", float(allgather_time(n, nbytes, net))
        rows.append(dict(compressor=label, pattern=pattern, bytes=int(nbytes), comm_s=comm, step_s=c + comm))
    dense = rows[0]
    nic = max(float(net.beta), float(net.nic_beta))
    for r in rows:
        r["break_even"] = dense["step_s"] / r["step_s"] if r["step_s"] > 0 else math.inf
        if r["pattern"] == "allgather":
            den = nic * r["bytes"] - float(net.alpha)
            r["crossover_n"] = math.inf if den <= 0 else 2 * nic * dense["bytes"] / den
        else:
            r["crossover_n"] = None
    return rows
