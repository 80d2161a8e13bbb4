r"""Compressed gradient descent on a parameter server (notes ``urq_delay.md`` A1, D1, D2).

``mode="workers"``: every worker sends :math:`Q_i(\nabla f_i(x_k))` (or what its error-feedback variant
sends), the server aggregates, optionally compresses what it broadcasts, and steps:

.. math:: x_{k+1} = x_k - \gamma\,C_\downarrow\Bigl(\mathrm{agg}_i\,Q_i(\nabla f_i(x_k))\Bigr).

``mode="aggregate"`` (D1, one compressed stream): :math:`x_{k+1} = x_k - \gamma\,Q(\nabla f(x_k))`.
"""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import aggregate as aggregate_by
from simcomm.optim._blocks import compress, error_feedback, full_gradient, local_gradients, scale_by_lr
from simcomm.optim._blocks import downlink as compress_downlink
from simcomm.optim._registry import method
from simcomm.optim.methods._components import AGGREGATE, COMPRESSOR, FEEDBACK, LR, as_compressor, as_feedback


@method("compressed_gd", params={
    "compressor": COMPRESSOR, "lr": LR,
    "mode": Param("str", default="workers", choices=("workers", "aggregate"),
                  doc="'workers': n compressed gradients averaged; 'aggregate': one compressed full gradient"),
    "feedback": FEEDBACK, "aggregate": AGGREGATE,
    "downlink": Param("str", default="none", doc="compressor of the server's broadcast ('none': exact)"),
    "downlink_feedback": Param("bool", default=False, doc="the server keeps error feedback for its broadcast"),
})
def build(*, compressor, lr, mode="workers", feedback="none", aggregate="mean", downlink="none",
          downlink_feedback=False):
    """Synchronous compressed gradient descent (uplink, optional error feedback and downlink compression)."""
    C = as_compressor(compressor)
    fb = as_feedback(feedback, C)
    if fb is not None and mode != "workers":
        raise UserError(f"feedback = {fb.name!r} needs mode = 'workers' (each worker keeps its own memory)")
    down = None if downlink is None or downlink == "none" else as_compressor(downlink, "downlink")
    if down is None and downlink_feedback:
        raise UserError("downlink_feedback = True needs a downlink compressor; pass downlink=")
    if mode == "workers":
        blocks = [local_gradients(), compress(C) if fb is None else error_feedback(fb, lr), aggregate_by(aggregate)]
    else:
        blocks = [full_gradient(), compress(C)]
    if down is not None:
        blocks.append(compress_downlink(down, downlink_feedback))
    blocks.append(scale_by_lr(lr))

    def bits(k, problem):
        return k * (problem.n if mode == "workers" else 1) * C.bits(problem.d)

    return descend(chain(*blocks), bits=bits, name="compressed_gd")

