r"""Local SGD / FedAvg: every worker takes ``H`` SGD steps on its own :math:`f_i`, the server averages the models.

:math:`x_{i} \leftarrow x_i - \eta \nabla f_i(x_i)` for ``H`` steps from the server's model, then
:math:`x \leftarrow \frac1n\sum_i x_i` (the outer SGD step of size 1 on the pseudo-gradients of
:mod:`simcomm.optim._local`), optionally with the pseudo-gradients compressed (with error feedback).
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain
from simcomm.optim._blocks import aggregate, compress, error_feedback, local_gradients, scale_by_lr
from simcomm.optim._local import local_updates
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, FEEDBACK, LR, as_compressor, as_feedback


@method("local_sgd", params={
    "lr": LR, "H": Param("int", default=4, low=1, doc="inner steps per round"),
    "compressor": COMPRESSOR, "feedback": FEEDBACK,
})
def build(*, lr, H=4, compressor="none", feedback="none"):
    """Local SGD (FedAvg): H local SGD steps per worker, then the server averages the models."""
    C = as_compressor(compressor)
    fb = as_feedback(feedback, C)
    send = compress(C) if fb is None else error_feedback(fb, 1.0)
    outer = chain(send, aggregate("mean"), scale_by_lr(1.0))
    return local_updates(H, chain(local_gradients(), scale_by_lr(lr)), outer, bits_per_value=C.bits, name="local_sgd")
