r"""Compressed gradient descent on a parameter server, synchronous (notes ``urq_delay.md`` A1, D1, D2).

``mode="workers"`` (A1 with the average normalisation of D2): every worker sends an independently
quantized local gradient and the master averages,

.. math:: x_{k+1} = x_k - \gamma\,\frac1n\sum_{i=1}^n Q_i(\nabla f_i(x_k)).

``mode="aggregate"`` (D1, one compressed stream): :math:`x_{k+1} = x_k - \gamma\,Q(\nabla f(x_k))`.

:func:`compressed_gd` is the named method ``"compressed_gd"`` (:mod:`simcomm.optim.methods.compressed_gd`)
run by :func:`simcomm.optim.run`, with the validation a user's call needs.
"""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm._validate import one_of
from simcomm.backends import entry_point
from simcomm.optim._loop import run
from simcomm.optim._trace import Trace
from simcomm.optim._watch import BLOWUP, check_compressor, check_lr, check_steps, start

__all__ = ["compressed_gd", "BLOWUP", "start"]


@entry_point
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
    from simcomm.optim._registry import build_method

    compressor = check_compressor(compressor)
    aggregator_from_name(aggregate)
    if isinstance(feedback, str):
        feedback = feedback_from_name(feedback, compressor)
    if feedback is not None and mode != "workers":
        raise UserError(f"feedback = {feedback.name!r} needs mode = 'workers' (each worker keeps its own memory)")
    lr = check_lr(lr)
    steps = check_steps(steps)
    one_of(mode, ("workers", "aggregate"), "mode")
    if downlink is not None:
        check_compressor(downlink)
    elif downlink_feedback:
        raise UserError("downlink_feedback = True needs a downlink compressor; pass downlink=")
    m = build_method("compressed_gd", compressor=compressor, lr=lr, mode=mode, feedback=feedback, aggregate=aggregate,
                     downlink=downlink, downlink_feedback=downlink_feedback)
    return run(problem, m, steps, rng=rng, x0=x0, replicates=replicates, record_every=record_every,
               track_grad=track_grad, stop_gap=stop_gap, on_step=on_step)
