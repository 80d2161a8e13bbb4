r"""The one training loop: :func:`run` steps a :class:`~simcomm.optim.Method` and records it.

The loop owns what every method shares: the start (every replicate at ``x0``), the record schedule,
the one divergence rule (:func:`simcomm.optim._driver.diverged`) and what a diverged replicate holds,
early stopping at a target, progress (``on_step``), and the :class:`~simcomm.optim.Trace`. A method
owns only its maths (:mod:`simcomm.optim._algebra`).

What is recorded depends on the method's family: a *watch* checks each iterate, freezes a replicate
that has diverged (or stops the run), says when to stop, and builds the trace. The caller may give one;
otherwise the method's own (its ``watch`` and ``start``, set by a decentralized family's builder: the
nodes' watch of :mod:`simcomm.optim._watch_nodes` from every node at ``x0``), else the parameter
server's :class:`Monitor` (``f_gap``, ``dist2``, ``grad2``, ``bits``) from ``R`` replicates of ``x0``.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import integer
from simcomm.backends import entry_point
from simcomm.optim._algebra import Ctx, Method
from simcomm.optim._driver import drive
from simcomm.optim._registry import ACCELERATIONS
from simcomm.optim._trace import Trace
from simcomm.optim._watch import Monitor, start

__all__ = ["run"]


@entry_point
def run(problem, method: Method, steps: int, *, rng=None, x0=None, replicates: int = 1, record_every: int = 1,
        track_grad: bool = False, stop_gap: float | None = None, backend=None, on_step=None,
        watch=None) -> Trace:
    r"""Run ``method`` on ``problem`` for ``steps`` updates: the one training loop.

    Parameters
    ----------
    problem : simcomm.models.Problem
        :math:`f = \frac1n\sum_i f_i` with known :math:`x^\star`, :math:`f^\star` (or any problem its
        ``watch`` knows).
    method : Method
        A composition (:func:`simcomm.optim.descend` of a :func:`simcomm.optim.chain`), or a named
        method built by :func:`simcomm.optim.methods.build`.
    steps : int
        Updates to make, ``>= 0`` (``0``: the start is recorded, nothing is updated).
    rng : numpy.random.Generator or seed, optional
        The run's one stream (every draw of the method, in chain order).
    x0 : array_like, optional
        Start (default ``problem.x0``), broadcast to every replicate; for a method with its own ``start``
        (the decentralized families) what that makes the iterate from: the common start ``(d,)`` of
        every node (family ``"nodes"``), the nodes' own starts ``(n, d)`` (family ``"consensus"``).
    replicates : int
        Independent runs simulated together (the leading axis of the iterate); a decentralized run is
        one trajectory (``1``).
    record_every : int
        Record every this many steps (and at 0 and ``steps``).
    track_grad : bool
        Accumulate :math:`\|\nabla f(x_k)\|^2` at every step (``info["grad2_mean"]``).
    stop_gap : float, optional
        Stop once every replicate has :math:`f(x_k) - f^\star \le` ``stop_gap`` (or has diverged).
    backend : str or module, optional
        The backend every kernel of the run computes on (made active by :func:`simcomm.backends.use`;
        ``None`` keeps the active one).
    on_step : callable, optional
        ``on_step(k)`` after update ``k`` (a progress bar, an observer).
    watch : object, optional
        What records and watches the run (default: the method's own ``watch``, else the parameter
        server's :class:`Monitor`); it has
        ``alive``, ``done``, ``check(k, x, bits) -> x`` and ``trace(x)``. A watch whose ``sees_state``
        is true is called ``check(k, x, bits, state)`` with the method's state at :math:`x_k` (what a
        record reads from the step that made :math:`x_k`). With a watch, ``x0`` is the start as the
        method expects it (``None``: the method's ``start`` of ``problem.x0``, if it has one).

    Returns
    -------
    Trace

    Notes
    -----
    A registered acceleration of the method (:func:`simcomm.optim.accelerate`: a compiled path of this
    composition) runs instead of the step-by-step loop where it applies; it gives the same trace.

    Examples
    --------
    >>> from simcomm.compress import Identity
    >>> from simcomm.models import quadratic
    >>> from simcomm.optim import aggregate, chain, compress, descend, scale_by_lr, local_gradients
    >>> gd = descend(chain(local_gradients(), compress(Identity()), aggregate("mean"), scale_by_lr(1.0)))
    >>> tr = run(quadratic(4, 10, L=1.0, mu=0.5, rng=0), gd, 30)
    >>> bool(tr.dist2[0, -1] < 1e-8 * tr.dist2[0, 0])
    True
    """
    steps = integer(steps, "steps", low=0)
    rng = np.random.default_rng(rng)
    if watch is not None:
        x = method.start(problem, None) if x0 is None and method.start is not None else x0
    elif method.watch is not None:
        if integer(replicates, "replicates", low=1) != 1:
            raise UserError(f"method '{method.name}' runs one trajectory of the nodes; drop replicates= (or run "
                            "one seed per replicate)")
        x = method.start(problem, x0) if method.start is not None else x0
        watch = method.watch(problem, x, steps, record_every)
    else:
        x = start(problem, x0, replicates)
        watch = Monitor(problem, x, steps, record_every, track_grad, stop_gap)
    sees_state = getattr(watch, "sees_state", False)
    if steps == 0 and not sees_state:  # the start's record alone: nothing to step, nothing to initialise
        return watch.trace(watch.check(0, x, method.bits(0, problem)))
    for fast in ACCELERATIONS.get(method.name, ()):
        trace = fast(problem, method, steps, rng=rng, x0=x, replicates=replicates, record_every=record_every,
                     track_grad=track_grad, stop_gap=stop_gap, on_step=on_step, watch=watch)
        if trace is not None:
            return trace
    ctx = Ctx(problem, 0, steps, rng, watch.alive)
    state = method.init(x, ctx)

    def advance(k):
        nonlocal x, state
        x, state = method.step(x, state, ctx._replace(k=k, alive=watch.alive))

    def check(k):
        nonlocal x
        if sees_state:
            x = watch.check(k, x, method.bits(k, problem), state)
        else:
            x = watch.check(k, x, method.bits(k, problem))
        return watch.done

    drive(steps, advance, check, on_step=on_step)
    return watch.trace(x)
