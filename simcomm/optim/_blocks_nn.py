r"""The building blocks of the model family: a network trained on data, each block a :class:`~simcomm.optim.Transform`.

The problem is a :class:`ModelProblem` (a model, its training data split among ``n`` workers, a batch
size, a test set); an iterate is ``(1, D)`` (one run: the replicate axis of :mod:`simcomm.optim._algebra`
has length 1), what the workers hold ``(1, n, D)``.

==============================  =======================================================================
block                           what it does
==============================  =======================================================================
:func:`minibatch_gradients`     starts a chain: every worker's minibatch gradient, ``(1, n, D)``
:func:`worker_feedback`         an error-feedback variant (:func:`simcomm.optim.error_feedback`) that sends
                                nothing on a non-finite step, and measures what the compressor lost
:func:`scale_by_schedule`       direction to displacement, :math:`-\eta_k u` on a schedule over the horizon
:func:`proposal`                importance sampling's proposal :math:`q` (fresh, smoothed or stale norms)
:func:`sampled_gradient`        the importance-weighted minibatch gradient drawn from :math:`q`
:func:`lookahead`               a method whose proposal for step ``k`` is formed as soon as :math:`x_k` is
:func:`fused_ef`                error feedback around a sparsifier in fused kernels (``ef_sgd``'s acceleration)
==============================  =======================================================================

The minibatches come from the problem's own stream (``batch_rng``: common random numbers across
methods), or the run's; every other draw is the run's, in chain order.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import array_namespace, backend_for
from simcomm.compress import Compressor
from simcomm.models import accuracy, gradient, loss, per_example_grad_norms, weighted_gradient, worker_gradients
from simcomm.optim._algebra import Method, Transform, stateless
from simcomm.optim._blocks import error_feedback
from simcomm.sampling import Staleness, norm_proposal, sample_minibatch, stale_init, stale_update, uniform_proposal

__all__ = ["ModelProblem", "minibatch_gradients", "worker_feedback", "scale_by_schedule", "proposal",
           "sampled_gradient", "lookahead", "fused_ef", "find", "EFState", "EFStepInfo", "MinibatchState",
           "FeedbackState", "FusedState", "ProposalState", "SampledState", "LookaheadState", "PROPOSALS"]

#: proposals of :func:`proposal`
PROPOSALS = ("uniform", "ideal", "smoothed", "stale")


class ModelProblem:
    r"""A model trained on ``(X, y)`` by ``n`` workers, each drawing minibatches from its own shard.

    The gradient oracle of the model family: the blocks and watches reach the model only through its
    methods (:meth:`minibatch_gradients`, :meth:`norms`, :meth:`weighted_gradient`, :meth:`full_gradient`,
    :meth:`loss_accuracy`), so another model (:class:`simcomm.optim.TorchProblem`: a PyTorch module)
    overrides them.

    Parameters
    ----------
    model : simcomm.models.MLP
    X, y : numpy.ndarray
        Training features ``(N, d)`` and labels ``(N,)``.
    n : int
        Workers.
    batch_size : int
        Examples per worker and step (drawn with replacement from its shard), or per update.
    shards : list of numpy.ndarray, optional
        The examples of each worker (:func:`simcomm.models.split_workers`; default: all of them, ``n = 1``).
    X_test, y_test : numpy.ndarray, optional
        Test set of the accuracy record.
    batch_rng : numpy.random.Generator or seed, optional
        The minibatches' stream (a Generator is continued, a seed starts one per run); ``None``: the run's.
    """

    #: :func:`simcomm.optim.local_gradients` draws this problem's minibatches (a model trained on data)
    draws_minibatches = True

    def __init__(self, model, X, y, *, n: int = 1, batch_size: int = 32, shards=None, X_test=None, y_test=None,
                 batch_rng=None):
        self.model, self.X, self.y = model, X, y
        self.n, self.d, self.batch_size = int(n), model.n_params, int(batch_size)
        self.X_test, self.y_test, self.batch_rng = X_test, y_test, batch_rng
        shards = [np.arange(X.shape[0])] if shards is None else shards
        self.lens = np.array([s.size for s in shards])
        self.pad = np.zeros((len(shards), int(self.lens.max())), dtype=np.int64)
        for i, s in enumerate(shards):
            self.pad[i, : s.size] = s
        self.rows = np.arange(len(shards))[:, None]

    def batch_indices(self, rng) -> np.ndarray:
        """The examples of every worker's next minibatch, ``(n, batch_size)``: one ``(n, B)`` array of uniforms."""
        pos = (rng.random((self.n, self.batch_size)) * self.lens[:, None]).astype(np.int64)
        return self.pad[self.rows, pos]

    def minibatch_gradients(self, rng, theta, out=None) -> np.ndarray:
        """Every worker's gradient at ``theta`` on ``batch_size`` examples drawn from its shard: ``(n, D)``."""
        bidx = self.batch_indices(rng)
        return worker_gradients(self.model, theta, self.X[bidx], self.y[bidx], out=out)

    def worker_minibatch_gradients(self, rng, thetas) -> np.ndarray:
        """Worker ``i``'s gradient at its own model ``thetas[i]`` on a minibatch of its shard: ``(n, D)``.

        The same uniforms as :meth:`minibatch_gradients` (equal models give its gradients exactly).
        """
        bidx = self.batch_indices(rng)
        return np.stack([worker_gradients(self.model, t, self.X[b][None], self.y[b][None])[0]
                         for t, b in zip(thetas, bidx)])

    def norms(self, theta, idx=None) -> np.ndarray:
        """Per-example gradient norms at ``theta`` (of the examples ``idx``, or all)."""
        X, y = (self.X, self.y) if idx is None else (self.X[idx], self.y[idx])
        return per_example_grad_norms(self.model, theta, X, y)

    def weighted_gradient(self, theta, idx, weights) -> np.ndarray:
        r"""Flat :math:`\sum_m w_m g_{I_m}` over the training examples ``idx`` (repeats allowed), ``(D,)``."""
        return weighted_gradient(self.model, theta, self.X[idx], self.y[idx], weights)

    def full_gradient(self, theta) -> np.ndarray:
        """Gradient of the mean training loss, ``(D,)``."""
        return gradient(self.model, theta, self.X, self.y)

    def loss_accuracy(self, theta) -> tuple[float, float]:
        """The mean training loss and the test accuracy (NaN without a test set)."""
        tl = loss(self.model, theta, self.X, self.y)
        return tl, accuracy(self.model, theta, self.X_test, self.y_test) if self.X_test is not None else math.nan


def find(state, attr: str):
    """The first (depth first) tuple in a chain's nested ``state`` that has the field ``attr``, or ``None``."""
    if isinstance(state, tuple):
        if attr in getattr(state, "_fields", ()):
            return state
        for s in state:
            hit = find(s, attr)
            if hit is not None:
                return hit
    return None


# --------------------------------------------------------------------------- minibatch gradients


class MinibatchState(NamedTuple):
    """The minibatches' stream and the last step's gradients ``(1, n, D)`` (what an observer reads)."""

    rng: np.random.Generator
    grads: np.ndarray | None


def _batch_stream(ctx) -> np.random.Generator:
    b = ctx.problem.batch_rng
    return ctx.rng if b is None else np.random.default_rng(b)


def minibatch_gradients() -> Transform:
    r"""Starts a chain: worker ``i``'s gradient on ``batch_size`` examples drawn from its shard, ``(1, n, D)``.

    One ``(n, B)`` array of uniforms per step from the problem's minibatch stream, one batched
    forward/backward pass for all workers (:func:`simcomm.models.worker_gradients`).
    """

    def init(x, ctx):
        return MinibatchState(_batch_stream(ctx), None)

    def update(u, state, x, ctx):
        G = ctx.problem.minibatch_gradients(state.rng, x[0])[None]
        return G, MinibatchState(state.rng, G)

    return Transform(init, update)


# --------------------------------------------------------------------------- error feedback


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


def diverged_info(xp, n: int, D: int) -> EFStepInfo:
    """What a step that sent nothing reports (non-finite input: selections are undefined on NaN)."""
    return EFStepInfo(xp.zeros((n, 0), dtype=np.int64), xp.zeros((n, 0)), xp.full(n, np.nan), xp.zeros(D))


def _ratio(res, tot, xp):
    if xp is np:
        return np.divide(res, tot, out=np.zeros(tot.shape), where=tot > 0)
    return xp.where(tot > 0, res / xp.where(tot > 0, tot, 1.0), 0.0)  # CuPy's ufuncs take no where=


class FeedbackState(NamedTuple):
    r"""The variant's state, and what the last step sent and lost.

    Attributes
    ----------
    memory : tuple
        The variant's own state (:data:`simcomm.compress.FEEDBACKS`).
    comp_error : numpy.ndarray, shape (1, n)
        :math:`\|p_i - \hat g_i\|^2/\|p_i\|^2` of the last step (0 where :math:`p_i = 0`), with
        :math:`p_i` what the worker had to send (gradient plus residual, for a variant with one) and
        :math:`\hat g_i` what the variant output; NaN: the step diverged.
    sent : numpy.ndarray, shape (1, n, D), or None
        What the variant output at the last step (``None``: nothing, the step diverged).
    """

    memory: Any
    comp_error: np.ndarray
    sent: np.ndarray | None


def worker_feedback(variant, lr: Callable[[int, int], float] | None = None) -> Transform:
    r"""Error feedback (any variant, through :func:`simcomm.optim.error_feedback`) on every worker's gradient.

    A step whose :math:`p_i` (the gradient plus the variant's residual, if it keeps one) is not finite
    sends nothing: the memory is kept and the outgoing update is 0, the step's ``comp_error`` is NaN (the
    watch records the divergence). A message that is not finite (an overflowing cast) is sent and its
    ``comp_error`` is NaN. ``lr(k, steps)`` is the step size of a variant that rescales by it.
    """
    guard = not variant.compressor.lossless  # a compressor that sends p whole takes any input

    def init(x, ctx):
        ef = error_feedback(variant, 1.0 if getattr(variant, "takes_lr", False) else None)
        return FeedbackState(ef.init(x, ctx), np.zeros((x.shape[0], ctx.problem.n)), None)

    def update(G, state, x, ctx):
        xp = array_namespace(G)
        mem = state.memory
        resid = getattr(mem, "residual", None)
        P = G if resid is None else resid + G
        tot = xp.einsum("...j,...j->...", P, P)
        if guard and not bool(xp.isfinite(tot).all()):
            return xp.zeros_like(G), FeedbackState(mem, xp.full(tot.shape, np.nan), None)
        step_lr = (lambda k: lr(k, ctx.steps)) if lr is not None else None
        ef = error_feedback(variant, step_lr if getattr(variant, "takes_lr", False) else None)
        u, mem = ef.update(G, mem, x, ctx)
        M = xp.asarray(u, dtype=P.dtype)
        E = mem.residual if resid is not None else P - M
        err = _ratio(xp.einsum("...j,...j->...", E, E), tot, xp)
        if not bool(xp.isfinite(M).all()):
            err = xp.full(tot.shape, np.nan)
        return M, FeedbackState(mem, err, M)

    return Transform(init, update)


def scale_by_schedule(lr: Callable[[int, int], float]) -> Transform:
    r"""Direction to displacement, :math:`-\eta_k u` with :math:`\eta_k` = ``lr(k, steps)`` (the run's horizon)."""

    def scale(u, x, ctx):
        g = lr(ctx.k, ctx.steps)
        return -(g * u) if ctx.alive is None else -(g * ctx.alive[:, None] * u)

    return stateless(scale)


# --------------------------------------------------------------------------- the fused EF step


def ef_fused_step(state: EFState, grads, lr: float, compressor: Compressor, rng,
                  out=None) -> tuple[EFState, EFStepInfo]:
    r"""One error-feedback step in fused kernels: a sparsifier (``sends_entries``), or a lossless compressor.

    ``out`` (not ``grads``) may receive :math:`P`; it may be ``state.residual`` itself, for a caller that
    drops the old state (the new memory then takes over its buffer); ``grads`` stays intact either way.
    The kernels are the active backend's (cupy's for a state on the device), as the compressor's are.
    """
    n, D = state.residual.shape
    xp = array_namespace(state.residual, grads)  # numpy, or cupy for a state on the device
    be = backend_for(None, state.residual, grads)
    if compressor.lossless:
        # everything is sent, p = g + e, and nothing is kept (a memory left by another compressor is flushed)
        if bool(state.residual.any()):
            upd = (grads + state.residual).mean(axis=0)
            return (EFState(state.x - lr * upd, xp.zeros_like(state.residual), state.step + 1),
                    EFStepInfo(None, None, xp.zeros(n), upd))
        upd = grads.mean(axis=0)
        return (EFState(state.x - lr * upd, state.residual, state.step + 1),
                EFStepInfo(None, None, xp.zeros(n), upd))
    def skipped():
        return EFState(state.x, state.residual, state.step + 1), diverged_info(xp, n, D)

    # Where the selection kernels take NaN rows without failing (numba), a non-finite g_i makes ||p_i||^2
    # non-finite, so the full pass over the gradients only runs when a norm is not finite (before any
    # uniform is drawn: a diverged step consumes no randomness either way). Other backends check first.
    lazy = be.NONFINITE_SAFE_SELECTION
    if not lazy and not bool(xp.isfinite(grads).all()):
        return skipped()
    r = compressor.top_set(D)
    if r is not None:
        # One kernel writes p_i = g_i + m_i (into a fresh array or ``out``: the state stays intact),
        # ||p_i||^2 and the top-r set (ascending, ties to the lower index: the selection of
        # simcomm.compress.top_k); the compressor picks its k of them.
        P, top, tot = be.ef_accumulate_topr(grads, state.residual, r, out=out)
        if lazy and not np.isfinite(tot).all() and not np.isfinite(grads).all():
            return skipped()
        idx = compressor.select_rows(P, rng=rng, top=top)
    else:
        if lazy and not np.isfinite(grads).all():
            return skipped()
        P = xp.ascontiguousarray(state.residual + grads)
        idx = compressor.select_rows(P, rng=rng)
        tot = xp.einsum("ij,ij->i", P, P)
    # m_i' = p_i - C(p_i): the sent entries of P are zeroed in place, so every coordinate of p_i ends up
    # in exactly one of the message and the residual, and p_i = C(p_i) + m_i' holds bit for bit; the
    # server averages the messages and steps (one fused call on the numba backend).
    vals, upd, theta = be.ef_send(P, idx, state.x, lr)
    sent = xp.einsum("ij,ij->i", vals, vals)
    err = _ratio(xp.maximum(tot - sent, 0.0), tot, xp)  # ||m_i'||^2, to rounding, without another pass over P
    if not bool(xp.isfinite(tot).all()):
        err = xp.full(n, np.nan)  # non-finite gradients or memory: the caller records divergence
    return EFState(theta, P, state.step + 1), EFStepInfo(idx, vals, err, upd)


class FusedState(NamedTuple):
    """:func:`fused_ef`'s state: the minibatch stream, the memory, the last step's gradients and report."""

    batches: np.random.Generator
    residual: np.ndarray
    grads: np.ndarray | None
    comp_error: np.ndarray
    info: EFStepInfo | None


def fused_ef(compressor: Compressor, lr: Callable[[int, int], float], *, reuse: bool = False) -> Method:
    r"""Error-feedback SGD around a sparsifier in fused kernels (``ef_sgd``'s acceleration).

    The composition it stands for is ``minibatch_gradients``, ``worker_feedback(ErrorFeedback(C))``,
    ``aggregate("mean")``, ``scale_by_schedule(lr)``: the same selections on the same uniforms
    (:func:`ef_fused_step`), the same memory; the server's sum runs in another order (to rounding).
    ``reuse``: the step writes the gradients and :math:`p` into the previous step's buffers (nothing
    outside may keep an old state).
    """
    def init(x, ctx):
        n, D = ctx.problem.n, ctx.problem.d
        return FusedState(_batch_stream(ctx), np.zeros((n, D)), np.empty((n, D)) if reuse else None,
                          np.zeros(n), None)

    def step(x, state, ctx):
        G = ctx.problem.minibatch_gradients(state.batches, x[0], out=state.grads if reuse else None)
        new, info = ef_fused_step(EFState(x[0], state.residual, ctx.k), G, lr(ctx.k, ctx.steps), compressor,
                                  ctx.rng, out=state.residual if reuse else None)
        return new.x[None], FusedState(state.batches, new.residual, G, info.comp_error, info)

    return Method(init, step, lambda k, p: k * compressor.bits(p.d), "ef_sgd/fused")


# --------------------------------------------------------------------------- importance sampling


class ProposalState(NamedTuple):
    """The workers' score store (stale proposal, else ``None``) and the proposal last formed."""

    scores: Any
    q: np.ndarray | None


def proposal(kind: str, smoothing: float = 0.0, staleness: Staleness = Staleness(), workers: int = 1,
             score_offset: int = 0) -> Transform:
    r"""Importance sampling's proposal over the ``N`` training examples at the iterate: ``(N,)``.

    ``"uniform"``: :math:`q_i = 1/N`; ``"ideal"``: :math:`q \propto \|g_i(\theta)\|`; ``"smoothed"``:
    :math:`q \propto \|g_i(\theta)\| + c`; ``"stale"``: :math:`q \propto \omega_i + c` from the scores of
    ``workers`` workers refreshed on ``staleness`` (:func:`simcomm.sampling.stale_update`; their iid
    shards drawn from the run's stream when the state is made).

    ``score_offset`` (negative control, ``"stale"`` only): example :math:`i` is drawn with the
    probability formed from the score of example :math:`i - s \bmod N`, as when the score store is
    indexed by example ids off by :math:`s`; the proposal is then unrelated to the gradients while the
    weights :math:`1/(N q_i)` keep the estimator unbiased. 0 (the default) changes nothing.
    """
    if kind not in PROPOSALS:
        raise UserError(f"unknown proposal '{kind}'; choose one of {', '.join(PROPOSALS)}")
    c = smoothing if kind in ("smoothed", "stale") else 0.0

    def init(x, ctx):
        if kind != "stale":
            return ProposalState(None, None)
        from simcomm.models import split_workers

        p = ctx.problem
        shards = split_workers(p.y, workers, split="iid", rng=ctx.rng)
        return ProposalState(stale_init(p.norms(x[0]), shards), None)

    def update(u, state, x, ctx):
        p, theta = ctx.problem, x[0]
        if kind == "uniform":
            q = uniform_proposal(p.X.shape[0])
        elif kind == "stale":
            scores = stale_update(state.scores, ctx.k, lambda idx: p.norms(theta, idx), staleness, rng=ctx.rng)
            q = norm_proposal(scores.scores, smoothing=c)
            if score_offset:
                q = np.roll(q, score_offset)  # the negative control: scores stored under the wrong ids
            return q, ProposalState(scores, q)
        else:
            q = norm_proposal(p.norms(theta), smoothing=c)
        return q, ProposalState(state.scores, q)

    return Transform(init, update)


class SampledState(NamedTuple):
    """The largest importance weight drawn at the last step (NaN before any)."""

    max_weight: float


def sampled_gradient(unweighted: bool = False) -> Transform:
    r"""From the proposal ``q``: draw :math:`I_1..I_M \sim q`, out :math:`\frac1M\sum_m w_m g_{I_m}`, ``(1, D)``.

    :math:`M` is the problem's ``batch_size``; :math:`w_m = 1/(N q_{I_m})` (unbiased); ``unweighted``:
    :math:`w_m = 1` (the negative control).
    """

    def init(x, ctx):
        return SampledState(math.nan)

    def update(q, state, x, ctx):
        p = ctx.problem
        batch_size = p.batch_size
        mb = sample_minibatch(q, batch_size, rng=ctx.rng)
        w = np.ones_like(mb.weights) if unweighted else mb.weights
        g = p.weighted_gradient(x[0], mb.idx, w / batch_size)
        return g[None], SampledState(mb.max_weight)

    return Transform(init, update)


class LookaheadState(NamedTuple):
    """``first``'s state and what it formed for the coming step (``None`` at a non-finite iterate); ``rest``'s state."""

    first: Any
    formed: Any
    rest: Any


def lookahead(first: Transform, rest: Transform, *, name: str = "method") -> Method:
    r"""The method :math:`x_{k+1} = x_k + u_k`, :math:`u_k` = ``rest`` of what ``first`` formed at :math:`x_k`.

    ``first`` (a proposal) runs as soon as its iterate exists, at the start and right after each update,
    so what it formed for step ``k`` is in the state when the watch checks :math:`x_k`. It does not run
    at an iterate that is not finite (the run stops there).
    """

    def init(x, ctx):
        formed, s = first.update(None, first.init(x, ctx), x, ctx)
        return LookaheadState(s, formed, rest.init(x, ctx))

    def step(x, state, ctx):
        u, rs = rest.update(state.formed, state.rest, x, ctx)
        x = x + u
        if not np.isfinite(x).all():
            return x, LookaheadState(state.first, None, rs)
        formed, fs = first.update(None, state.first, x, ctx._replace(k=ctx.k + 1))
        return x, LookaheadState(fs, formed, rs)

    return Method(init, step, name=name)
