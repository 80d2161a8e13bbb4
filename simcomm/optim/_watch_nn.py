r"""What a run of the model family records and watches: :class:`EFWatch`, :class:`ImportanceWatch`.

Watches of :func:`simcomm.optim.run` (its ``watch=``) for a :class:`~simcomm.optim._blocks_nn.ModelProblem`,
one run (an iterate of shape ``(1, D)``). Both record the full training loss and the test accuracy
(NaN without a test set) on the schedule of :func:`simcomm.optim._driver.record_steps`, and follow the
driver's convention once a run diverges: the step is recorded, error-like records hold ``inf`` and the
others NaN, the run stops, and ``diverged_at`` is ``[t]`` (:mod:`simcomm.optim._driver`). They read what
a step reported from the method's state (``sees_state``).

Error-feedback SGD (:class:`EFWatch`)
    A run has diverged at step ``t`` when that step sent nothing (its ``comp_error`` is NaN: non-finite
    :math:`p`), when a recorded loss is not finite, or (monitor off) when :math:`\theta_t` is not
    finite; the budget's end is then recorded as diverged too, so every compressor's trace ends at
    ``steps``.
Importance sampling (:class:`ImportanceWatch`)
    A run has diverged at step ``t > 0`` when :math:`\theta_t` is not finite (checked every step).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.optim._blocks_nn import EFState, EFStepInfo, diverged_info, find
from simcomm.optim._driver import DIVERGED_ERROR, DIVERGED_UNDEFINED, diverged, record_steps
from simcomm.optim._trace import Trace, diverged_at_step
from simcomm.sampling import trace_cov, trace_cov_ideal, uniform_proposal

__all__ = ["EFWatch", "ImportanceWatch", "BYTES_PER_FLOAT"]

#: Scores and gradients are float64.
BYTES_PER_FLOAT = 8


class _ModelWatch:
    """What both watches share: the schedule, the loss and accuracy, the stop, the final parameters."""

    sees_state = True

    def __init__(self, problem, steps: int, record_every: int):
        self.p, self.steps = problem, int(steps)
        self.due = set(record_steps(steps, record_every).tolist()) if record_every else set()
        self.done = False
        self.diverged = None
        self.alive = np.ones(1, bool)

    def loss_accuracy(self, theta):
        return self.p.loss_accuracy(theta)

    def stop(self, k: int) -> None:
        self.diverged, self.done = k, True
        self.alive = np.zeros(1, bool)


class EFWatch(_ModelWatch):
    r"""Records error-feedback SGD: ``train_loss``, ``test_accuracy``, ``bits`` (one worker's, cumulative).

    ``record_every = 0`` turns the monitor off (no loss is evaluated; only a divergence is recorded).
    ``keep``: hold the last two states, for :meth:`observed` (an observer of every step).
    ``info``: ``bits_per_step`` and ``comp_error`` (per step, the workers' mean). ``bits_per_step = None``
    records the loop's own count instead (a method whose messages vary by step: local updates send at
    synchronisations only).
    """

    def __init__(self, problem, steps: int, record_every: int, bits_per_step, *, keep: bool = False):
        super().__init__(problem, steps, record_every)
        self.every, self.bps, self.keep = int(record_every), bits_per_step, keep
        self.ev: list = []
        self.sent: dict = {}  # step -> bits the loop counted (bits_per_step = None)
        self.cerr = np.full(self.steps, np.nan)
        self.seen = self.now = None

    def check(self, k, x, bits, state):
        if self.keep:
            self.seen, self.now = self.now, (x, state)
        if self.bps is None:
            self.sent[k] = float(bits)
        if k == 0:
            if self.every:
                self.ev.append((0, *self.loss_accuracy(x[0])))
            return x
        fb = find(state, "comp_error")
        self.cerr[k - 1] = float(fb.comp_error.mean()) if fb is not None else 0.0
        # p is not finite, or (monitor off) theta is not: stop here, the loss is recorded as diverged
        if math.isnan(self.cerr[k - 1]) or (not self.every and not np.isfinite(x).all()):
            self.ev.append((k, math.inf, math.nan))
            self.stop(k)
        elif k in self.due:
            self.ev.append((k, *self.loss_accuracy(x[0])))
            if not math.isfinite(self.ev[-1][1]):
                self.stop(k)
        return x

    def observed(self, k: int):
        """What step ``k`` did, as :func:`simcomm.optim.ef_sgd`'s observer sees it: ``(G, old, new, info)``."""
        (x0, s0), (x1, s1) = self.seen, self.now
        if isinstance(s1, tuple) and hasattr(s1, "info"):  # the fused path reports itself
            return s1.grads, EFState(x0[0], s0.residual, k), EFState(x1[0], s1.residual, k + 1), s1.info
        G = find(s1, "grads").grads[0]
        n, D = G.shape
        fb0, fb1 = find(s0, "comp_error"), find(s1, "comp_error")
        res0, res1 = (np.zeros((n, D)),) * 2 if fb1 is None else (_residual(fb0), _residual(fb1))
        if fb1 is None:  # lossless: p = g is sent whole, nothing is kept
            info = EFStepInfo(None, None, np.zeros(n), G.mean(axis=0))
        elif fb1.sent is None:
            info = diverged_info(np, n, D)
        else:
            info = EFStepInfo(None, None, fb1.comp_error[0], fb1.sent[0].mean(axis=0), fb1.sent[0])
        return G, EFState(x0[0], res0, k), EFState(x1[0], res1, k + 1), info

    def trace(self, x):
        if self.diverged is not None and self.ev[-1][0] != self.steps:
            self.ev.append((self.steps, math.inf, math.nan))  # every compressor's trace ends at the budget
        step = np.array([e[0] for e in self.ev], dtype=np.int64)
        records = {"train_loss": np.array([e[1] for e in self.ev]), "test_accuracy": np.array([e[2] for e in self.ev]),
                   "bits": step * self.bps if self.bps is not None else
                   np.array([self.sent.get(int(k), np.nan) for k in step])}
        return Trace(step, records, x[0], diverged_at_step(self.diverged),
                     {"bits_per_step": self.bps, "comp_error": self.cerr})


def _residual(fb):
    """A worker memory ``(n, D)`` of a feedback state: the residual, or the variant's first array."""
    m = fb.memory
    return (m.residual if hasattr(m, "residual") else m[0])[0]


#: importance sampling's error-like records (``inf`` once diverged; the others NaN)
_IS_ERRORS = ("train_loss", "trace_cov_uniform", "trace_cov_ideal", "trace_cov_actual")
_IS_RECORDS = ("train_loss", "test_accuracy", "max_weight", "mean_staleness", "score_bytes", "trace_cov_uniform",
               "trace_cov_ideal", "trace_cov_actual")


class ImportanceWatch(_ModelWatch):
    r"""Records importance-sampled SGD (the records of :func:`simcomm.optim.importance_sgd`).

    At a recorded step ``t``: the loss and accuracy, the exact Tr Cov of the minibatch estimator of
    ``batch_size`` draws at :math:`\theta_t` under the uniform, the ideal (fresh norms) and the actual
    proposal (the one formed for step ``t``), the largest importance weight drawn since the previous
    record, the mean staleness of the scores and the bytes of scores sent.
    """

    def __init__(self, problem, steps: int, record_every: int):
        super().__init__(problem, steps, record_every)
        self.rec = {k: [] for k in ("step", *_IS_RECORDS)}
        self.wmax = np.nan  # no draw before step 0

    def check(self, k, x, bits, state):
        if k > 0:
            self.wmax = np.fmax(self.wmax, find(state, "max_weight").max_weight)
            if diverged(x, np.inf).any():
                for name in self.rec:
                    self.rec[name].append(k if name == "step" else self.wmax if name == "max_weight" else
                                          DIVERGED_ERROR if name in _IS_ERRORS else DIVERGED_UNDEFINED)
                self.stop(k)
                return x
        if k in self.due:
            self.record(k, x[0], find(state, "scores"))
            self.wmax = np.nan
        return x

    def record(self, t, theta, ps):
        p, B, st = self.p, self.p.batch_size, ps.scores
        fresh = p.norms(theta)
        gbar = p.full_gradient(theta)
        tl, ta = self.loss_accuracy(theta)
        q_unif = uniform_proposal(p.X.shape[0])
        values = {"step": t, "train_loss": tl, "test_accuracy": ta,
                  "trace_cov_uniform": trace_cov(fresh, q_unif, gbar, batch_size=B),
                  "trace_cov_ideal": trace_cov_ideal(fresh, gbar, batch_size=B),
                  "trace_cov_actual": np.nan if ps.q is None else trace_cov(fresh, ps.q, gbar, batch_size=B),
                  "max_weight": self.wmax,
                  "mean_staleness": float(np.mean(t - st.computed_at)) if st is not None else 0.0,
                  "score_bytes": float(st.n_sent * BYTES_PER_FLOAT) if st is not None else 0.0}
        for name, v in values.items():
            self.rec[name].append(v)

    def trace(self, x):
        r = {k: np.asarray(v, dtype=float) for k, v in self.rec.items()}
        return Trace(r.pop("step").astype(np.int64), r, x[0], diverged_at_step(self.diverged))
