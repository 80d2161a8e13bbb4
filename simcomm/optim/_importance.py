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

:func:`importance_sgd` is the named method ``"importance_sgd"`` (:mod:`simcomm.optim.methods.importance_sgd`)
run by :func:`simcomm.optim.run` with the model family's watch (:class:`simcomm.optim._watch_nn.ImportanceWatch`).

Communication: a worker sends one float (8 bytes, float64) per example scored, where a data-parallel
worker would send a full gradient (``8 * n_params`` bytes) per minibatch.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import finite_array, integer, one_of, positive_int, real, step_size
from simcomm.models import MLP, TorchModel, init_params
from simcomm.optim._blocks_nn import PROPOSALS, ModelProblem
from simcomm.optim._loop import run
from simcomm.optim._registry import build_method
from simcomm.optim._torch_problem import TorchProblem
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nn import BYTES_PER_FLOAT, ImportanceWatch
from simcomm.sampling import Staleness

__all__ = ["importance_sgd", "PROPOSALS", "BYTES_PER_FLOAT", "bytes_per_example"]


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
    score_offset: int = 0,
) -> Trace:
    r"""Train ``model`` on ``(X, y)`` with importance-sampled (or uniform) SGD.

    Parameters
    ----------
    model : MLP or simcomm.models.TorchModel
        A numpy MLP, or a PyTorch module (trained through :class:`simcomm.optim.TorchProblem`).
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
    score_offset : int, default 0
        Negative control (``stale``): example :math:`i` is drawn with the probability formed from the
        score of example :math:`i - s \bmod N` (a score store indexed by ids off by :math:`s`): an
        unbiased estimator whose proposal no longer follows the gradients. 0 changes nothing.

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
    integer(score_offset, "score_offset", low=0, hint="0 uses every score for its own example")
    torch_model = isinstance(model, TorchModel)  # a PyTorch module keeps its inputs' dtype
    X = finite_array(X, "X (training features)", dtype=None if torch_model else np.float64)
    y = np.asarray(y)
    integer(batch_size, "batch_size", low=1, high=X.shape[0], hint="at most the training set size")
    if proposal == "stale" and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise UserError(f"n = {n!r} must be a positive integer")
    rng = np.random.default_rng(rng)
    if x0 is None:
        x0 = model.params() if torch_model else init_params(model, rng=rng)
    theta = np.array(x0, dtype=np.float64)
    problem = (TorchProblem if torch_model else ModelProblem)(model, X, y, batch_size=batch_size, X_test=X_test,
                                                              y_test=y_test)
    method = build_method("importance_sgd", lr=lr, proposal=proposal, smoothing=smoothing,
                          workers=n if proposal == "stale" else 1,
                          staleness=staleness, unweighted=unweighted, score_offset=score_offset)
    return run(problem, method, steps, rng=rng, x0=theta[None], on_step=on_step,
               watch=ImportanceWatch(problem, steps, record_every))
