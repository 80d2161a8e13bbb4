r"""Stale importance scores: W simulated workers compute gradient norms at parameters that lag the master.

Each worker owns a shard of the examples. A *job* of worker :math:`w` fetches the master's current
parameters :math:`\theta_s`, computes the norms :math:`\|g_n(\theta_s)\|` of its shard, and delivers them
(writes them to the shared store the master samples from) at step :math:`s + D`; its next job starts at
step :math:`s + R` (papers/importance_sampling.md (d), B5). Two schedules:

* ``period``: every :math:`P` master steps all workers recompute at the just-published parameters and
  deliver at once (:math:`D = 0, R = P`): the scores used at step :math:`t` are
  :math:`P\lfloor t/P \rfloor` old-parameter norms, lag :math:`t \bmod P \in [0, P-1]`; :math:`P = 1` is the
  ideal proposal.
* ``delay``: asynchronous workers whose jobs last :math:`D \sim \mathrm{Geometric}(1/\tau)` steps
  (support :math:`\{1, 2, \dots\}`, mean :math:`\tau`), drawn per job; the next job starts on delivery
  (:math:`R = D`), fetching the newest parameters.

The state is a NamedTuple updated by a pure function (optax-style ``init``/``update``).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from simcomm._errors import UserError, closest

__all__ = ["Staleness", "staleness", "StaleScoresState", "stale_init", "stale_update"]


class Staleness(NamedTuple):
    r"""Refresh schedule of the workers' scores (see the module docstring).

    Attributes
    ----------
    mode : {"period", "delay"}
    period : int
        Refresh period :math:`P \ge 1` (``mode="period"``).
    mean_delay : float
        Mean job duration :math:`\tau \ge 1` in master steps (``mode="delay"``).
    """

    mode: str = "period"
    period: int = 1
    mean_delay: float = 1.0


def staleness(mode: str = "period", *, period: int = 1, mean_delay: float = 1.0) -> Staleness:
    """Validate and build a :class:`Staleness` schedule.

    Raises
    ------
    UserError
        Unknown mode, refresh period <= 0, or mean delay < 1.

    Examples
    --------
    >>> staleness("period", period=8)
    Staleness(mode='period', period=8, mean_delay=1.0)
    """
    if mode not in ("period", "delay"):
        raise UserError(f"unknown staleness mode '{mode}'{closest(mode, ('period', 'delay'))}; use 'period' or 'delay'")
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period <= 0:
        raise UserError(f"refresh period = {period!r} must be a positive integer number of master steps")
    if not (np.isfinite(mean_delay) and mean_delay >= 1):
        raise UserError(f"mean_delay = {mean_delay} must be a number >= 1 (master steps per worker job)")
    return Staleness(mode, int(period), float(mean_delay))


class StaleScoresState(NamedTuple):
    """What the master sees and what the workers are computing.

    Attributes
    ----------
    scores : numpy.ndarray
        ``(N,)`` scores the master samples from.
    computed_at : numpy.ndarray
        ``(N,)`` int, master step of the parameters each score was computed at.
    pending, pending_at : numpy.ndarray
        ``(N,)`` scores of running jobs and the step of their parameters.
    deliver_at, next_start : numpy.ndarray
        ``(W,)`` int, step at which each worker delivers its job / starts the next one.
    worker_of : numpy.ndarray
        ``(N,)`` int, which worker owns each example.
    n_sent : int
        Scores delivered so far by all workers together (one float each).
    """

    scores: np.ndarray
    computed_at: np.ndarray
    pending: np.ndarray
    pending_at: np.ndarray
    deliver_at: np.ndarray
    next_start: np.ndarray
    worker_of: np.ndarray
    n_sent: int


_NEVER = np.iinfo(np.int64).max


def stale_init(initial_scores, shards) -> StaleScoresState:
    r"""Start from scores computed at the initial parameters (step 0); jobs start at step 0.

    Parameters
    ----------
    initial_scores : array_like
        ``(N,)`` norms at :math:`\theta_0` (the workers' first pass before training).
    shards : list of numpy.ndarray
        Disjoint index arrays covering ``0..N-1``, one per worker (see :func:`simcomm.models.split_workers`).

    Examples
    --------
    >>> st = stale_init(np.ones(4), [np.array([0, 1]), np.array([2, 3])])
    >>> st.worker_of.tolist(), st.n_sent
    ([0, 0, 1, 1], 4)
    """
    s = np.array(initial_scores, dtype=np.float64)
    n = s.size
    worker_of = np.full(n, -1, dtype=np.int64)
    for w, idx in enumerate(shards):
        worker_of[np.asarray(idx, dtype=np.int64)] = w
    if np.any(worker_of < 0) or sum(len(i) for i in shards) != n:
        raise UserError("shards must be disjoint index arrays covering every example exactly once")
    W = len(shards)
    return StaleScoresState(
        scores=s,
        computed_at=np.zeros(n, dtype=np.int64),
        pending=s.copy(),
        pending_at=np.zeros(n, dtype=np.int64),
        deliver_at=np.full(W, _NEVER, dtype=np.int64),
        next_start=np.zeros(W, dtype=np.int64),
        worker_of=worker_of,
        n_sent=n,
    )


def stale_update(
    state: StaleScoresState, step: int, norm_fn: Callable[[np.ndarray], np.ndarray], schedule: Staleness, *, rng=None
) -> StaleScoresState:
    r"""Advance the workers to master step ``step`` (call once per step, before sampling).

    Parameters
    ----------
    state : StaleScoresState
    step : int
        Current master step :math:`t`; ``norm_fn`` evaluates at :math:`\theta_t`.
    norm_fn : callable
        ``norm_fn(idx) -> norms`` of examples ``idx`` at the master's current parameters.
    schedule : Staleness
    rng : numpy.random.Generator or seed, optional
        Draws job durations for ``mode="delay"``.

    Returns
    -------
    StaleScoresState
        A new state (the input is not modified).

    Examples
    --------
    >>> st = stale_init(np.ones(2), [np.array([0]), np.array([1])])
    >>> st = stale_update(st, 0, lambda idx: np.full(idx.size, 5.0), staleness("period", period=3))
    >>> st.scores.tolist(), st.next_start.tolist()
    ([5.0, 5.0], [3, 3])
    """
    scores, computed_at = state.scores.copy(), state.computed_at.copy()
    pending, pending_at = state.pending.copy(), state.pending_at.copy()
    deliver_at, next_start = state.deliver_at.copy(), state.next_start.copy()
    W = next_start.size
    n_sent = state.n_sent

    def deliver(deliver_at, n_sent):
        # finished jobs write their scores to the store the master samples from
        done = deliver_at <= step
        if done.any():
            idx = np.flatnonzero(done[state.worker_of])
            scores[idx] = pending[idx]
            computed_at[idx] = pending_at[idx]
            deliver_at = np.where(done, _NEVER, deliver_at)
            n_sent += idx.size
        return deliver_at, n_sent

    # 1. jobs due now deliver before their worker starts the next one (that would overwrite `pending`)
    deliver_at, n_sent = deliver(deliver_at, n_sent)
    # 2. workers whose next job is due fetch theta_t and compute their shard's norms (one batched call)
    start = next_start <= step
    if start.any():
        idx = np.flatnonzero(start[state.worker_of])
        pending[idx] = norm_fn(idx)
        pending_at[idx] = step
        if schedule.mode == "period":
            dur = np.zeros(W, dtype=np.int64)
            rest = np.full(W, schedule.period, dtype=np.int64)
        else:
            dur = np.random.default_rng(rng).geometric(1.0 / schedule.mean_delay, size=W).astype(np.int64)
            rest = dur
        deliver_at = np.where(start, step + dur, deliver_at)
        next_start = np.where(start, step + rest, next_start)
    # 3. zero-duration jobs (mode "period") deliver at once
    deliver_at, n_sent = deliver(deliver_at, n_sent)
    return StaleScoresState(scores, computed_at, pending, pending_at, deliver_at, next_start, state.worker_of, n_sent)
