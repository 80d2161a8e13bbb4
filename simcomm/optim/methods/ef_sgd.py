r"""Error-feedback SGD of a model on data (rtopk.md section (d)).

Every worker draws a minibatch from its shard, adds its memory, sends what the compressor keeps
(:math:`p_i = g_i + m_i`, :math:`\hat g_i = C(p_i)`, :math:`m_i' = p_i - \hat g_i`, or any other variant
of :data:`simcomm.compress.FEEDBACKS`), and the server steps on the mean on a schedule:
:math:`\theta_{t+1} = \theta_t - \eta_t \frac1n\sum_i \hat g_i`. A lossless compressor sends
:math:`g_i` whole and keeps no memory. Around a sparsifier that sends entries of :math:`p` unscaled
(``sends_entries``: top-k, unscaled rand-k, rTop-k) plain EF runs in fused kernels (:func:`fused`, the
same selections).

``momentum = beta > 0`` is worker-side heavy-ball momentum before the compression, as in the rTop-k
paper's and DGC's momentum SGD with error feedback: every worker keeps its own buffer
:math:`u_i' = \beta u_i + g_i` (:func:`simcomm.optim.momentum`, PyTorch's convention) and feeds
:math:`u_i'` to the error feedback in place of :math:`g_i` (:math:`p_i = u_i' + m_i`); the server steps on
the mean of what is sent. Uncompressed, this is momentum SGD on the mean gradient (the buffers are
linear). ``momentum = 0`` is the chain without the buffer (plain EF-SGD, the same draws and results).
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.compress import FEEDBACKS, ErrorFeedback
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import aggregate, compress
from simcomm.optim._blocks import momentum as heavy_ball
from simcomm.optim._blocks_nn import ModelProblem, fused_ef, minibatch_gradients, scale_by_schedule, worker_feedback
from simcomm.optim._registry import accelerate, method
from simcomm.optim._schedules import EF_SCHEDULES, ef_learning_rate
from simcomm.optim.methods._components import COMPRESSOR, LR, as_compressor, as_feedback


def _rate(lr, schedule):
    from simcomm.optim._ef_sgd import _check_lr

    return lambda k, steps: _check_lr(ef_learning_rate(lr, k, steps, schedule))


@method("ef_sgd", family="model", params={
    "compressor": COMPRESSOR, "lr": LR,
    "schedule": Param("str", default="constant", choices=EF_SCHEDULES, doc="step-size schedule over the horizon"),
    "feedback": Param("str", default="ef", choices=tuple(FEEDBACKS), doc="error feedback around the compressor"),
    "momentum": Param("float", default=0.0, low=0.0, high=1.0, high_open=True,
                      doc="worker-side heavy-ball momentum on the gradient before error feedback (0 = none)"),
})
def build(*, compressor, lr, schedule="constant", feedback="ef", momentum=0.0):
    """Error-feedback SGD of a model: minibatch gradients, error feedback, the server's mean, a schedule."""
    C = as_compressor(compressor)
    fb = as_feedback(feedback, C)
    rate = _rate(lr, schedule)
    send = compress(C) if C.lossless and isinstance(fb, ErrorFeedback) else worker_feedback(fb, rate)
    grads = (minibatch_gradients(),) if momentum == 0 else (minibatch_gradients(), heavy_ball(momentum))
    blocks = chain(*grads, send, aggregate("mean"), scale_by_schedule(rate))
    return descend(blocks, bits=lambda k, p: k * C.bits(p.d), name="ef_sgd")


@accelerate("ef_sgd")
def fused(problem, method, steps, *, rng, x0, on_step, watch, **_):
    """Plain EF (no momentum) around a sparsifier (``sends_entries``) on a :class:`ModelProblem`, in fused kernels."""
    from simcomm.optim._ef_sgd import _check_compressor
    from simcomm.optim._loop import run
    from simcomm.optim._watch_nn import EFWatch

    s = method.settings
    C = as_compressor(s["compressor"])
    fb = as_feedback(s["feedback"], C)
    if not (isinstance(problem, ModelProblem) and isinstance(watch, EFWatch) and C.sends_entries
            and type(fb) is ErrorFeedback and fb.compressor == C and s.get("momentum", 0.0) == 0):
        return None
    m = fused_ef(_check_compressor(C, problem.d), _rate(s["lr"], s["schedule"]), reuse=not watch.keep)
    return run(problem, m, steps, rng=rng, x0=x0, on_step=on_step, watch=watch)
