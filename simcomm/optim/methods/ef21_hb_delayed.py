r"""EF21 with heavy-ball momentum under bounded delays: a method made of existing blocks only.

Worker :math:`i` reads :math:`x_{k-\tau_i(k)}` (:math:`\tau_i(k) \le \min(\tau, k)`, a delay model),
keeps the EF21 estimate of its gradient and sends the compressed change,

.. math:: h_i' = h_i + C\bigl(\nabla f_i(x_{k-\tau_i(k)}) - h_i\bigr), \qquad
          v' = \beta v + \frac1n\sum_i h_i', \qquad x_{k+1} = x_k - \gamma v'.

No paper is claimed for this combination: it is the worked example of a new method (one file).
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.compress import EF21
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import (
    DELAY_MODELS,
    aggregate,
    delayed,
    error_feedback,
    local_gradients,
    momentum,
    scale_by_lr,
)
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, LR, as_compressor


@method("ef21_hb_delayed", params={
    "compressor": COMPRESSOR, "lr": LR,
    "beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="heavy-ball momentum"),
    "tau": Param("int", default=0, low=0, doc="delay bound"),
    "delay": Param("str", default="constant", choices=DELAY_MODELS, doc="delay model"),
})
def build(*, compressor, lr, beta=0.9, tau=0, delay="constant"):
    """EF21 workers reading delayed iterates, heavy-ball momentum at the server."""
    C = as_compressor(compressor)
    blocks = chain(delayed(local_gradients(), tau, delay), error_feedback(EF21(C)), aggregate("mean"),
                   momentum(beta), scale_by_lr(lr))
    return descend(blocks, bits=lambda k, p: k * p.n * C.bits(p.d), name="ef21_hb_delayed")
