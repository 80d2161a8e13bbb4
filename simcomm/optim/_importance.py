r"""Importance-sampled SGD (ISSGD) with a master and W score-computing workers, against uniform SGD.

Master step :math:`t` (papers/importance_sampling.md (d)):

1. the workers advance (:func:`simcomm.sampling.stale_update`): some deliver gradient norms of their
   shard computed at older parameters;
2. :math:`q \propto \omega + c` from the scores in the store (fresh norms for ``"ideal"``/``"smoothed"``,
   all equal for ``"uniform"``);
3. draw :math:`I_1..I_M \sim q` with replacement, :math:`\hat g = \frac1M\sum_m g_{I_m}/(N q_{I_m})` (unbiased);
4. :math:`\theta_{t+1} = \theta_t - \eta \hat g`.

Every ``record_every`` steps the monitor records the training loss, test accuracy, and the exact
:math:`\mathrm{Tr\,Cov}` of the minibatch estimator under the uniform, the ideal (fresh norms) and the
actual proposal at :math:`\theta_t`.

Communication: a worker sends one float (8 bytes, float64) per example scored, where a data-parallel
worker would send a full gradient (``8 * n_params`` bytes) per minibatch.
"""

from __future__ import annotations

import numpy as np

from simcomm._validate import integer, one_of, positive_int, real, step_size
from simcomm.models._data import split_workers
from simcomm.models._nn import MLP, accuracy, gradient, init_params, loss, per_example_grad_norms, weighted_gradient
from simcomm.optim._driver import DIVERGED_ERROR, DIVERGED_UNDEFINED, diverged, drive, record_steps
from simcomm.optim._trace import Trace, diverged_at_step
from simcomm.sampling._proposals import norm_proposal, sample_minibatch, uniform_proposal
from simcomm.sampling._stale import Staleness, stale_init, stale_update
from simcomm.sampling._variance import trace_cov, trace_cov_ideal

__all__ = ["importance_sgd", "PROPOSALS", "BYTES_PER_FLOAT", "bytes_per_example"]

#: Proposals accepted by :func:`importance_sgd`.
PROPOSALS = ("uniform", "ideal", "smoothed", "stale")
#: Scores and gradients are float64.
BYTES_PER_FLOAT = 8
#: Error-like records (``inf`` once diverged; the others NaN: :mod:`simcomm.optim._driver`).
_ERRORS = ("loss", "unif", "ideal", "actual")


def bytes_per_example(model: MLP) -> dict:
    """Bytes a worker sends per example: one score versus one full gradient.

    Examples
    --------
    >>> from simcomm.models import mlp
    >>> bytes_per_example(mlp((64, 64, 10)))
    {'score': 8, 'gradient': 38480}
    """
    return {"score": BYTES_PER_FLOAT, "gradient": BYTES_PER_FLOAT * model.n_params}


def importance_sgd(
    model: MLP,
    X,
    y,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    proposal: str = "stale",
    smoothing: float = 0.0,
    n: int = 1,
    staleness: Staleness = Staleness(),
    record_every: int = 10,
    X_test=None,
    y_test=None,
    x0=None,
    rng=None,
    on_step=None,
    unweighted: bool = False,
) -> Trace:
    r"""Train ``model`` on ``(X, y)`` with importance-sampled (or uniform) SGD.

    Parameters
    ----------
    model : MLP
    X, y : numpy.ndarray
        Training features ``(N, d)`` and labels ``(N,)``.
    steps : int
        Master updates.
    lr : float
        Step size :math:`\eta > 0` (the same for every proposal, for a fair comparison).
    batch_size : int
        :math:`M` draws per update, ``1 <= M <= N``.
    proposal : {"uniform", "ideal", "smoothed", "stale"}
        ``uniform`` = plain SGD; ``ideal`` = fresh norms every step; ``smoothed`` = fresh norms + ``smoothing``;
        ``stale`` = norms from ``n`` workers refreshed by ``staleness``, + ``smoothing``.
    smoothing : float, default 0.0
        Additive constant :math:`c \ge 0` (``smoothed`` and ``stale``).
    n : int, default 1
        Workers computing scores (``stale``); the examples are split iid among them.
    staleness : Staleness
        Refresh schedule of the workers (``stale``), see :func:`simcomm.sampling.staleness`.
    record_every : int, default 10
        Monitor period in steps (the last step is always evaluated).
    X_test, y_test : numpy.ndarray, optional
        Held-out data for test accuracy (NaN when absent).
    x0 : numpy.ndarray, optional
        Initial parameters; default :func:`simcomm.models.init_params` from ``rng``.
    rng : numpy.random.Generator or seed, optional
    on_step : callable, optional
        ``on_step(t)`` after master step ``t`` (:func:`simcomm.optim._driver.drive`; e.g. a progress bar).
    unweighted : bool, default False
        Negative control: drop the importance weights :math:`1/(N q_I)` (every draw weighs 1), a
        biased estimator unless ``q`` is uniform; SGD then descends the ``q``-weighted loss.

    Returns
    -------
    Trace
        One entry per evaluation step. ``step``: master steps at which the monitor ran (0 = before any
        update). ``records``: ``train_loss``, ``test_accuracy`` (full training loss and test accuracy at
        ``theta_step``), ``max_weight`` (largest importance weight drawn since the previous evaluation),
        ``mean_staleness`` (mean over examples of ``step`` minus the step of the parameters its score
        was computed at), ``score_bytes`` (cumulative bytes of scores sent by all workers), and
        ``trace_cov_uniform``, ``trace_cov_ideal``, ``trace_cov_actual`` (exact Tr Cov of the minibatch
        estimator at ``theta_step`` under the uniform, the ideal and the actual proposal, the one the
        master samples from at that step). ``x``: the final parameters. ``diverged_at``: ``[t]`` when
        the parameters stopped being finite after step ``t - 1`` (the last record, at ``t``, then holds
        ``inf`` for the loss and the three Tr Cov, NaN for the rest: the driver's convention), else ``[-1]``.

    Examples
    --------
    >>> from simcomm.models import mlp
    >>> rng = np.random.default_rng(0); X = rng.standard_normal((50, 4)); y = (X[:, 0] > 0).astype(int)
    >>> tr = importance_sgd(mlp((4, 2)), X, y, steps=20, lr=0.5, batch_size=5, proposal="ideal", rng=1)
    >>> bool(tr.train_loss[-1] < tr.train_loss[0]), tr.step.tolist()
    (True, [0, 10, 20])
    """
    one_of(proposal, PROPOSALS, "proposal")
    positive_int(steps, "steps")
    positive_int(record_every, "record_every")
    step_size(lr)
    real(smoothing, "smoothing", low=0.0, hint="it is added to every score")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n_train = X.shape[0]
    integer(batch_size, "batch_size", low=1, high=n_train, hint="at most the training set size")
    rng = np.random.default_rng(rng)
    theta = init_params(model, rng=rng) if x0 is None else np.array(x0, dtype=np.float64)

    def norms_at(th, idx=None):
        return per_example_grad_norms(model, th, X if idx is None else X[idx], y if idx is None else y[idx])

    c = smoothing if proposal in ("smoothed", "stale") else 0.0
    state = None
    if proposal == "stale":
        shards = split_workers(y, n, split="iid", rng=rng)
        state = stale_init(norms_at(theta), shards)
    q_unif = uniform_proposal(n_train)

    rec = {k: [] for k in ("step", "loss", "acc", "unif", "ideal", "actual", "wmax", "stale", "bytes")}
    wmax = np.nan  # no draw before step 0

    def monitor(t, q, st):
        fresh = norms_at(theta)
        gbar = gradient(model, theta, X, y)
        rec["step"].append(t)
        rec["loss"].append(loss(model, theta, X, y))
        rec["acc"].append(accuracy(model, theta, X_test, y_test) if X_test is not None else np.nan)
        rec["unif"].append(trace_cov(fresh, q_unif, gbar, batch_size=batch_size))
        rec["ideal"].append(trace_cov_ideal(fresh, gbar, batch_size=batch_size))
        rec["actual"].append(np.nan if q is None else trace_cov(fresh, q, gbar, batch_size=batch_size))
        rec["wmax"].append(wmax)
        rec["stale"].append(float(np.mean(t - st.computed_at)) if st is not None else 0.0)
        rec["bytes"].append(float(st.n_sent * BYTES_PER_FLOAT) if st is not None else 0.0)

    def current_q(t):
        nonlocal state
        if proposal == "uniform":
            return q_unif
        if proposal == "stale":
            state = stale_update(state, t, lambda idx: norms_at(theta, idx), staleness, rng=rng)
            return norm_proposal(state.scores, smoothing=c)
        return norm_proposal(norms_at(theta), smoothing=c)

    q_now = None  # the proposal of the coming step, formed when its start is checked
    due = record_steps(steps, record_every)
    diverged_step = None

    def check(t):
        # the driver's rule on theta, after every update; then the proposal the master samples from at t
        # (and monitors with, when t is recorded)
        nonlocal q_now, wmax, diverged_step
        if t > 0 and diverged(theta, np.inf).any():
            diverged_step = t
            # recorded at t (on the schedule or not): error-like records inf, the others NaN (driver convention)
            for k in rec:
                rec[k].append(t if k == "step" else (wmax if k == "wmax" else
                                                     (DIVERGED_ERROR if k in _ERRORS else DIVERGED_UNDEFINED)))
            return True
        q_now = current_q(t)
        if t in due_set:
            monitor(t, q_now, state)
            wmax = np.nan
        return False

    def advance(t):
        nonlocal theta, wmax
        mb = sample_minibatch(q_now, batch_size, rng=rng)
        wmax = np.fmax(wmax, mb.max_weight)
        w = np.ones_like(mb.weights) if unweighted else mb.weights
        theta = theta - lr * weighted_gradient(model, theta, X[mb.idx], y[mb.idx], w / batch_size)

    due_set = set(due.tolist())
    drive(steps, advance, check, on_step=on_step)
    r = {k: np.asarray(v, dtype=float) for k, v in rec.items()}
    records = {"train_loss": r["loss"], "test_accuracy": r["acc"], "max_weight": r["wmax"],
               "mean_staleness": r["stale"], "score_bytes": r["bytes"], "trace_cov_uniform": r["unif"],
               "trace_cov_ideal": r["ideal"], "trace_cov_actual": r["actual"]}
    return Trace(r["step"].astype(np.int64), records, theta, diverged_at_step(diverged_step))
