r"""What a training method is: small pure transformations, composed, stepped by one loop.

A *transformation* is a pair of pure functions (optax's shape):

``init(x, ctx) -> state``
    The transformation's own state (a NamedTuple of arrays, or ``()``) for the iterate ``x``.
``update(u, state, x, ctx) -> (u, state)``
    Maps the incoming update ``u`` to an outgoing one and returns a new state; the old state is never
    modified. ``x`` is the current iterate (read, never written), ``ctx`` the step's :class:`Ctx`.

Arrays carry their axes explicitly: an iterate is ``(R, d)`` (``R`` replicates simulated together),
what the workers hold is ``(R, n, d)`` (the worker axis). A gradient oracle starts a chain (it ignores
the incoming ``u``, which is ``None``), a compressor or an error-feedback variant maps ``(R, n, d)`` to
``(R, n, d)``, an aggregation reduces the worker axis, a step size turns a direction into a
displacement. :func:`chain` composes them left to right; :func:`descend` turns a chain whose output is
a displacement into a :class:`Method`, whose ``step`` returns the next iterate, ``x + u``.

A method whose next iterate is not ``x + u`` (a gossip step mixes the nodes' iterates, gradient tracking
and push-sum step a state of several arrays) ends its chain with a block whose output IS the next
iterate; :func:`assign` makes that chain a :class:`Method`. :func:`simcomm.optim.run` steps a method and
records it; the named
methods of :mod:`simcomm.optim.methods` are compositions of the blocks of :mod:`simcomm.optim`
(gradient oracles, compression, error feedback, aggregation, step sizes, momentum, delays).

Examples
--------
>>> import numpy as np
>>> double = Transform(lambda x, ctx: (), lambda u, s, x, ctx: (2 * u, s))
>>> shift = Transform(lambda x, ctx: 0, lambda u, s, x, ctx: (u + 1, s + 1))
>>> t = chain(double, shift)
>>> u, s = t.update(np.array([1.0]), t.init(None, None), None, None)
>>> u.tolist(), s
([3.0], ((), 1))
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

__all__ = ["Transform", "Method", "Ctx", "chain", "descend", "assign", "stateless"]


class Ctx(NamedTuple):
    """What every transformation may read at a step (nothing in it is written by a transformation).

    Where its kernels run is not in it: a transformation takes the active backend
    (:func:`simcomm.backends.get_backend`, set by :func:`simcomm.optim.run` and every entry point).

    Attributes
    ----------
    problem : object
        The problem the method trains on (its gradient oracle, sizes ``n``, ``d``).
    k : int
        The step: the update from :math:`x_k` to :math:`x_{k+1}`.
    steps : int
        The horizon (schedules that decay over the run read it).
    rng : numpy.random.Generator
        The run's one stream; every draw of every transformation comes from it, in chain order.
    alive : numpy.ndarray of bool, shape (R,)
        Per replicate, whether it has not diverged (a diverged replicate is frozen by the loop).
    """

    problem: Any
    k: int
    steps: int
    rng: np.random.Generator
    alive: np.ndarray | None = None


class Transform(NamedTuple):
    """A pure ``(init, update)`` pair (module docstring)."""

    init: Callable
    update: Callable


class Method(NamedTuple):
    r"""A training method: a state and a step from one iterate to the next.

    Attributes
    ----------
    init : callable
        ``init(x, ctx) -> state``.
    step : callable
        ``step(x, state, ctx) -> (x_next, state)``: pure; ``x`` is not modified.
    bits : callable
        ``bits(k, problem) -> float``: the uplink bits all workers have sent before iterate ``k`` was
        formed (per replicate).
    name : str
        What the method is called in records and messages (a registered method's name).
    settings : dict
        The settings it was built from (a registered method's, checked): what a registered
        acceleration of this composition reads (:func:`simcomm.optim.accelerate`).
    watch : callable, optional
        ``watch(problem, x, steps, record_every) -> watch``: what records and watches a run of this
        method from its start ``x`` when the caller gives no watch (``None``: the parameter server's
        :class:`~simcomm.optim._watch.Monitor`). Set by the builders of the decentralized families.
    start : callable, optional
        ``start(problem, x0) -> x``: the iterate this method steps, from the user's start ``x0``
        (``None``: ``problem.x0``), e.g. every node at ``x0`` (``None``: the replicates of ``x0``).
    """

    init: Callable
    step: Callable
    bits: Callable = lambda k, problem: 0.0
    name: str = "method"
    settings: dict = {}
    watch: Callable | None = None
    start: Callable | None = None


def stateless(fn: Callable) -> Transform:
    """A transformation without state from ``fn(u, x, ctx) -> u``."""
    return Transform(lambda x, ctx: (), lambda u, state, x, ctx: (fn(u, x, ctx), state))


def chain(*transforms: Transform) -> Transform:
    """Compose transformations left to right; the state is the tuple of their states."""

    def init(x, ctx):
        return tuple(t.init(x, ctx) for t in transforms)

    def update(u, state, x, ctx):
        new = []
        for t, s in zip(transforms, state):
            u, s = t.update(u, s, x, ctx)
            new.append(s)
        return u, tuple(new)

    return Transform(init, update)


def descend(transform: Transform, *, bits: Callable | None = None, name: str = "method") -> Method:
    r"""The method :math:`x_{k+1} = x_k + u_k`, :math:`u_k` what ``transform`` makes from nothing.

    ``transform`` starts from ``u = None`` (its first block is a gradient oracle) and ends with a
    displacement (its last block a step size, :func:`simcomm.optim.scale_by_lr`).
    """

    def step(x, state, ctx):
        u, state = transform.update(None, state, x, ctx)
        return x + u, state

    return Method(transform.init, step, bits if bits is not None else (lambda k, problem: 0.0), name)


def assign(transform: Transform, *, bits: Callable | None = None, name: str = "method") -> Method:
    r"""The method :math:`x_{k+1} = u_k`: what ``transform`` makes from nothing is the next iterate.

    ``transform`` starts from ``u = None`` (its first block is a gradient oracle, or the combine itself)
    and its last block returns the next iterate: the nodes' models after a gossip step, or a whole
    state (gradient tracking's :class:`~simcomm.optim.GTState`, push-sum's, CHOCO's).
    """

    def step(x, state, ctx):
        return transform.update(None, state, x, ctx)

    return Method(transform.init, step, bits if bits is not None else (lambda k, problem: 0.0), name)
