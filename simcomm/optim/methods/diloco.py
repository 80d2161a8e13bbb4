r"""DiLoCo (Douillard et al. 2023 [R]) and Streaming DiLoCo (Douillard et al. 2025 [R]) as one composition.

Inner: every worker runs ``H`` steps of SGD, heavy-ball momentum or Adam on its own :math:`f_i`. Outer:
the pseudo-gradients :math:`\Delta_i = x - x_i`, compressed by any registered compressor (with any
error-feedback variant or none), averaged, and an outer SGD or Nesterov step in the convention of
``torch.optim.SGD(nesterov=True)``. ``fragments``, ``overlap`` and ``alpha`` make it streaming
(:mod:`simcomm.optim._local`); their defaults give DiLoCo.
"""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm.optim._algebra import chain
from simcomm.optim._blocks import adam, aggregate, compress, error_feedback, local_gradients, momentum, scale_by_lr
from simcomm.optim._local import local_updates
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, FEEDBACK, as_compressor, as_feedback

INNER = ("sgd", "momentum", "adam")
OUTER = ("sgd", "nesterov")
PARAMS = {
    "H": Param("int", default=8, low=1, doc="inner steps per round"),
    "inner": Param("str", default="sgd", choices=INNER, doc="the workers' optimiser"),
    "lr": Param("float", low=0.0, low_open=True, doc="inner step size"),
    "inner_beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="inner momentum (momentum)"),
    "outer": Param("str", default="nesterov", choices=OUTER, doc="the server's optimiser on pseudo-gradients"),
    "outer_lr": Param("float", default=0.7, low=0.0, low_open=True, doc="outer step size"),
    "outer_momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="outer Nesterov momentum"),
    "compressor": COMPRESSOR, "feedback": FEEDBACK,
    "fragments": Param("int", default=1, low=1, doc="model fragments synchronised in turn (streaming)"),
    "overlap": Param("int", default=0, low=0, doc="inner steps before a worker merges the outer update"),
    "alpha": Param("float", default=0.0, low=0.0, high=1.0, high_open=True, doc="local weight in the merge"),
}


def make(*, H, inner, lr, inner_beta, outer, outer_lr, outer_momentum, compressor, feedback, fragments, overlap,
         alpha, name):
    """The DiLoCo composition from its settings (shared by ``diloco`` and ``streaming_diloco``)."""
    C = as_compressor(compressor)
    fb = as_feedback(feedback, C)
    if inner == "momentum":
        inner_dir = [momentum(inner_beta)]
    elif inner == "adam":
        inner_dir = [adam()]
    else:
        inner_dir = []
    if outer == "sgd" and outer_momentum != PARAMS["outer_momentum"].default:
        raise UserError("outer_momentum applies to outer = 'nesterov' only; drop it or set outer = 'nesterov'")
    outer_dir = [momentum(outer_momentum, nesterov=True)] if outer == "nesterov" else []
    send = compress(C) if fb is None else error_feedback(fb, outer_lr)
    return local_updates(H, chain(local_gradients(), *inner_dir, scale_by_lr(lr)),
                         chain(send, aggregate("mean"), *outer_dir, scale_by_lr(outer_lr)), fragments=fragments,
                         overlap=overlap, alpha=alpha, bits_per_value=C.bits, name=name)


@method("diloco", params=PARAMS)
def build(*, lr, H=8, inner="sgd", inner_beta=0.9, outer="nesterov", outer_lr=0.7, outer_momentum=0.9,
          compressor="none", feedback="none", fragments=1, overlap=0, alpha=0.0):
    """DiLoCo: H inner steps per worker, an outer (Nesterov) step on the averaged pseudo-gradients."""
    return make(**{k: v for k, v in locals().items()}, name="diloco")
