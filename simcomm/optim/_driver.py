r"""The rules every training run follows: the record schedule, the divergence rule, the ``on_step`` hook.

Every method of :mod:`simcomm.optim` is stepped by the one loop :func:`simcomm.optim.run`, which
drives it with :func:`drive`: an ``advance(k)`` (the method's step from :math:`x_k` to :math:`x_{k+1}`)
and a ``check(k)`` (the run's watch at :math:`x_k`: watch for divergence, record if :math:`k` is on
the schedule, say whether to stop), ``on_step(k)`` after each update (the CLI's progress bar,
:func:`progress`, is one such callback). The watches (:mod:`simcomm.optim._watch`,
:mod:`simcomm.optim._watch_nodes`, :mod:`simcomm.optim._watch_nn`) hold their records in a
:class:`Recorder` and follow the same three rules:

Schedule
    Records are taken at :math:`k = 0, r, 2r, \dots` and at the last step (:func:`record_steps`).

Divergence (one rule)
    A run (a replicate) has diverged at the first checked step where a watched quantity is not
    finite or exceeds its limit, ``~isfinite(v) | (v > limit)`` (:func:`diverged`). Each watch
    states what it watches and its limit (``BLOWUP`` times a starting scale). A diverged run is
    never an exception: ``diverged_at`` records the step, and the watch freezes the replicate
    (replicates simulated together) or stops the run (a single run).

Values after a divergence (one convention)
    From the step a run diverged on, its *error-like* records (losses, gaps, distances, squared
    norms, consensus errors, variances: quantities that grow without bound as a run diverges) hold
    ``inf``, and every other record (accuracies, weights, staleness, byte counts it never sent) holds
    ``NaN``. So a diverged run sorts after every converged one, and a quantity that has no value is
    not mistaken for a number (:func:`simcomm.optim.ef_sgd`: ``train_loss`` inf, ``test_accuracy``
    NaN). The decentralized methods whose records were published with ``NaN`` after a divergence
    (gradient tracking, push-sum, CHOCO: :mod:`simcomm.optim._watch_nodes`) keep that fill.

Examples
--------
>>> record_steps(10, 4).tolist()
[0, 4, 8, 10]
>>> diverged(np.array([1.0, np.nan, 5.0]), 4.0).tolist()
[False, True, True]
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["drive", "Recorder", "record_steps", "diverged", "progress", "DIVERGED_ERROR", "DIVERGED_UNDEFINED"]

#: What an error-like record of a diverged run holds (module doc).
DIVERGED_ERROR = np.inf
#: What any other record of a diverged run holds (module doc).
DIVERGED_UNDEFINED = np.nan


def record_steps(steps: int, every: int) -> np.ndarray:
    """The recorded steps: ``0, every, 2 every, ...`` and ``steps`` (``every < 1`` counts as 1)."""
    return np.unique(np.r_[np.arange(0, int(steps) + 1, max(int(every), 1)), int(steps)])


def diverged(value, limit) -> np.ndarray:
    """The divergence rule: ``value`` is not finite or exceeds ``limit`` (elementwise, NaN included)."""
    value = np.asarray(value)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(value) | (value > limit)


class Recorder:
    """Records of ``R`` replicates on a schedule, filled per the module's convention after a divergence.

    Parameters
    ----------
    steps, every : int
        The schedule (:func:`record_steps`).
    errors : sequence of str
        Error-like records (``inf`` once diverged).
    others : sequence of str
        Other per-replicate records (``NaN`` once diverged).
    replicates : int
    """

    def __init__(self, steps: int, every: int, errors=(), others=(), replicates: int = 1):
        self.step = record_steps(steps, every)
        self.R = int(replicates)
        T = self.step.size
        self.records = {name: np.full((self.R, T), DIVERGED_ERROR) for name in errors}
        self.records.update({name: np.full((self.R, T), DIVERGED_UNDEFINED) for name in others})
        self.diverged_at = np.full(self.R, -1)
        self.alive = np.ones(self.R, bool)
        self.j = 0  # records made

    @property
    def due(self) -> int | None:
        """The step of the next record, or ``None`` once every record is made."""
        return int(self.step[self.j]) if self.j < self.step.size else None

    def diverge(self, k: int, bad) -> np.ndarray:
        """Mark the live replicates in ``bad`` as diverged at step ``k``; returns those newly marked."""
        new = self.alive & np.asarray(bad, bool)
        self.diverged_at[new] = k
        self.alive &= ~new
        return new

    def put(self, values: dict) -> None:
        """Store one record per name for the live replicates (the diverged keep their fill) and advance."""
        a = self.alive
        for name, v in values.items():
            self.records[name][a, self.j] = np.asarray(v)[a] if np.ndim(v) else v
        self.j += 1

    def made(self, name: str, single: bool = False) -> np.ndarray:
        """Record ``name`` up to the records made; ``single`` drops the replicate axis (``R = 1``)."""
        v = self.records[name][:, : self.j]
        return v[0] if single else v


def drive(steps: int, advance: Callable[[int], None], check: Callable[[int], bool], *,
          on_step: Callable[[int], None] | None = None) -> int:
    """The loop of :func:`simcomm.optim.run`: ``check(0)``, then ``advance(k)``, ``check(k + 1)``, ``on_step(k)``.

    Parameters
    ----------
    steps : int
        Updates to run.
    advance : callable
        ``advance(k)``: the update from :math:`x_k` to :math:`x_{k+1}`.
    check : callable
        ``check(k) -> bool``: divergence and records at :math:`x_k`; ``True`` after an update stops
        the run (every replicate diverged, or a target was reached). The start is checked and
        recorded but always updated from: a run makes at least one update.
    on_step : callable, optional
        ``on_step(k)`` after update ``k`` has been checked (progress bars, observers).

    Returns
    -------
    int
        The number of updates made.

    Examples
    --------
    >>> seen = []
    >>> drive(5, seen.append, lambda k: k in (0, 3))
    3
    >>> seen
    [0, 1, 2]
    """
    check(0)
    for k in range(int(steps)):
        advance(k)
        stop = check(k + 1)
        if on_step is not None:
            on_step(k)
        if stop:
            return k + 1
    return int(steps)


class progress:
    """A rich progress bar as an ``on_step`` callback (a context manager; the CLI's, never the library's).

    Examples
    --------
    >>> with progress(3, "demo", enabled=False) as bar:
    ...     drive(3, lambda k: None, lambda k: False, on_step=bar)
    3
    """

    def __init__(self, total: int, label: str, enabled: bool = True):
        self.total, self.label, self.enabled = int(total), label, enabled
        self._bar = self._task = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def __call__(self, k: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        return False
