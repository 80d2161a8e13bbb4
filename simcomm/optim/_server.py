r"""Compressed gradient descent on a parameter server, synchronous (notes ``urq_delay.md`` A1, D1, D2).

``mode="workers"`` (A1 with the average normalisation of D2): every worker sends an independently
quantized local gradient and the master averages,

.. math:: x_{k+1} = x_k - \gamma\,\frac1n\sum_{i=1}^n Q_i(\nabla f_i(x_k)).

``mode="aggregate"`` (D1, one compressed stream): :math:`x_{k+1} = x_k - \gamma\,Q(\nabla f(x_k))`.

All optimisers in this package are pure functions ``run(...) -> Trace``, vectorised over ``R``
replicates (and over workers); the only loop is over steps. Divergence (a non-finite iterate, or
:math:`\|x_k - x^\star\|^2 > 10^{8}\max(\|x_0 - x^\star\|^2, 1)`) is recorded per replicate in
``Trace.diverged_at`` ("diverged at step t"), never raised: that replicate is frozen and its later
records are ``inf``.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import one_of, positive_int, step_size
from simcomm.compress import Compressor
from simcomm.optim._trace import Trace

__all__ = ["compressed_gd", "BLOWUP"]

#: a replicate has diverged when its squared distance to x* exceeds BLOWUP * max(initial, 1)
BLOWUP = 1e8


def check_compressor(compressor) -> Compressor:
    """``compressor`` if it is a :class:`~simcomm.compress.Compressor`, else a one-line error."""
    if not isinstance(compressor, Compressor):
        raise UserError(f"compressor = {compressor!r} is not a simcomm.compress.Compressor; pass e.g. QSGD(s) or "
                        "Identity(), or build one from a name with simcomm.compress.compressor_from_name")
    return compressor


def check_lr(lr) -> float:
    """Validate a step size (``lr > 0``, finite)."""
    return step_size(lr)


def check_steps(steps) -> int:
    """Validate a number of steps (integer >= 1)."""
    return positive_int(steps, "steps")


class Monitor:
    """Records a run and detects divergence (shared by every optimiser of this package)."""

    def __init__(self, problem, x0: np.ndarray, steps: int, record_every: int, track_grad: bool,
                 stop_gap: float | None = None):
        self.p = problem
        self.stop_gap = stop_gap
        self.done = False
        self.steps_ = np.unique(np.r_[np.arange(0, steps + 1, max(int(record_every), 1)), steps])
        self.R = x0.shape[0]
        T = self.steps_.size
        self.f_gap = np.full((self.R, T), np.inf)
        self.dist2 = np.full((self.R, T), np.inf)
        self.grad2 = np.full((self.R, T), np.inf)
        self.bits = np.zeros(T)
        self.g2sum = np.zeros(self.R)
        self.track_grad = track_grad
        self.diverged_at = np.full(self.R, -1)
        self.alive = np.ones(self.R, bool)
        self.x0 = x0.copy()
        d0 = ((x0 - problem.x_star) ** 2).sum(axis=1)
        self.limit = BLOWUP * np.maximum(d0, 1.0)
        self._j = 0

    def check(self, k: int, x: np.ndarray, bits: float) -> np.ndarray:
        """Record iterate ``x_k`` (if scheduled), flag and freeze diverged replicates; returns ``x``."""
        with np.errstate(over="ignore", invalid="ignore"):
            dist2 = ((x - self.p.x_star) ** 2).sum(axis=1)
        bad = self.alive & ~(dist2 <= self.limit)  # catches NaN too
        if bad.any():
            self.diverged_at[bad] = k
            self.alive &= ~bad
            x[bad] = self.x0[bad]  # freeze: keeps later arithmetic finite
            if not self.alive.any():
                self.done = True  # nothing left to simulate
        recording = self._j < self.steps_.size and self.steps_[self._j] == k
        if self.track_grad or recording:
            g2 = (self.p.full_grad(x) ** 2).sum(axis=1)
            if self.track_grad and k < self.steps_[-1]:
                self.g2sum += g2
        if recording:
            a = self.alive
            self.dist2[a, self._j] = dist2[a]
            self.f_gap[a, self._j] = self.p.value(x[a]) - self.p.f_star if a.any() else []
            self.grad2[a, self._j] = g2[a]
            self.bits[self._j] = bits
            if self.stop_gap is not None and np.all(~self.alive | (self.f_gap[:, self._j] <= self.stop_gap)):
                self.done = True  # every replicate reached the target (or diverged): stop early
            self._j += 1
        return x

    def trace(self, x: np.ndarray) -> Trace:
        j = self._j  # records made (fewer than planned after an early stop)
        K = self.steps_[j - 1]
        g2m = np.where(self.alive, self.g2sum / max(K, 1), np.inf) if self.track_grad else np.full(self.R, np.nan)
        records = {"f_gap": self.f_gap[:, :j], "dist2": self.dist2[:, :j], "grad2": self.grad2[:, :j],
                   "bits": self.bits[:j]}
        return Trace(self.steps_[:j], records, x, self.diverged_at, {"grad2_mean": g2m})


def start(problem, x0, replicates: int) -> np.ndarray:
    """Initial iterates, shape (R, d)."""
    positive_int(replicates, "replicates")
    x0 = problem.x0 if x0 is None else np.asarray(x0, dtype=np.float64)
    if x0.shape[-1] != problem.d:
        raise UserError(f"x0 has dimension {x0.shape[-1]} but the problem has d = {problem.d}")
    return np.array(np.broadcast_to(x0, (replicates, problem.d)), dtype=np.float64)


def compressed_gd(problem, compressor, *, lr: float, steps: int, mode: str = "workers", x0=None,
                  replicates: int = 1, record_every: int = 1, track_grad: bool = False, stop_gap=None, rng=None,
                  backend=None) -> Trace:
    r"""Synchronous compressed gradient descent on a parameter server.

    Parameters
    ----------
    problem : simcomm.models.Problem
        :math:`f = \frac1n\sum_i f_i` with known :math:`x^\star`, :math:`f^\star`.
    compressor : simcomm.compress.Compressor
        The URQ applied to each message (:class:`~simcomm.compress.Identity` for exact gradients).
    lr : float
        Step size, ``> 0``.
    steps : int
        Number of iterations ``K``.
    mode : {"workers", "aggregate"}
        ``"workers"``: n quantized local gradients, averaged (A1/D2); ``"aggregate"``: one quantized
        full gradient per step (D1).
    x0 : array_like, optional
        Start (default ``problem.x0``), broadcast to every replicate.
    replicates : int
        Independent runs simulated together.
    record_every : int
        Record the trace every this many steps (and at 0 and ``steps``).
    track_grad : bool
        Accumulate :math:`\|\nabla f(x_k)\|^2` at every step (for ``info["grad2_mean"]``).
    stop_gap : float, optional
        Stop at the first recorded step where every replicate has :math:`f(x_k) - f^\star \le` ``stop_gap``
        (or has diverged); the trace then ends there.
    rng : numpy.random.Generator or seed, optional
    backend : str, optional
        Backend of the compressor kernels.

    Returns
    -------
    Trace
        ``records``: ``f_gap`` :math:`f(x_k) - f^\star`, ``dist2`` :math:`\|x_k - x^\star\|^2` and
        ``grad2`` :math:`\|\nabla f(x_k)\|^2`, each ``(R, T)``; ``bits`` ``(T,)``, the cumulative uplink
        bits (all workers) sent before iterate ``k`` was formed, per replicate. ``x``: final iterates
        ``(R, d)`` (``x0`` for diverged replicates). ``info["grad2_mean"]`` ``(R,)``:
        :math:`\frac1K\sum_{k<K}\|\nabla f(x_k)\|^2` over every step with ``track_grad`` (``nan``
        without). Ends early (at the step of the last divergence) when every replicate has diverged.

    Examples
    --------
    >>> from simcomm.models import quadratic
    >>> from simcomm.compress import Identity
    >>> p = quadratic(4, 10, L=1.0, mu=0.5, rng=0)
    >>> tr = compressed_gd(p, Identity(), lr=1.0, steps=30)
    >>> bool(tr.dist2[0, -1] < 1e-8 * tr.dist2[0, 0]), tr.notes()
    (True, [''])
    """
    compressor = check_compressor(compressor)
    lr = check_lr(lr)
    steps = check_steps(steps)
    one_of(mode, ("workers", "aggregate"), "mode")
    rng = np.random.default_rng(rng)
    x = start(problem, x0, replicates)
    R, n, d = x.shape[0], problem.n, problem.d
    mon = Monitor(problem, x, steps, record_every, track_grad, stop_gap)
    per_step = (n if mode == "workers" else 1) * compressor.bits(d)
    idx = np.tile(np.arange(n), R)
    x = mon.check(0, x, 0.0)
    for k in range(steps):
        if mode == "workers":
            G = problem.grad(np.repeat(x, n, axis=0), idx)  # (R*n, d): worker i's gradient at x_k
            U = compressor.apply(G, rng=rng, backend=backend).reshape(R, n, d).mean(axis=1)
        else:
            U = compressor.apply(problem.full_grad(x), rng=rng, backend=backend)
        x = x - lr * mon.alive[:, None] * U
        x = mon.check(k + 1, x, (k + 1) * per_step)
        if mon.done:
            break
    return mon.trace(x)
