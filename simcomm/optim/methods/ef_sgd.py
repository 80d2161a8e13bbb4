r"""Error-feedback SGD of a model on data (rtopk.md section (d)).

Every worker draws a minibatch from its shard, adds its memory, sends what the compressor keeps
(:math:`p_i = g_i + m_i`, :math:`\hat g_i = C(p_i)`, :math:`m_i' = p_i - \hat g_i`, or any other variant
of :data:`simcomm.compress.FEEDBACKS`), and the server steps on the mean on a schedule:
:math:`\theta_{t+1} = \theta_t - \eta_t \frac1n\sum_i \hat g_i`. A lossless compressor sends
:math:`g_i` whole and keeps no memory. Around a sparsifier that sends entries of :math:`p` unscaled
(``sends_entries``: top-k, unscaled rand-k, rTop-k) plain EF runs in fused kernels (:func:`fused`, the
same selections).
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.compress import FEEDBACKS, ErrorFeedback
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import aggregate, compress
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
})
def build(*, compressor, lr, schedule="constant", feedback="ef"):
    """Error-feedback SGD of a model: minibatch gradients, error feedback, the server's mean, a schedule."""
    C = as_compressor(compressor)
    fb = as_feedback(feedback, C)
    rate = _rate(lr, schedule)
    send = compress(C) if C.lossless and isinstance(fb, ErrorFeedback) else worker_feedback(fb, rate)
    blocks = chain(minibatch_gradients(), send, aggregate("mean"), scale_by_schedule(rate))
    return descend(blocks, bits=lambda k, p: k * C.bits(p.d), name="ef_sgd")


@accelerate("ef_sgd")
def fused(problem, method, steps, *, rng, x0, on_step, watch, **_):
    """Plain EF around a sparsifier (``sends_entries``) on a :class:`ModelProblem`, in fused kernels."""
    from simcomm.optim._ef_sgd import _check_compressor
    from simcomm.optim._loop import run
    from simcomm.optim._watch_nn import EFWatch

    s = method.settings
    C = as_compressor(s["compressor"])
    fb = as_feedback(s["feedback"], C)
    if not (isinstance(problem, ModelProblem) and isinstance(watch, EFWatch) and C.sends_entries
            and type(fb) is ErrorFeedback and fb.compressor == C):
        return None
    m = fused_ef(_check_compressor(C, problem.d), _rate(s["lr"], s["schedule"]), reuse=not watch.keep)
    return run(problem, m, steps, rng=rng, x0=x0, on_step=on_step, watch=watch)
