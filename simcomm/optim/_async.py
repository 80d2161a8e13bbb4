r"""Asynchronous compressed gradient descent with bounded delay :math:`\tau` (notes ``urq_delay.md`` A2).

.. math:: x_{k+1} = x_k - \gamma\,\frac1n\sum_{i=1}^n Q_i\bigl(\nabla f_i(x_{k-\tau_i(k)})\bigr),
          \qquad 0 \le \tau_i(k) \le \min(\tau, k).

The master keeps a ring buffer of the last :math:`\tau + 1` iterates (memory :math:`O(\tau d)` per
replicate): slot ``k mod (tau+1)`` holds :math:`x_k`. Delay models:

* ``"constant"``: :math:`\tau_i(k) = \min(\tau, k)` for every worker;
* ``"uniform"``: :math:`\tau_i(k)` i.i.d. uniform on :math:`\{0, \dots, \min(\tau, k)\}`;
* ``"adversarial"``: a greedy adversary that, at every step, hands every worker the buffered iterate
  farthest from the current one, :math:`\tau(k) = \arg\max_{t \le \min(\tau,k)}\|x_k - x_{k-t}\|`
  (ties to the larger delay). This is a heuristic worst case, not a proven one.

With a ``clock`` (:class:`simcomm.network.Clock`) the delays are not drawn: every worker runs on its
own clock (per-node compute times from the clock's straggler distribution), the server applies each
update on arrival, and a step of the trace is one server update from one worker :math:`w_k`,

.. math:: x_{k+1} = x_k - \frac{\gamma}{n}\,Q\bigl(\nabla f_{w_k}(x_{k-\tau_k})\bigr),

:math:`\tau_k` the number of server updates between the worker's read and its write
(:meth:`simcomm.network.Clock.schedule`). The factor :math:`1/n` keeps :math:`\gamma`'s meaning: a
round of :math:`n` updates (one from each worker at equal speeds) moves as far as one averaged step.
The ring buffer then holds the largest delay of the run plus one iterates.

Stability thresholds are compared with the seed summary's sufficient condition
:math:`\gamma < 2/[L(1+\sqrt{1+8\tau(\tau+1)})]` ([B], unverified) in ``theory/urq.py``;
:func:`largest_stable_step` finds the empirical threshold by bisection, relying on divergence being
recorded (``Trace.diverged_at``), not raised.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import entry_point
from simcomm.optim._blocks import DELAY_MODELS, check_delay, clock_schedules
from simcomm.optim._loop import run
from simcomm.optim._trace import Trace
from simcomm.optim._watch import check_compressor, check_lr, check_steps

__all__ = ["async_compressed_gd", "clock_schedules", "largest_stable_step", "stable_step_bracket", "DELAY_MODELS"]

def check_tau(tau) -> int:
    """Validate a delay bound (integer ``tau >= 0``)."""
    if isinstance(tau, bool) or not isinstance(tau, (int, np.integer)) or tau < 0:
        raise UserError(f"tau = {tau!r} is not allowed; use an integer delay bound tau >= 0")
    return int(tau)


@entry_point
def async_compressed_gd(problem, compressor, *, lr: float, steps: int, tau: int | None = None,
                        delay: str | None = None, clock=None, x0=None, replicates: int = 1, record_every: int = 1,
                        track_grad: bool = False, stop_gap=None, rng=None, backend=None) -> Trace:
    r"""Asynchronous compressed gradient descent with delays bounded by ``tau``.

    Parameters
    ----------
    problem : simcomm.models.Problem
    compressor : simcomm.compress.Compressor
    lr : float
        Step size, ``> 0``.
    steps : int
        Number of master iterations.
    tau : int
        Delay bound, ``>= 0`` (``0`` is :func:`~simcomm.optim.compressed_gd` with ``mode="workers"``).
        Required without ``clock``; not allowed with it (the clock decides the delays).
    delay : {"constant", "uniform", "adversarial"}, optional
        Delay model (module docstring); default ``"constant"``. Not allowed with ``clock``.
    clock : simcomm.network.Clock, optional
        Workers on their own clocks (module docstring): each step is one server update, in arrival
        order, with the delay the clock gives it. The schedule is drawn per replicate from a stream
        spawned off ``rng`` first; without a clock ``rng`` is used exactly as before.
    x0, replicates, record_every, track_grad, stop_gap, rng, backend
        As in :func:`~simcomm.optim.compressed_gd`.

    Returns
    -------
    Trace
        As :func:`~simcomm.optim.compressed_gd`'s (``records`` ``f_gap``, ``dist2``, ``grad2``, ``bits``;
        ``info["grad2_mean"]``).

    Raises
    ------
    UserError
        ``tau < 0``, ``lr <= 0``, an unknown delay model, or ``tau``/``delay`` given with ``clock``.

    Examples
    --------
    >>> from simcomm.models import quadratic
    >>> from simcomm.compress import Identity
    >>> p = quadratic(2, 5, L=1.0, mu=1.0, rng=0)      # H = I: x_{k+1} = x_k - lr (x_{k-tau} - x*)
    >>> async_compressed_gd(p, Identity(), lr=1.5, steps=200, tau=1).notes()   # 1.5 > 1 = threshold
    ['diverged at step 46']
    """
    from simcomm.optim._registry import build_method

    compressor = check_compressor(compressor)
    lr = check_lr(lr)
    steps = check_steps(steps)
    if clock is not None:
        if tau is not None or delay is not None:
            raise UserError("async_compressed_gd: with a clock the delays come from the workers' clocks; "
                            "drop tau and delay (or drop clock to draw delays from a delay model)")
        from simcomm.optim.methods.async_gd import build_clocked

        n = problem.n
        return run(problem, build_clocked(compressor=compressor, lr=lr, clock=clock, n=n), steps, rng=rng, x0=x0,
                   replicates=replicates, record_every=record_every, track_grad=track_grad, stop_gap=stop_gap)
    if tau is None:
        raise UserError("async_compressed_gd: give the delay bound tau (an integer >= 0) or a clock "
                        "(simcomm.network.Clock)")
    tau = check_tau(tau)
    delay = check_delay("constant" if delay is None else delay)
    m = build_method("async_gd", compressor=compressor, lr=lr, tau=tau, delay=delay)
    return run(problem, m, steps, rng=rng, x0=x0, replicates=replicates, record_every=record_every,
               track_grad=track_grad, stop_gap=stop_gap)


def stable_step_bracket(stable, lo: float, hi: float, iters: int) -> tuple[float, float]:
    """Geometric bisection: ``(lo, hi)`` with ``stable(lo)`` true and ``stable(hi)`` false after ``iters`` halvings.

    The relative width of the final bracket is ``(hi/lo) ** (2 ** -iters) - 1`` for the initial
    ``hi/lo``; the bracket is first widened by factors of 2 if an end is on the wrong side, giving up
    below ``1e-12`` (returns ``(0.0, hi)``) and above ``1e12`` (returns ``(lo, inf)``).

    Examples
    --------
    >>> lo, hi = stable_step_bracket(lambda g: g < 0.3, 0.01, 1.0, iters=30)
    >>> lo < 0.3 <= hi, round(lo, 6)
    (True, 0.3)
    """
    while not stable(lo):
        lo, hi = lo / 2.0, lo
        if lo < 1e-12:
            return 0.0, hi
    while stable(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            return lo, math.inf
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if stable(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def largest_stable_step(run, lo: float, hi: float, *, iters: int = 12) -> float:
    """Bisection (geometric) for the largest ``lr`` with ``run(lr)`` stable.

    ``run(lr) -> bool`` says whether a run at ``lr`` was stable (did not diverge, did not grow).
    ``lo`` must be stable and ``hi`` unstable; the bracket is widened (factors of 2) when they are not
    (:func:`stable_step_bracket`). Returns the stable end of the final bracket (so the estimate errs on
    the low side by at most a factor ``(hi/lo)**(2**-iters)``), ``0.0`` if nothing down to ``1e-12`` is
    stable and ``inf`` if everything up to ``1e12`` is.

    Examples
    --------
    >>> round(largest_stable_step(lambda g: g < 0.3, 0.01, 1.0, iters=30), 6)
    0.3
    """
    lo, hi = stable_step_bracket(run, lo, hi, iters)
    return math.inf if hi == math.inf else lo
