r"""The building blocks of parameter-server methods, each a :class:`~simcomm.optim.Transform` in one place.

Shapes: an iterate is ``(R, d)``; what the workers hold is ``(R, n, d)`` (:mod:`simcomm.optim._algebra`).

=========================  ==========================================================================
block                      what it does to the update ``u``
=========================  ==========================================================================
:func:`local_gradients`    starts a chain: every worker's gradient at the iterate it reads, ``(R, n, d)``
:func:`full_gradient`      starts a chain: the full gradient :math:`\nabla f(x)`, ``(R, d)``
:func:`delayed`            an oracle evaluated at delayed iterates (bounded delays, delay models)
:func:`clocked`            one worker per step, on the workers' own clocks (:class:`simcomm.network.Clock`)
:func:`iag_memory`         one worker refreshes its entry of a table of compressed gradients per step
:func:`compress`           :math:`C(u)` row by row (any :class:`~simcomm.compress.Compressor`)
:func:`error_feedback`     any variant of :data:`simcomm.compress.FEEDBACKS` (EF, EF-LR, EF21, ...)
:func:`aggregate`          reduces the worker axis (mean, majority vote)
:func:`downlink`           the server compresses what it broadcasts (with its own memory or not)
:func:`momentum`           heavy ball or Nesterov momentum on the direction
:func:`scale_by_lr`        direction to displacement: :math:`-\gamma_k u` (frozen replicates: 0)
=========================  ==========================================================================

Every block is pure in the sense of :mod:`simcomm.optim._algebra`, except that the ring buffers of
:func:`delayed` and the table of :func:`iag_memory` are advanced in place: they hold ``tau + 1`` (or
``n``) iterates per replicate, and the loop never reads an old state again.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from simcomm._errors import UserError, closest
from simcomm.optim._algebra import Transform, stateless

__all__ = ["local_gradients", "full_gradient", "delayed", "clocked", "iag_memory", "compress",
           "error_feedback", "aggregate", "downlink", "momentum", "adam", "scale_by_lr", "DELAY_MODELS", "IAG_ORDERS",
           "delays", "clock_schedules"]

#: delay models of :func:`delayed`
DELAY_MODELS = ("constant", "uniform", "adversarial")
#: worker orders of :func:`iag_memory`
IAG_ORDERS = ("cyclic", "random")


def _apply(compressor, u, ctx):
    """``compressor`` on the rows of ``u`` (any leading axes), in ``u``'s shape."""
    d = u.shape[-1]
    return compressor.apply(u.reshape(-1, d), rng=ctx.rng).reshape(u.shape)


# --------------------------------------------------------------------------- gradient oracles


def local_gradients() -> Transform:
    r"""Every worker's gradient :math:`\nabla f_i` at the iterate it reads: ``(R, n, d)``.

    The iterate is ``x`` of shape ``(R, d)`` (every worker reads the same one) or ``(R, n, d)`` (worker
    ``i`` reads ``x[:, i]``, e.g. through :func:`delayed`).

    On a model trained on data (:class:`simcomm.optim.ModelProblem`, one run: ``R = 1``) the gradient is
    worker ``i``'s minibatch gradient at the model it reads, the minibatches drawn from the problem's own
    stream (``batch_rng``) or else the run's, as :func:`simcomm.optim.ef_sgd` draws them; so every
    parameter-server and local-update composition trains a network unchanged.
    """

    def init(x, ctx):
        p = ctx.problem
        if not getattr(p, "draws_minibatches", False):
            return ()
        return ctx.rng if p.batch_rng is None else np.random.default_rng(p.batch_rng)

    def update(u, state, x, ctx):
        p = ctx.problem
        n, d = p.n, p.d
        R = x.shape[0]
        if isinstance(state, np.random.Generator):  # a model problem: one run, each worker at its own model
            theta = np.broadcast_to(x[0], (n, d)) if x.ndim == 2 else x[0]
            return p.worker_minibatch_gradients(state, theta)[None], state
        X = np.repeat(x, n, axis=0) if x.ndim == 2 else x.reshape(R * n, d)
        return p.grad(X, np.tile(np.arange(n), R)).reshape(R, n, d), state

    return Transform(init, update)


def full_gradient() -> Transform:
    r"""The full gradient :math:`\nabla f(x)`, ``(R, d)`` (one exact stream)."""
    return stateless(lambda u, x, ctx: ctx.problem.full_grad(x))


def delays(model: str, k: int, tau: int, R: int, n: int, buf: np.ndarray, slot: int, rng) -> np.ndarray:
    r"""Delays :math:`\tau_i(k)` of shape ``(R, n)`` for step ``k`` (``buf[:, slot]`` holds ``x_k``).

    ``"constant"``: :math:`\min(\tau, k)`; ``"uniform"``: i.i.d. on :math:`\{0, \dots, \min(\tau, k)\}`;
    ``"adversarial"``: the buffered iterate farthest from :math:`x_k` for every worker, ties to the larger
    delay (a greedy heuristic, not a proven worst case).
    """
    cap = min(tau, k)
    if model == "constant":
        return np.full((R, n), cap)
    if model == "uniform":
        return rng.integers(0, cap + 1, size=(R, n))
    t = np.arange(cap + 1)
    slots = (slot - t) % buf.shape[1]
    dist = ((buf[:, slots, :] - buf[:, slot : slot + 1, :]) ** 2).sum(axis=2)  # (R, cap+1)
    worst = cap - dist[:, ::-1].argmax(axis=1)
    return np.repeat(worst[:, None], n, axis=1)


class DelayState(NamedTuple):
    """Ring buffer of the last ``tau + 1`` iterates (slot ``k mod (tau + 1)`` holds :math:`x_k`); the oracle's state."""

    buffer: np.ndarray
    inner: tuple


def check_delay(model: str) -> str:
    """Validate a delay model name."""
    if model not in DELAY_MODELS:
        raise UserError(f"unknown delay model '{model}'{closest(model, DELAY_MODELS)}; "
                        f"choose one of {', '.join(DELAY_MODELS)}")
    return model


def delayed(oracle: Transform, tau: int, model: str = "constant") -> Transform:
    r"""``oracle`` evaluated at delayed iterates: worker ``i`` reads :math:`x_{k - \tau_i(k)}`.

    The delays :math:`\tau_i(k) \le \min(\tau, k)` follow ``model`` (:func:`delays`).
    A replicate that has diverged (frozen by the loop) restarts its history from its frozen iterate.
    """
    check_delay(model)
    B = int(tau) + 1

    def init(x, ctx):
        return DelayState(np.empty((x.shape[0], B, x.shape[1])), oracle.init(x, ctx))

    def update(u, state, x, ctx):
        buf, k = state.buffer, ctx.k
        R, n = x.shape[0], ctx.problem.n
        if ctx.alive is not None and not ctx.alive.all():
            dead = ~ctx.alive
            buf[dead] = x[dead, None, :]
        slot = k % B
        buf[:, slot] = x
        t = delays(model, k, int(tau), R, n, buf, slot, ctx.rng)
        X = buf[np.arange(R)[:, None], (slot - t) % B]  # (R, n, d)
        u, inner = oracle.update(u, state.inner, X, ctx)
        return u, DelayState(buf, inner)

    return Transform(init, update)


def clock_schedules(clock, n: int, steps: int, replicates: int, rng=None):
    """Per replicate, the worker and delay of each server update: two int arrays of shape ``(R, steps)``.

    Replicate ``r`` draws its schedule from the ``r``-th of ``replicates`` streams spawned off a first
    stream spawned from ``rng`` (so the compressor's draws that follow do not depend on the schedule's);
    ``rng`` is anything :func:`numpy.random.default_rng` accepts (a Generator is used as it is).
    """
    from simcomm.network import Clock

    if not isinstance(clock, Clock):
        raise UserError(f"clock = {clock!r} is not a simcomm.network.Clock; pass e.g. "
                        "Clock(Straggler('shifted_exp', shift=1e-3, scale=5e-4))")
    (sched_rng,) = np.random.default_rng(rng).spawn(1)
    W = np.empty((replicates, steps), dtype=np.int64)
    T = np.empty((replicates, steps), dtype=np.int64)
    for r, sub in enumerate(sched_rng.spawn(replicates)):
        W[r], T[r], _ = clock.schedule(n, steps, rng=sub)
    return W, T


class ClockState(NamedTuple):
    """Per replicate, the worker and delay of every server update, and the ring buffer of iterates."""

    worker: np.ndarray
    delay: np.ndarray
    buffer: np.ndarray


def clocked(clock) -> Transform:
    r"""One worker's gradient per server update, read at the iterate its clock gives it: ``(R, d)``.

    The schedule (:func:`simcomm.optim.clock_schedules`) is drawn when the state is made, from a stream
    spawned off the run's ``rng`` (so the compressor's draws that follow do not depend on it).
    """

    def init(x, ctx):
        W, T = clock_schedules(clock, ctx.problem.n, ctx.steps, x.shape[0], ctx.rng)
        return ClockState(W, T, np.empty((x.shape[0], int(T.max(initial=0)) + 1, x.shape[1])))

    def update(u, state, x, ctx):
        buf, k = state.buffer, ctx.k
        B = buf.shape[1]
        if ctx.alive is not None and not ctx.alive.all():
            dead = ~ctx.alive
            buf[dead] = x[dead, None, :]
        buf[:, k % B] = x
        X = buf[np.arange(x.shape[0]), (k % B - state.delay[:, k]) % B]
        return ctx.problem.grad(X, state.worker[:, k]), state

    return Transform(init, update)


class IAGState(NamedTuple):
    """The server's table of every worker's last compressed gradient ``(R, n, d)`` and its row sum ``(R, d)``."""

    table: np.ndarray
    total: np.ndarray


def iag_memory(compressor, order: str = "cyclic") -> Transform:
    r"""Compressed IAG's server memory: one worker refreshes its entry per step; out :math:`\frac1n\sum_i u_i`.

    The table starts with every worker's compressed gradient at :math:`x_0` (drawn when the state is
    made). At step ``k`` worker :math:`i_k = k \bmod n` (``"cyclic"``) or a uniform one (``"random"``)
    sends :math:`Q(\nabla f_{i_k}(x_k))`; the sum is updated in :math:`O(d)` and recomputed from the
    table every ``n`` steps so rounding does not drift. A diverged replicate's table is zeroed.
    """
    if order not in IAG_ORDERS:
        raise UserError(f"order = {order!r} is not allowed; use 'cyclic' or 'random'")

    def init(x, ctx):
        p = ctx.problem
        R, n, d = x.shape[0], p.n, p.d
        U = compressor.apply(p.grad(np.repeat(x, n, axis=0), np.tile(np.arange(n), R)),
                             rng=ctx.rng).reshape(R, n, d).astype(np.float64)
        return IAGState(U, U.sum(axis=1))

    def update(u, state, x, ctx):
        U, S = state
        k, n, R = ctx.k, ctx.problem.n, x.shape[0]
        if ctx.alive is not None and not ctx.alive.all():
            U[~ctx.alive] = 0.0
            S[~ctx.alive] = 0.0
        rows = np.arange(R)
        i = np.full(R, k % n) if order == "cyclic" else ctx.rng.integers(0, n, size=R)
        q = np.asarray(compressor.apply(ctx.problem.grad(x, i), rng=ctx.rng),
                       dtype=np.float64)
        S += q - U[rows, i]
        U[rows, i] = q
        if (k + 1) % n == 0:
            S = U.sum(axis=1)
        return S / n, IAGState(U, S)

    return Transform(init, update)


# --------------------------------------------------------------------------- what the workers send


def compress(compressor) -> Transform:
    """:math:`C(u)` on every row of ``u`` (the compressor's draws from the run's stream)."""
    return stateless(lambda u, x, ctx: _apply(compressor, u, ctx))


def error_feedback(variant, lr: float | Callable[[int], float] | None = None) -> Transform:
    r"""Any error-feedback variant of :data:`simcomm.compress.FEEDBACKS` around its compressor, per worker.

    The one implementation of error feedback: every variant (EF, EF-LR, EF21, EF21-SGDM, DIANA, MARINA)
    is a pure ``(init, apply)`` pair over the workers' ``(R, n, d)`` memory; this block keeps its state
    and passes the step size to the variants that rescale by it (``lr``: a number or ``lr(k)``). The
    outgoing update is what the server aggregates (EF: the message; EF21, DIANA, MARINA: the estimate).
    """
    takes_lr = getattr(variant, "takes_lr", False)
    if takes_lr and lr is None:
        raise UserError(f"error feedback '{variant.name}' rescales its memory by the step size; pass lr=")

    def init(x, ctx):
        return variant.init((x.shape[0], ctx.problem.n, x.shape[-1]))

    def update(u, state, x, ctx):
        kw = {"lr": lr(ctx.k) if callable(lr) else lr} if takes_lr else {}
        return variant.apply(u, state, rng=ctx.rng, **kw)

    return Transform(init, update)


# --------------------------------------------------------------------------- what the server does


def aggregate(aggregator="mean") -> Transform:
    """Reduce the worker axis with a :data:`simcomm.compress.AGGREGATORS` rule (``"mean"``, ``"majority_vote"``)."""
    from simcomm.compress import aggregator_from_name

    agg = aggregator_from_name(aggregator)
    return stateless(lambda u, x, ctx: agg.aggregate(u, axis=1))


class DownlinkState(NamedTuple):
    """The server's own error-feedback memory for what it broadcasts (zero without feedback)."""

    residual: np.ndarray


def downlink(compressor, feedback: bool = False) -> Transform:
    r"""The server compresses the direction it broadcasts: :math:`C_\downarrow(u)`.

    With ``feedback`` it keeps its own memory: :math:`p = u + e_s`, :math:`C_\downarrow(p)`,
    :math:`e_s' = p - C_\downarrow(p)` (DoubleSqueeze, Tang et al. 2019 [R]).
    """

    def init(x, ctx):
        return DownlinkState(np.zeros(x.shape))

    def update(u, state, x, ctx):
        P = u + state.residual if feedback else u
        U = np.asarray(compressor.apply(P, rng=ctx.rng), dtype=np.float64)
        return U, DownlinkState(P - U) if feedback else state

    return Transform(init, update)


class MomentumState(NamedTuple):
    """The momentum buffer (``None`` until the first direction arrives)."""

    buffer: np.ndarray | None


def momentum(beta: float, nesterov: bool = False) -> Transform:
    r"""Heavy ball, :math:`m' = \beta m + u`, out :math:`m'`; Nesterov, out :math:`u + \beta m'`.

    ``torch.optim.SGD``'s convention; the buffer starts at the first direction (:math:`m_0 = 0`).
    """
    beta = float(beta)
    if not 0.0 <= beta < 1.0:
        raise UserError(f"momentum beta = {beta!r} is not allowed; use a number in [0, 1)")

    def init(x, ctx):
        return MomentumState(None)

    def update(u, state, x, ctx):
        m = u if state.buffer is None else beta * state.buffer + u
        return (u + beta * m if nesterov else m), MomentumState(m)

    return Transform(init, update)


class AdamState(NamedTuple):
    """Adam's first and second moment estimates and the number of updates made."""

    m: np.ndarray | None
    v: np.ndarray | None
    count: int


def adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Transform:
    r"""Adam's direction (Kingma and Ba 2015): :math:`\hat m / (\sqrt{\hat v} + \epsilon)` with bias correction.

    :math:`m' = b_1 m + (1 - b_1) u`, :math:`v' = b_2 v + (1 - b_2) u^2`, :math:`\hat m = m'/(1 - b_1^t)`,
    :math:`\hat v = v'/(1 - b_2^t)` at the ``t``-th update; followed by :func:`scale_by_lr` it is
    ``torch.optim.Adam`` without weight decay.
    """
    for name, b in (("b1", b1), ("b2", b2)):
        if not 0.0 <= b < 1.0:
            raise UserError(f"adam: {name} = {b!r} is not allowed; use a number in [0, 1)")

    def init(x, ctx):
        return AdamState(None, None, 0)

    def update(u, state, x, ctx):
        t = state.count + 1
        m = (1.0 - b1) * u if state.m is None else b1 * state.m + (1.0 - b1) * u
        v = (1.0 - b2) * u * u if state.v is None else b2 * state.v + (1.0 - b2) * u * u
        out = (m / (1.0 - b1**t)) / (np.sqrt(v / (1.0 - b2**t)) + eps)
        return out, AdamState(m, v, t)

    return Transform(init, update)


def scale_by_lr(lr: float | Callable[[int], float]) -> Transform:
    r"""Direction to displacement, :math:`-\gamma_k u`; a frozen (diverged) replicate moves by 0.

    ``lr`` is a number or a schedule ``lr(k)``.
    """

    def scale(u, x, ctx):
        g = lr(ctx.k) if callable(lr) else lr
        if ctx.alive is None:
            return -(g * u)
        return -(g * ctx.alive.reshape(-1, *(1,) * (u.ndim - 1)) * u)

    return stateless(scale)
