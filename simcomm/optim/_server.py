r"""Compressed gradient descent on a parameter server, synchronous (notes ``urq_delay.md`` A1, D1, D2).

``mode="workers"`` (A1 with the average normalisation of D2): every worker sends an independently
quantized local gradient and the master averages,

.. math:: x_{k+1} = x_k - \gamma\,\frac1n\sum_{i=1}^n Q_i(\nabla f_i(x_k)).

``mode="aggregate"`` (D1, one compressed stream): :math:`x_{k+1} = x_k - \gamma\,Q(\nabla f(x_k))`.

All optimisers in this package are pure functions ``run(...) -> Trace``, vectorised over ``R``
replicates (and over workers); the only loop is over steps. Divergence (a non-finite iterate, or
:math:`\|x_k - x^\star\|^2 > 10^{8}\max(\|x_0 - x^\star\|^2, 1)`) is recorded per replicate in
``Trace.diverged_at`` ("diverged at step t"), never raised: that replicate is frozen and its later
records are ``inf`` (the driver's rule and convention, :mod:`simcomm.optim._driver`).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import one_of, positive_int, step_size
from simcomm.compress import Compressor
from simcomm.optim._driver import Recorder, diverged, drive
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


def compressed_gd(problem, compressor, *, lr: float, steps: int, mode: str = "workers", x0=None,
                  replicates: int = 1, record_every: int = 1, track_grad: bool = False, stop_gap=None, rng=None,
                  backend=None, on_step=None, feedback=None, aggregate="mean", downlink=None,
                  downlink_feedback: bool = False) -> Trace:
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
    on_step : callable, optional
        ``on_step(k)`` after update ``k`` (:func:`simcomm.optim._driver.drive`; e.g. a progress bar).
    feedback : str or error-feedback variant, optional
        A name in :data:`simcomm.compress.FEEDBACKS` (``"ef"``, ``"ef21"``, ``"ef21_sgdm"``, ``"diana"``,
        ``"marina"``, ...; built around ``compressor`` at its default settings) or a built variant: every
        worker keeps its own state and sends what the variant sends; the server aggregates the variant's
        outputs. ``mode="workers"`` only. ``bits`` counts ``compressor.bits(d)`` per worker and step
        (MARINA's full-gradient rounds, probability ``p``, send ``32 d`` bits instead: not counted).
    aggregate : str or aggregator
        How the server combines the workers' outputs: ``"mean"`` or ``"majority_vote"`` (signSGD with
        majority vote), a name in :data:`simcomm.compress.AGGREGATORS`.
    downlink : Compressor, optional
        Bidirectional compression: the server compresses the aggregated direction ``u`` before it
        broadcasts it, :math:`x_{k+1} = x_k - \gamma\,C_{\downarrow}(u_k)` (``None``: sent exactly).
    downlink_feedback : bool
        Keep the server's own error-feedback memory for the downlink: :math:`p = u + e_s`,
        :math:`x_{k+1} = x_k - \gamma C_{\downarrow}(p)`, :math:`e_s' = p - C_{\downarrow}(p)` (as in
        DoubleSqueeze, Tang et al. 2019 [R]).

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
    from simcomm.compress import aggregator_from_name, feedback_from_name

    compressor = check_compressor(compressor)
    agg = aggregator_from_name(aggregate)
    if isinstance(feedback, str):
        feedback = feedback_from_name(feedback, compressor)
    if feedback is not None and mode != "workers":
        raise UserError(f"feedback = {feedback.name!r} needs mode = 'workers' (each worker keeps its own memory)")
    lr = check_lr(lr)
    steps = check_steps(steps)
    one_of(mode, ("workers", "aggregate"), "mode")
    rng = np.random.default_rng(rng)
    x = start(problem, x0, replicates)
    R, n, d = x.shape[0], problem.n, problem.d
    mon = Monitor(problem, x, steps, record_every, track_grad, stop_gap)
    per_step = (n if mode == "workers" else 1) * compressor.bits(d)
    idx = np.tile(np.arange(n), R)
    fb_state = None if feedback is None else feedback.init((R, n, d))
    fb_kw = {"lr": lr} if getattr(feedback, "takes_lr", False) else {}
    if downlink is not None:
        check_compressor(downlink)
    elif downlink_feedback:
        raise UserError("downlink_feedback = True needs a downlink compressor; pass downlink=")
    srv_e = np.zeros((R, d))

    def advance(k):
        nonlocal x, fb_state, srv_e
        if mode == "workers":
            G = problem.grad(np.repeat(x, n, axis=0), idx)  # (R*n, d): worker i's gradient at x_k
            if feedback is None:
                out = compressor.apply(G, rng=rng, backend=backend).reshape(R, n, d)
            else:  # each worker's variant output (EF: its message; EF21, DIANA, MARINA: its estimate)
                out, fb_state = feedback.apply(G.reshape(R, n, d), fb_state, rng=rng, backend=backend, **fb_kw)
            U = agg.aggregate(out, axis=1)
        else:
            U = compressor.apply(problem.full_grad(x), rng=rng, backend=backend)
        if downlink is not None:  # server -> workers: the broadcast direction is compressed too
            P = U + srv_e if downlink_feedback else U
            U = np.asarray(downlink.apply(P, rng=rng, backend=backend), dtype=np.float64)
            if downlink_feedback:
                srv_e = P - U
        x = x - lr * mon.alive[:, None] * U

    def check(k):
        nonlocal x
        x = mon.check(k, x, k * per_step)
        return mon.done

    drive(steps, advance, check, on_step=on_step)
    return mon.trace(x)
