r"""Local-update methods: workers take ``H`` inner steps, the server takes an outer step on their pseudo-gradients.

One step of the loop (:func:`simcomm.optim.run`) is one *inner* step of every worker; the iterate the
loop records is the server's (global) model :math:`x`, ``(R, d)``. Worker :math:`i` holds its own model
:math:`x_i`, ``(R, n, d)``, and moves it with the ``inner`` transformation (a chain over the workers'
axis that starts with :func:`simcomm.optim.local_gradients`, which reads each worker's own model).

The model's coordinates are split into ``fragments`` contiguous parts. Fragment :math:`p` is
synchronised after inner steps :math:`s = o_p, o_p + H, o_p + 2H, \dots` with :math:`o_p =
\lfloor (p + 1) H / P \rfloor` (one fragment: every :math:`H` steps; several: staggered over the round,
Streaming DiLoCo, Douillard et al. 2025 [R]). At a synchronisation the workers' pseudo-gradients

.. math:: \Delta_i = x_{[p]} - x_{i,[p]}

go through the ``outer`` transformation (compression, error feedback, aggregation, the outer optimiser,
the outer step size), which returns the server's displacement: :math:`x_{[p]} \leftarrow x_{[p]} + u`.
The workers receive the new fragment ``overlap`` inner steps later (the communication overlapped with
computation; 0: at once) and mix it with what they hold then,
:math:`x_{i,[p]} \leftarrow \alpha\,x_{i,[p]} + (1 - \alpha)\,x_{[p]}` (``alpha = 0``: replace).

With one fragment, no overlap and ``alpha = 0`` this is DiLoCo (Douillard et al. 2023 [R]): the outer
optimiser an SGD step of size 1 without momentum gives FedAvg / local SGD (the server's model is the
workers' average), and ``H = 1`` with inner SGD of step :math:`\eta` and outer SGD of step 1 gives
parallel SGD of step :math:`\eta` (to rounding: the pseudo-gradient is a difference of iterates).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.optim._algebra import Method, Transform

__all__ = ["local_updates", "LocalState", "sync_offsets"]


class LocalState(NamedTuple):
    """The workers' models, the inner optimiser's state, per fragment the outer state and the pending merge."""

    workers: np.ndarray
    inner: tuple
    outer: tuple
    pending: tuple


def sync_offsets(H: int, fragments: int) -> np.ndarray:
    r"""The first synchronisation step :math:`o_p = \lfloor (p + 1) H / P \rfloor` of every fragment."""
    return np.array([(p + 1) * H // fragments for p in range(fragments)], dtype=np.int64)


def _syncs_up_to(k: int, offset: int, H: int) -> int:
    """How many synchronisations of a fragment with first step ``offset`` happen at steps ``<= k``."""
    return 0 if k < offset else (k - offset) // H + 1


def local_updates(H: int, inner: Transform, outer: Transform, *, fragments: int = 1, overlap: int = 0,
                  alpha: float = 0.0, bits_per_value=None, name: str = "local_updates") -> Method:
    r"""The local-update method of the module docstring.

    Parameters
    ----------
    H : int
        Inner steps per round (per fragment), ``>= 1``.
    inner : Transform
        The workers' optimiser over ``(R, n, d)``: starts with a gradient oracle, ends with a step size.
    outer : Transform
        The server's treatment of the pseudo-gradients ``(R, n, d_p)``: e.g. ``chain(compress(C),
        aggregate("mean"), momentum(0.9, nesterov=True), scale_by_lr(0.7))``.
    fragments : int
        Contiguous parts of the model synchronised in turn, ``1 <= fragments <= min(H, d)``.
    overlap : int
        Inner steps between a synchronisation and the workers' merge, ``0 <= overlap < H``.
    alpha : float
        Weight of the worker's own fragment in the merge, in ``[0, 1)``.
    bits_per_value : callable, optional
        ``bits_per_value(d_p) -> bits`` one worker sends for a fragment of ``d_p`` coordinates (a
        compressor's ``bits``); default ``32 d_p``.
    """
    H, fragments, overlap = int(H), int(fragments), int(overlap)
    if H < 1:
        raise UserError(f"H = {H!r} is not allowed; use an integer number of inner steps >= 1")
    if not 1 <= fragments <= H:
        raise UserError(f"fragments = {fragments!r} is not allowed; use an integer 1 <= fragments <= H = {H}")
    if not 0 <= overlap < H:
        raise UserError(f"overlap = {overlap!r} is not allowed; use an integer 0 <= overlap < H = {H}")
    if not 0.0 <= alpha < 1.0:
        raise UserError(f"alpha = {alpha!r} is not allowed; use a number in [0, 1)")
    offsets = sync_offsets(H, fragments)
    bits_of = bits_per_value or (lambda dp: 32 * dp)

    @functools.lru_cache(maxsize=4)
    def parts(d):
        """The fragments' coordinates (computed once per dimension: every step and every bit count reads them)."""
        if fragments > d:
            raise UserError(f"fragments = {fragments} is larger than the model (d = {d}); use at most {d}")
        return np.array_split(np.arange(d), fragments)

    def init(x, ctx):
        X = np.repeat(x[:, None, :], ctx.problem.n, axis=1)
        outer_states = tuple(outer.init(x[:, idx], ctx) for idx in parts(x.shape[-1]))
        return LocalState(X, inner.init(X, ctx), outer_states, (None,) * fragments)

    def merge(X, idx, g):
        """The workers take the new fragment ``g`` (mixed with their own by ``alpha``)."""
        X[:, :, idx] = g[:, None, :] if alpha == 0.0 else alpha * X[:, :, idx] + (1.0 - alpha) * g[:, None, :]

    def step(x, state, ctx):
        X = state.workers
        if ctx.alive is not None and not ctx.alive.all():  # a frozen replicate's workers restart from its model
            X = X.copy()
            X[~ctx.alive] = x[~ctx.alive, None, :]
        U, inner_state = inner.update(None, state.inner, X, ctx)
        X = X + U
        s = ctx.k + 1  # inner steps made
        x = x.copy()
        outer_states, pending = list(state.outer), list(state.pending)
        for p, idx in enumerate(parts(x.shape[-1])):
            if pending[p] is not None and pending[p][0] == s:
                merge(X, idx, pending[p][1])
                pending[p] = None
            if s >= offsets[p] and (s - offsets[p]) % H == 0:
                delta = x[:, None, idx] - X[:, :, idx]
                u, outer_states[p] = outer.update(delta, outer_states[p], x[:, idx], ctx)
                x[:, idx] = x[:, idx] + u
                g = x[:, idx].copy()
                if overlap == 0:
                    merge(X, idx, g)
                else:
                    pending[p] = (s + overlap, g)
        return x, LocalState(X, inner_state, tuple(outer_states), tuple(pending))

    def bits(k, problem):
        sizes = [idx.size for idx in parts(problem.d)]
        return float(sum(_syncs_up_to(k, int(o), H) * problem.n * bits_of(dp) for o, dp in zip(offsets, sizes)))

    return Method(init, step, bits, name)
