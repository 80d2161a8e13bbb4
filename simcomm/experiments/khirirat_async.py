r"""Asynchronous against synchronous compressed GD in simulated wall-clock time (papers/urq_delay.md A1, A2).

Both run on regularised logistic regression (``simcomm.models.logistic``, every worker holding the whole
set) with ``n`` workers and a parameter server, under the project's time model (``simcomm.network``):
per-node compute times from a :class:`~simcomm.network.Straggler`, alpha-beta links, QSGD messages up
(``bits(d)/8`` bytes) and the float32 model down (``4 d`` bytes).

* **Synchronous** (A1): every step waits for the slowest of the ``n`` workers, then the parameter
  server's exchange (:func:`~simcomm.network.sync_step_times`, :func:`~simcomm.network.ps_time`);
  :math:`x_{k+1} = x_k - \gamma\frac1n\sum_i Q_i(\nabla f_i(x_k))`.
* **Asynchronous** (A2 on the workers' own clocks, :class:`~simcomm.network.Clock`): the server applies
  each worker's update on arrival, :math:`x_{k+1} = x_k - \frac{\gamma}{n}Q(\nabla f_{w_k}(x_{k-\tau_k}))`,
  the delays :math:`\tau_k` coming from the clocks (one upload and one download per update, no incast).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.urq import _Q, _quantizer
from simcomm.experiments.urq_logistic import _LOGISTIC, HORIZON, _gd_iterations, seed_condition
from simcomm.models import make_problem
from simcomm.network import Clock, Network, Straggler, ps_time, sync_step_times
from simcomm.optim import async_compressed_gd, compressed_gd

__all__ = ["clock_schedule_of_run", "async_step"]


def clock_schedule_of_run(clock: Clock, n: int, updates: int, seed: int):
    """Worker, delay and arrival time of the first ``updates`` server updates of a clocked run seeded ``seed``.

    :func:`simcomm.optim.async_compressed_gd` with ``clock`` and ``rng=seed`` draws its (single-replicate)
    schedule from the first stream spawned off the first stream spawned from ``default_rng(seed)``
    (:func:`simcomm.optim.clock_schedules`); this draws the same one and keeps the arrival times.

    Examples
    --------
    >>> w, tau, t = clock_schedule_of_run(Clock(Straggler("constant", 1.0)), 2, 4, seed=0)
    >>> w.tolist(), tau.tolist(), t.tolist()
    ([0, 1, 0, 1], [0, 1, 1, 1], [1.0, 1.0, 2.0, 2.0])
    """
    (sched,) = np.random.default_rng(seed).spawn(1)
    return clock.schedule(n, updates, rng=sched.spawn(1)[0])


def async_step(n: int, tau_max: int, L: float) -> float:
    r"""The step :math:`\gamma` of clocked asynchronous GD the seed condition certifies: :math:`n\,c(\tau_{\max}, L)`.

    A clocked update moves by :math:`\frac{\gamma}{n}Q(\nabla f_w(x_{k-\tau_k}))`, a delayed gradient step
    of size :math:`\gamma/n` with delays up to :math:`\tau_{\max}`; the seed condition
    :math:`c(\tau, L) = 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` [B] bounds that size, so :math:`\gamma = n\,c`.

    Examples
    --------
    >>> round(async_step(8, 7, 1.0), 4)   # round robin: tau = n - 1
    0.7211
    """
    return n * seed_condition(tau_max, L)


def _async_schedule(clock, n, seed, lr_of_tau, K0, L):
    """(schedule, lr, updates): HORIZON x the bound's updates at the step the schedule's largest delay allows."""
    U = n * math.ceil(HORIZON * K0)
    for _ in range(12):
        w, tau, t = clock_schedule_of_run(clock, n, U, seed)
        lr = lr_of_tau(int(tau.max(initial=0)))
        need = math.ceil(HORIZON * n * K0 / (L * lr))
        if need <= U:
            return (w, tau, t), lr, U
        U = need
    raise RuntimeError("async horizon did not settle")  # tau_max grows like log U: never reached in practice


def _cost(p):
    """(seconds, bytes) of one replicate, fitted on breast cancer: the certified step's horizon grows like n."""
    seconds = 0.6 * p["n"] if p["step_rule"] == "condition" else 0.9 + 0.13 * p["n"]
    return seconds, 50_000_000


@experiment(
    "async_wall_clock",
    cost=_cost,
    params={**_Q, "problem": _LOGISTIC["problem"], "l2": _LOGISTIC["l2"],
            "n": Param("int", default=8, low=2, high=64, doc="workers"),
            "step_rule": Param("str", default="equal", choices=("equal", "condition"),
                               doc="equal: both at 1/(alpha L); condition: async at n x the seed condition for "
                                   "the largest delay its clocks produce (with L -> alpha L), sync at 1/(alpha L)"),
            "straggler": Param("str", default="shifted_exp", choices=("shifted_exp", "constant"),
                               doc="compute times: shift + Exp(mean scale) per node and step, or the constant "
                                   "shift + scale (the same mean, no stragglers)"),
            "shift": Param("float", default=1e-3, low=0.0, doc="compute time's constant part (s)"),
            "scale": Param("float", default=1e-3, low=0.0, low_open=True, doc="compute time's exponential mean (s)"),
            "lat": Param("float", default=1e-4, low=0.0, doc="link latency alpha (s)"),
            "inv_bw": Param("float", default=1e-8, low=0.0, doc="link inverse bandwidth beta (s/byte)"),
            "eps": Param("float", default=1e-4, low=0.0, low_open=True, high=1.0, high_open=True,
                         doc="target (f - f*) <= eps (f(x0) - f*)")},
)
def async_wall_clock(params, rng, backend):
    r"""Simulated time to eps of asynchronous over synchronous compressed GD (module docstring).

    Sync at :math:`\gamma_s = 1/(\alpha L)` (D1 [N]); async at :math:`\gamma_s` (``equal``) or at
    :func:`async_step` of the largest delay of its own schedule over its horizon (``condition``: the
    seed condition [B] with :math:`L \to \alpha L`). The sync run, its straggler draws and the async
    run (schedule and compressor) use three streams drawn from ``rng``. Horizons: ``HORIZON`` x the
    bound's iterations (rounds of ``n`` updates for async); a miss counts as ``inf``.

    Rows: ``time_ratio`` = async time to eps / sync time to eps, with columns ``sync_time``,
    ``async_time``, ``sync_iters``, ``async_rounds`` (updates / n), ``lr_sync``, ``lr_async``,
    ``tau_max`` and ``pred_round_ratio``, the time model's mean async round over mean sync step,
    :math:`(c + u + w)/(s + \sigma H_n + T_{ps})` (:math:`c` the mean compute time, :math:`H_n` the
    harmonic number).
    """
    q = _quantizer(params)
    n = params["n"]
    p = make_problem(params["problem"], n=n, heterogeneous=False, l2=params["l2"])
    a = float(q.alpha(p.d))
    stop = params["eps"] * float(p.value(p.x0)[0] - p.f_star)
    K0 = _gd_iterations(p, stop)
    shift, scale = params["shift"], params["scale"]
    strag = (Straggler("shifted_exp", shift, scale) if params["straggler"] == "shifted_exp"
             else Straggler("constant", shift + scale))
    net = Network(alpha=params["lat"], beta=params["inv_bw"])
    up_b, down_b = q.bits(p.d) / 8.0, 4.0 * p.d
    up, down = float(ps_time(1, up_b, 0.0, net)), float(ps_time(1, 0.0, down_b, net))
    comm = float(ps_time(n, up_b, down_b, net))
    s_sync, s_async, s_strag = (int(rng.integers(2**63)) for _ in range(3))

    lr_s = 1.0 / (a * p.L)
    H = math.ceil(HORIZON * a * K0)
    tr = compressed_gd(p, q, lr=lr_s, steps=H, mode="workers", stop_gap=stop, rng=s_sync, backend=backend)
    Ks = float(tr.first_below(stop)[0])
    steps = sync_step_times(strag.draw((H, n), rng=s_strag), comm)
    t_sync = float(steps[: int(Ks)].sum()) if math.isfinite(Ks) else math.inf

    clock = Clock(strag, up=up, down=down)
    rule = (lambda tau: lr_s) if params["step_rule"] == "equal" else (lambda tau: async_step(n, tau, a * p.L))
    (w, tau, t), lr_a, U = _async_schedule(clock, n, s_async, rule, K0, p.L)
    tra = async_compressed_gd(p, q, lr=lr_a, steps=U, clock=clock, stop_gap=stop, rng=s_async, backend=backend)
    Ka = float(tra.first_below(stop)[0])
    t_async = float(t[int(Ka) - 1]) if math.isfinite(Ka) and Ka >= 1 else (0.0 if Ka == 0 else math.inf)

    mean_c = shift + scale
    harmonic = sum(1.0 / i for i in range(1, n + 1)) if params["straggler"] == "shifted_exp" else 1.0
    pred = (mean_c + up + down) / (shift + scale * harmonic + comm)
    # a sync miss leaves nothing to compare with (nan); an async miss alone is a ratio of inf
    ratio = t_async / t_sync if math.isfinite(t_sync) else math.nan
    note = "" if math.isfinite(t_sync) and math.isfinite(t_async) else "missed eps within the horizon"
    return [dict(metric="time_ratio", value=ratio, sync_time=t_sync, async_time=t_async,
                 sync_iters=Ks, async_rounds=Ka / n, lr_sync=lr_s, lr_async=lr_a, tau_max=int(tau.max(initial=0)),
                 pred_round_ratio=pred, note=note)]
