r"""Which H and which compressor on my cluster: time per inner step of local-update methods (DiLoCo, local SGD).

A round of a local-update method is ``H`` inner steps on every node, then one exchange of the
(compressed) pseudo-gradients. With the compute model of :func:`~simcomm.network.predict_step_times`
(``compute`` seconds per step on every node plus an exponential straggler tail of mean ``scale`` per
node and step), node :math:`i` needs :math:`H c + s\,G_i` for a round, :math:`G_i \sim \mathrm{Gamma}(H, 1)`,
and the round waits for the slowest node:

.. math:: T_{\rm round}(H, C) = H c + s\,\mathbb{E}\max_{i \le n} G_i + T_C, \qquad
          \mathbb{E}\max_{i\le n} G_i = \int_0^\infty \bigl(1 - F_H(t)^n\bigr)\,dt,

:math:`F_H` the Gamma(H, 1) distribution function (:math:`H = 1`: the harmonic number :math:`H_n`, the
straggler term of :func:`~simcomm.network.predict_step_times`). :math:`T_C` is the exchange of one
message per node: a ring allreduce for dense summable messages (uncompressed, ``fp16``, ``bf16``), a
ring allgather for every other compressor (the rule and byte counts of
:func:`~simcomm.network.predict_step_times`). Time per inner step: :math:`T_{\rm round}/H`; data-parallel
SGD is :math:`H = 1` without compression. A method of step time :math:`t` reaches a target sooner than
SGD iff it needs fewer than :math:`\rho^\star = t_{\rm SGD}/t` times SGD's inner steps; with measured
inner steps to a target, the time to it is steps times :math:`t`. A model [N] of the time per step, not
a bound: how many steps each method needs is measured (``simcomm net predict --local ... --simulate``).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import positive

__all__ = ["expected_max_gamma", "predict_local_times"]


def expected_max_gamma(H: int, n: int) -> float:
    r""":math:`\mathbb{E}\max_{i\le n} G_i` for i.i.d. :math:`G_i \sim \mathrm{Gamma}(H, 1)` (H unit exponentials).

    Parameters
    ----------
    H : int
        Shape (exponentials summed), ``>= 1``.
    n : int
        Nodes, ``>= 1``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(expected_max_gamma(1, 4), 12) == round(1 + 1/2 + 1/3 + 1/4, 12)   # the harmonic number
    True
    >>> expected_max_gamma(5, 1)                                                  # one node: the mean, H
    5.0
    """
    from scipy import integrate, stats

    H = positive("H (inner steps)", H, integer=True)
    n = positive("n (nodes)", n, integer=True)
    if n == 1:
        return float(H)
    dist = stats.gamma(H)
    def tail(t):
        """1 - F^n = 1 - (1 - S)^n from the survival function S (no cancellation where S is tiny)."""
        S = float(dist.sf(t))
        return 1.0 if S >= 1.0 else float(-np.expm1(n * np.log1p(-S)))

    hi = float(dist.isf(1e-17 / n))  # past it 1 - F^n < 1e-16: the rest of the integral is below rounding
    val, _ = integrate.quad(tail, 0.0, hi, limit=200, epsabs=1e-12, epsrel=1e-12)
    return float(val)


def predict_local_times(d: int, n: int, net, H_values, compressors, *, compute: float = 0.0,
                        compute_scale: float = 0.0) -> list[dict]:
    r"""Predicted time per inner step of a local-update method for every ``H`` and compressor (module docstring).

    Parameters
    ----------
    d : int
        Model parameters (float32 coordinates).
    n : int
        Nodes, ``>= 2``.
    net : Network
        Scalar ``alpha``, ``beta`` (e.g. ``Network.from_toml`` of a calibrated file).
    H_values : iterable of int
        Inner steps per round to compare, each ``>= 1``.
    compressors : iterable of str or Compressor
        Applied to the pseudo-gradients (labels as for :func:`~simcomm.network.resolve_compressor`, ``"none"``
        for none).
    compute : float
        Seconds of computation per inner step on one node, ``>= 0``.
    compute_scale : float
        Mean of the exponential straggler tail per node and step (s), ``>= 0``.

    Returns
    -------
    list of dict
        Data-parallel SGD first (``H = 1``, uncompressed: ``method = "sgd"``), then one row per ``H`` and
        compressor (``method = "local"``): ``H``, ``compressor`` (label), ``pattern``, ``bytes`` (per
        message and node), ``compute_round_s``, ``comm_round_s``, ``step_s`` (the round's time over
        ``H``), ``break_even`` (:math:`\rho^\star`: the method reaches a target sooner than SGD iff it
        needs fewer than this many times SGD's inner steps).

    Raises
    ------
    UserError
        A value out of range, an unknown compressor (one line).

    Examples
    --------
    >>> from simcomm.network import Network
    >>> rows = predict_local_times(10**6, 8, Network(1e-5, 1e-9), [1, 8], ["none"], compute=0.01)
    >>> [(r["method"], r["H"]) for r in rows], round(rows[2]["break_even"], 3)   # 8 rounds' exchanges in one
    ([('sgd', 1), ('local', 1), ('local', 8)], 1.574)
    """
    from simcomm.network._predict import predict_step_times

    H_values = [positive("H (inner steps per round)", h, integer=True) for h in H_values]
    if not H_values:
        raise UserError("give at least one H (inner steps per round), e.g. --local 1,4,16")
    labels = list(compressors) or ["none"]
    base = predict_step_times(d, n, net, [c for c in labels if c != "none"], compute=0.0)  # the exchanges alone
    comm = {r["compressor"]: r for r in base}
    order = [r["compressor"] for r in (base if "none" in labels else base[1:])]  # base[0] is the uncompressed one
    compute = positive("compute (s per step)", compute, zero=True)
    compute_scale = positive("compute_scale (s)", compute_scale, zero=True)

    def row(method, H, label):
        r = comm[label]
        work = H * compute + compute_scale * expected_max_gamma(H, n)
        return dict(method=method, H=H, compressor=label, pattern=r["pattern"], bytes=r["bytes"],
                    compute_round_s=work, comm_round_s=r["comm_s"], step_s=(work + r["comm_s"]) / H)

    rows = [row("sgd", 1, "none")] + [row("local", H, c) for H in H_values for c in order]
    for r in rows:
        r["break_even"] = rows[0]["step_s"] / r["step_s"] if r["step_s"] > 0 else math.inf
    return rows
