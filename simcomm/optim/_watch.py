r"""What a parameter-server run records and watches: :class:`Monitor`, the start, the shared checks.

The default watch of :func:`simcomm.optim.run`. Divergence (a non-finite iterate, or
:math:`\|x_k - x^\star\|^2 > 10^{8}\max(\|x_0 - x^\star\|^2, 1)`) is recorded per replicate in
``Trace.diverged_at`` ("diverged at step t"), never raised: that replicate is frozen and its later
records are ``inf`` (the driver's rule and convention, :mod:`simcomm.optim._driver`).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import positive_int, step_size
from simcomm.compress import Compressor
from simcomm.optim._driver import Recorder, diverged
from simcomm.optim._trace import Trace

__all__ = ["Monitor", "start", "check_compressor", "check_lr", "check_steps", "BLOWUP"]

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
    r"""Records a parameter-server run of ``R`` replicates and applies the driver's divergence rule.

    The watched quantity is :math:`\|x_k - x^\star\|^2` at every step, limit ``BLOWUP`` times
    :math:`\max(\|x_0 - x^\star\|^2, 1)` (:func:`simcomm.optim._driver.diverged`); a diverged replicate
    is frozen at ``x0`` and its error-like records (``f_gap``, ``dist2``, ``grad2``) hold ``inf``
    (:mod:`simcomm.optim._driver`). Shared by :func:`compressed_gd`, the asynchronous optimisers and IAG.
    """

    def __init__(self, problem, x0: np.ndarray, steps: int, record_every: int, track_grad: bool,
                 stop_gap: float | None = None):
        self.p = problem
        self.stop_gap = stop_gap
        self.done = False
        self.R = x0.shape[0]
        self.rec = Recorder(steps, record_every, errors=("f_gap", "dist2", "grad2"), replicates=self.R)
        self.steps_ = self.rec.step
        self.bits = np.zeros(self.steps_.size)
        self.g2sum = np.zeros(self.R)
        self.track_grad = track_grad
        self.x0 = x0.copy()
        d0 = ((x0 - problem.x_star) ** 2).sum(axis=1)
        self.limit = BLOWUP * np.maximum(d0, 1.0)

    @property
    def alive(self) -> np.ndarray:
        """Per replicate, whether it has not diverged."""
        return self.rec.alive

    def check(self, k: int, x: np.ndarray, bits: float) -> np.ndarray:
        """Record iterate ``x_k`` (if scheduled), flag and freeze diverged replicates; returns ``x``."""
        with np.errstate(over="ignore", invalid="ignore"):
            dist2 = ((x - self.p.x_star) ** 2).sum(axis=1)
        bad = self.rec.diverge(k, diverged(dist2, self.limit))
        if bad.any():
            x[bad] = self.x0[bad]  # freeze: keeps later arithmetic finite
            if not self.alive.any():
                self.done = True  # nothing left to simulate
        recording = self.rec.due == k
        if self.track_grad or recording:
            g2 = (self.p.full_grad(x) ** 2).sum(axis=1)
            if self.track_grad and k < self.steps_[-1]:
                self.g2sum += g2
        if recording:
            a, j, r = self.alive, self.rec.j, self.rec.records
            r["dist2"][a, j] = dist2[a]
            r["f_gap"][a, j] = self.p.value(x[a]) - self.p.f_star if a.any() else []
            r["grad2"][a, j] = g2[a]
            self.bits[j] = bits
            if self.stop_gap is not None and np.all(~self.alive | (r["f_gap"][:, j] <= self.stop_gap)):
                self.done = True  # every replicate reached the target (or diverged): stop early
            self.rec.j += 1
        return x

    def trace(self, x: np.ndarray) -> Trace:
        j = self.rec.j  # records made (fewer than planned after an early stop)
        K = self.steps_[j - 1]
        g2m = np.where(self.alive, self.g2sum / max(K, 1), np.inf) if self.track_grad else np.full(self.R, np.nan)
        records = {name: self.rec.made(name) for name in ("f_gap", "dist2", "grad2")}
        records["bits"] = self.bits[:j]
        return Trace(self.steps_[:j], records, x, self.rec.diverged_at, {"grad2_mean": g2m})


def start(problem, x0, replicates: int) -> np.ndarray:
    """Initial iterates, shape (R, d)."""
    positive_int(replicates, "replicates")
    x0 = problem.x0 if x0 is None else np.asarray(x0, dtype=np.float64)
    if x0.shape[-1] != problem.d:
        raise UserError(f"x0 has dimension {x0.shape[-1]} but the problem has d = {problem.d}")
    return np.array(np.broadcast_to(x0, (replicates, problem.d)), dtype=np.float64)
